//! The fused decode graphs: a mat-vec (MUL_MAT or MUL_MAT_ID) followed by the element-wise
//! nodes real models put after it, which ggml's Vulkan host runs as one dispatch where fusion is
//! on (the mat-vec shader's epilogue) and node by node otherwise: MUL_MAT + ADD (+ ADD) (a bias,
//! then a residual), MUL_MAT_ID + MUL (expert weights), MUL_MAT_ID + ADD_ID (+ MUL) (gpt-oss's
//! per-expert bias). This module holds the graphs' names, the exact reference of the nodes, their
//! error model, and the unfused twin that tells a fused-only fault from the ops' own.
//!
//! ## Error model
//!
//! The mat-vec result x̂ is within B of the exact x (the mat-vec model). Each node then does one
//! f32 operation with an operand c as stored, correctly rounded (u = 2⁻²⁴):
//!
//! * **add** c: |fl(x̂ + c) − (x + c)| ≤ |x̂ − x| + u·|x̂ + c| ≤ B + u·(|x + c| + B);
//! * **multiply** by w: |fl(x̂·w) − x·w| ≤ |w|·B + u·|x̂·w| ≤ |w|·B + u·|w|·(|x| + B).
//!
//! Both orders ggml may run are this arithmetic: fused, the epilogue adds to (or scales) the f32
//! accumulator of the reduction before the single store; unfused, the mat-vec stores the same f32
//! value and the ADD/MUL/ADD_ID shaders load it, operate in f32 and store. Neither reassociates
//! (SPIR-V gives no licence to), and an add after a multiply never follows a multiply here, so no
//! fused multiply-add can form across nodes.
//!
//! Flushing (Vulkan lets f32 subnormals flush to zero, in and out of any operation) adds to each
//! add 3·2⁻¹²⁶ (x̂, c and the result flushed), to each multiply 2⁻¹²⁶·(1 + |w|) (x̂ and the
//! result), and where w itself is subnormal its whole product, |w|·(|x| + B).
//!
//! Specials: the composition runs in f64 on the mat-vec's expected values, so NaN and ±∞ go
//! through each node as IEEE f32 arithmetic takes them (∞ + c = ∞, ∞ − ∞ = NaN, ∞·0 = NaN), and a
//! NaN bound (an element the mat-vec model leaves undefined) stays NaN. Where |x + c| + B or
//! |x·w| + B' reaches f32's range, the node may overflow in some order: the element is undefined.

use vkdiff_gpu::runners::KernelRun;

use crate::model::compare::Verdict;
use crate::model::driver::{Ctx, GraphOp, OwnRun};
use crate::model::outcome::Outcome;
use crate::model::tolerance::U32;

/// The exact value and bound of an element after an f32 add of `c` (see the module notes).
pub fn add(x: f64, bound: f64, c: f32) -> (f64, f64) {
    let c = c as f64;
    let v = x + c;
    if !v.is_finite() {
        // NaN or ±∞ every order shares (judged exactly), or undefined as before.
        return (v, bound);
    }
    let tiny = f32::MIN_POSITIVE as f64;
    let b = bound + U32 * (v.abs() + bound) + 3.0 * tiny;
    (v, overflowed(v, b))
}

/// The exact value and bound of an element after an f32 multiply by `w` (see the module notes).
pub fn mul(x: f64, bound: f64, w: f32) -> (f64, f64) {
    let tiny = f32::MIN_POSITIVE as f64;
    let w = w as f64;
    let v = x * w;
    if !v.is_finite() {
        return (v, bound);
    }
    let mut b = w.abs() * bound + U32 * w.abs() * (x.abs() + bound) + tiny * (1.0 + w.abs());
    if w != 0.0 && w.abs() < tiny {
        b += w.abs() * (x.abs() + bound);
    }
    (v, overflowed(v, b))
}

/// NaN (undefined) where a finite result may reach f32's range within its bound.
fn overflowed(v: f64, b: f64) -> f64 {
    if v.is_finite() && v.abs() + b >= f32::MAX as f64 {
        f64::NAN
    } else {
        b
    }
}

/// The float path's (expected, bounds) and the q8_1 candidate, kept apart before their join.
pub type Apart = (Vec<f64>, Vec<f64>, Vec<(f64, f64)>);

/// The verdict of both mat-vec kernels: `run` against the joined (expected, bounds), and, where
/// the integer-dot model was joined (`apart`), which model a passing result fits alone.
pub fn verdict(
    run: &KernelRun,
    expected: &[f64],
    bounds: &[f64],
    index: impl Fn(usize) -> [usize; 4],
    apart: Option<&Apart>,
) -> Result<Verdict, String> {
    let mut verdict = crate::model::compare::compare(&run.values, expected, bounds, index, |_| "")?;
    verdict.overrun = run.overrun;
    if let (Some((e, b, c)), true) = (apart, verdict.passed()) {
        verdict.fits = crate::model::cases::intdot::fit_of(&run.values, e, b, c);
    }
    Ok(verdict)
}

/// Runs `op` (a fused graph) through `ctx` and judges it with `judge`; where it fails, runs its
/// unfused twin (each node its own graph compute) and judges that under the same bounds. A
/// passing twin makes the failure fused-only ([`Verdict::fused_only`], the finding's kind says
/// "fused only"); a failing twin leaves the plain ops' finding, with the twin noted.
pub fn run_and_judge(
    ctx: &mut Ctx,
    dst_ne: [usize; 4],
    op: &GraphOp,
    own: &mut OwnRun<'_>,
    judge: impl Fn(&KernelRun) -> Result<Verdict, String>,
) -> Outcome {
    let run = match ctx.run_op(dst_ne, op, &mut *own) {
        Ok(r) => r,
        Err(outcome) => return outcome,
    };
    let mut verdict = match judge(&run) {
        Ok(v) => v,
        Err(e) => return Outcome::Error(e),
    };
    if verdict.passed() {
        return Outcome::from_verdict(verdict, run.gpu_ns);
    }
    let Some(twin) = op.unfused() else {
        return Outcome::from_verdict(verdict, run.gpu_ns);
    };
    verdict.twin = match ctx.run_op(dst_ne, &twin, &mut *own).map(|r| judge(&r)) {
        Ok(Ok(t)) if t.passed() => {
            verdict.fused_only = true;
            format!(
                "fused only: the unfused twin ({} node by node, each its own graph) passes the same bounds",
                op.name()
            )
        }
        Ok(Ok(t)) => format!(
            "the unfused twin ({} node by node) fails too ({} of {} elements): not the fusion's fault",
            op.name(),
            t.failed,
            t.elements
        ),
        Ok(Err(e)) => format!("the unfused twin could not be judged: {e}"),
        Err(o) => format!("the unfused twin gave no result: {}", o.explain().trim()),
    };
    Outcome::from_verdict(verdict, run.gpu_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_node_adds_its_rounding_and_keeps_specials() {
        let (v, b) = add(1.0, 0.0, 2.0);
        assert_eq!(v, 3.0);
        assert!((3.0 * U32..3.0 * U32 * 1.01).contains(&b), "{b:e}");
        let (v, b) = mul(3.0, 1e-6, -2.0);
        assert_eq!(v, -6.0);
        assert!(b >= 2e-6 + 2.0 * U32 * 3.0, "{b:e}");
        // ∞ through an add stays ∞ (judged exactly), ∞·0 is NaN (judged exactly), an
        // undefined element stays undefined.
        assert_eq!(add(f64::INFINITY, 0.0, -5.0).0, f64::INFINITY);
        let (v, b) = mul(f64::INFINITY, 0.0, 0.0);
        assert!(v.is_nan() && !b.is_nan());
        assert!(add(1.0, f64::NAN, 1.0).1.is_nan());
        // Near f32's range the node may overflow: undefined.
        assert!(add(f32::MAX as f64, 0.0, 1.0).1.is_nan());
        assert!(mul(1e30, 0.0, 1e9).1.is_nan());
    }
}
