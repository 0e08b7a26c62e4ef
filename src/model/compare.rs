//! Judging a kernel's output element by element against the exact reference and its bounds.
//!
//! Rules, per element:
//! - still holding the poison pattern: never written, a failure;
//! - a NaN bound says the error model leaves the element undefined (a NaN or ±∞ input that
//!   reaches it in an order-dependent way, e.g. a fuzzed block scale that a kernel factors out
//!   of its sum, or an intermediate that may overflow): it is not judged, and counted as
//!   unjudged. Each kernel's model decides where; see [`undefined_where_non_finite`];
//! - a NaN expectation must be NaN, a ±∞ expectation that same infinity (ggml's IEEE result,
//!   which the model found to be the same in every order the kernel may take);
//! - a finite expectation passes when |got − want| ≤ bound (a NaN or ±∞ got fails). The ratio
//!   |got − want| / bound (0 when equal) is the headroom figure: ≤ 1 passes, and the worst ratio
//!   of a passing run says how close it came.

use std::fmt;

use serde::{Deserialize, Serialize};
use vkdiff_gpu::context::POISON_F32;

/// How one element was judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mismatch {
    /// Within its bound (reported for the worst passing element).
    Within,
    /// Still the poison pattern: the kernel never wrote it.
    Unwritten,
    /// Finite expectation, error above the bound.
    OutOfBound,
    /// NaN or ±∞ where a finite value (or another non-finite value) was expected, or a value
    /// other than the NaN or ±∞ expected.
    NonFinite,
}

/// One judged element: a failure, or the worst passing element.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ElementFailure {
    /// ggml index (i0, i1, i2, i3) in dst.
    pub index: [usize; 4],
    /// What the kernel wrote.
    pub got: f32,
    /// The exact value.
    pub want: f64,
    /// The allowed error.
    pub bound: f64,
    /// |got − want| / bound (∞ for non-finite or unwritten).
    pub ratio: f64,
    /// Kind of failure.
    pub kind: Mismatch,
    /// Which part of dst the element is in (e.g. "y" or "state" for wkv7), when that matters.
    pub region: String,
}

impl fmt::Display for ElementFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [i0, i1, i2, i3] = self.index;
        let region = if self.region.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.region)
        };
        match self.kind {
            Mismatch::Unwritten => write!(f, "dst[{i0},{i1},{i2},{i3}]{region}: never written (still poison), want {:e}", self.want),
            kind => write!(
                f,
                "dst[{i0},{i1},{i2},{i3}]{region}: got {:e}, want {:e}, |err| {:.3e} {} bound {:.3e} (ratio {:.3})",
                self.got,
                self.want,
                (self.got as f64 - self.want).abs(),
                if kind == Mismatch::Within { "≤" } else { ">" },
                self.bound,
                self.ratio
            ),
        }
    }
}

/// The verdict on one output tensor.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Verdict {
    /// Elements compared.
    pub elements: usize,
    /// Worst |got − want| / bound among elements that passed (the headroom).
    pub worst_ratio: f64,
    /// The element with that ratio.
    pub worst: Option<ElementFailure>,
    /// Number of failing elements.
    pub failed: usize,
    /// Elements not judged because the model leaves their value undefined (a NaN bound, see
    /// the module rules).
    pub unjudged: usize,
    /// The first few failing elements, in order.
    pub failures: Vec<ElementFailure>,
    /// The kernel wrote past the end of dst.
    pub overrun: bool,
    /// The pipeline that ran, where the host can fall back to another one (empty otherwise),
    /// and notes on elements the comparison left unjudged. (Always serialized: workers send
    /// verdicts in bincode, which cannot skip fields.)
    #[serde(default)]
    pub pipeline: String,
    /// Where and how every failing element failed (not only the shown ones): what findings are
    /// grouped by.
    #[serde(default)]
    pub spread: Spread,
    /// Backend mode, where the bound is the loosest of several candidate models: the tightest
    /// candidate the result fits on its own ([`tightest_fit`]), e.g. "f32" or "f16"; empty
    /// where there was one model.
    #[serde(default)]
    pub fits: String,
    /// A failing fused graph (MUL_MAT + ADD, …) whose unfused twin, the same nodes each in a
    /// graph of its own, passes under the same bounds: the fault is in the fused kernel.
    #[serde(default)]
    pub fused_only: bool,
    /// What the unfused twin of a failing fused graph gave (empty for other ops).
    #[serde(default)]
    pub twin: String,
}

/// A summary of all failing elements of a verdict: their kinds and the range of their ggml
/// indices per dimension, against dst's extent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// dst's extent per ggml dimension.
    pub ne: [usize; 4],
    /// Smallest failing index per dimension.
    pub lo: [usize; 4],
    /// Largest failing index per dimension.
    pub hi: [usize; 4],
    /// Elements still holding the poison pattern.
    pub unwritten: usize,
    /// NaN where a finite value was due.
    pub nan: usize,
    /// ±∞ where a finite value was due.
    pub inf: usize,
    /// Finite but out of bound.
    pub wrong: usize,
    /// Of `wrong`: finite where NaN or ±∞ was due (e.g. an accumulator clamped to its range).
    #[serde(default)]
    pub finite_for_special: usize,
    /// Regions (e.g. "state", or a fully masked row) holding failures, in first-seen order.
    pub regions: Vec<String>,
}

impl Spread {
    /// Counts one failing element.
    pub fn add(&mut self, index: [usize; 4], kind: Mismatch, got: f32, region: &str) {
        let first = self.unwritten + self.nan + self.inf + self.wrong == 0;
        for (d, &i) in index.iter().enumerate() {
            if first || i < self.lo[d] {
                self.lo[d] = i;
            }
            if first || i > self.hi[d] {
                self.hi[d] = i;
            }
        }
        match kind {
            Mismatch::Unwritten => self.unwritten += 1,
            Mismatch::NonFinite if got.is_nan() => self.nan += 1,
            Mismatch::NonFinite if got.is_infinite() => self.inf += 1,
            Mismatch::NonFinite if got.is_finite() => {
                self.finite_for_special += 1;
                self.wrong += 1;
            }
            _ => self.wrong += 1,
        }
        if !region.is_empty() && !self.regions.iter().any(|r| r == region) {
            self.regions.push(region.to_string());
        }
    }
}

/// How many failing elements a verdict keeps for its report.
pub const SHOWN_FAILURES: usize = 5;

impl Verdict {
    /// True when every element passed and nothing was written out of bounds.
    pub fn passed(&self) -> bool {
        self.failed == 0 && !self.overrun
    }

    /// A short explanation: the first failures and how many more.
    pub fn explain(&self) -> String {
        let mut s = String::new();
        if !self.pipeline.is_empty() {
            s.push_str(&format!("ran {}\n", self.pipeline));
        }
        if self.overrun {
            s.push_str("the kernel wrote past the end of dst (guard bytes overwritten)\n");
        }
        if !self.twin.is_empty() {
            s.push_str(&format!("{}\n", self.twin));
        }
        for f in &self.failures {
            s.push_str(&format!("{f}\n"));
        }
        if self.failed > self.failures.len() {
            s.push_str(&format!(
                "... and {} more of {} elements\n",
                self.failed - self.failures.len(),
                self.elements
            ));
        }
        s
    }
}

/// Marks every element whose expectation is NaN or ±∞ as undefined (a NaN bound): for kernels
/// whose model does not say which non-finite results every order of their arithmetic shares
/// (Vulkan without SignedZeroInfNanPreserve, a factored block scale, GLSL's max of a NaN).
/// Returns how many it marked.
pub fn undefined_where_non_finite(want: &[f64], bounds: &mut [f64]) -> usize {
    let mut n = 0;
    for (w, b) in want.iter().zip(bounds.iter_mut()) {
        if !w.is_finite() {
            *b = f64::NAN;
            n += 1;
        }
    }
    n
}

/// Compares `got` with `want` under `bounds`; `index_of` maps a flat position to the ggml index
/// and `region_of` names the part of dst it belongs to. The three must have the same length:
/// anything else is a harness error (an element without a bound would go unjudged).
pub fn compare(
    got: &[f32],
    want: &[f64],
    bounds: &[f64],
    index_of: impl Fn(usize) -> [usize; 4],
    region_of: impl Fn(usize) -> &'static str,
) -> Result<Verdict, String> {
    if got.len() != want.len() || bounds.len() != want.len() {
        return Err(format!(
            "internal error: {} kernel values, {} reference values and {} bounds (all must match)",
            got.len(),
            want.len(),
            bounds.len()
        ));
    }
    let mut v = Verdict {
        elements: got.len(),
        ..Default::default()
    };
    if let Some(last) = got.len().checked_sub(1) {
        v.spread.ne = index_of(last).map(|i| i + 1);
    }
    for (i, ((&g, &w), &b)) in got.iter().zip(want).zip(bounds).enumerate() {
        let kind = if g.to_bits() == POISON_F32 {
            Some(Mismatch::Unwritten)
        } else if b.is_nan() {
            v.unjudged += 1;
            None
        } else if w.is_nan() {
            (!g.is_nan()).then_some(Mismatch::NonFinite)
        } else if w.is_infinite() {
            (g as f64 != w).then_some(Mismatch::NonFinite)
        } else if !g.is_finite() {
            Some(Mismatch::NonFinite)
        } else {
            let err = (g as f64 - w).abs();
            let ratio = if err == 0.0 { 0.0 } else { err / b };
            if ratio <= 1.0 {
                if ratio > v.worst_ratio {
                    v.worst_ratio = ratio;
                    v.worst = Some(ElementFailure {
                        index: index_of(i),
                        got: g,
                        want: w,
                        bound: b,
                        ratio,
                        kind: Mismatch::Within,
                        region: region_of(i).to_string(),
                    });
                }
                None
            } else {
                Some(Mismatch::OutOfBound)
            }
        };
        if let Some(kind) = kind {
            v.failed += 1;
            v.spread.add(index_of(i), kind, g, region_of(i));
            if v.failures.len() < SHOWN_FAILURES {
                let ratio = if kind == Mismatch::OutOfBound {
                    (g as f64 - w).abs() / b
                } else {
                    f64::INFINITY
                };
                v.failures.push(ElementFailure {
                    index: index_of(i),
                    got: g,
                    want: w,
                    bound: b,
                    ratio,
                    kind,
                    region: region_of(i).to_string(),
                });
            }
        }
    }
    Ok(v)
}

/// Which of several named candidate bounds (each as long as `want`) the result fits on its
/// own, every element judged as [`compare`] does: the one with the smallest sum of finite
/// bounds among those it passes ("none alone" when it passes none, which can happen under the
/// element-wise loosest of them). Recorded in [`Verdict::fits`], so that a report says whether
/// an error is within the f32 model or only within an f16 one.
pub fn tightest_fit(got: &[f32], want: &[f64], candidates: &[(String, Vec<f64>)]) -> String {
    let mut best: Option<(f64, &str)> = None;
    for (name, bounds) in candidates {
        let fits = compare(got, want, bounds, |i| [i, 0, 0, 0], |_| "").is_ok_and(|v| v.passed());
        if fits {
            let size: f64 = bounds.iter().filter(|b| b.is_finite()).sum();
            if best.is_none_or(|(s, _)| size < s) {
                best = Some((size, name));
            }
        }
    }
    best.map_or("none alone".into(), |(_, n)| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tightest_candidate_a_result_fits_is_named() {
        let want = [1.0, 2.0];
        let c = |n: &str, b: f64| (n.to_string(), vec![b; 2]);
        let candidates = [c("f16", 1e-2), c("f32", 1e-6), c("f16 split 2", 2e-2)];
        // An f32-accurate result fits all three: the tightest is named.
        assert_eq!(tightest_fit(&[1.0, 2.0], &want, &candidates), "f32");
        // An error of 1e-3 fits only the f16 models.
        assert_eq!(tightest_fit(&[1.001, 2.0], &want, &candidates), "f16");
        assert_eq!(tightest_fit(&[1.5, 2.0], &want, &candidates), "none alone");
    }

    fn flat(i: usize) -> [usize; 4] {
        [i, 0, 0, 0]
    }

    #[test]
    fn judges_each_element() {
        let poison = f32::from_bits(POISON_F32);
        let got = [1.0, 2.5, poison, f32::NAN, f32::INFINITY, 7.0, 5.0];
        let want = [1.0, 2.0, 3.0, f64::NAN, f64::INFINITY, 6.0, f64::NAN];
        let bounds = [0.1, 1.0, 1.0, 0.0, 0.0, 0.5, f64::NAN];
        let v = compare(&got, &want, &bounds, flat, |_| "").unwrap();
        assert_eq!(v.failed, 2);
        assert_eq!(v.failures[0].kind, Mismatch::Unwritten);
        assert_eq!(v.failures[0].index, [2, 0, 0, 0]);
        assert_eq!(v.failures[1].kind, Mismatch::OutOfBound);
        assert!((v.failures[1].ratio - 2.0).abs() < 1e-12);
        assert!((v.worst_ratio - 0.5).abs() < 1e-12);
        assert_eq!(
            v.unjudged, 1,
            "only the NaN bound leaves an element unjudged"
        );
        assert!(!v.passed());
    }

    #[test]
    fn nan_where_finite_expected_fails() {
        let v = compare(&[f32::NAN], &[1.0], &[1e9], flat, |_| "").unwrap();
        assert_eq!(v.failures[0].kind, Mismatch::NonFinite);
        let v = compare(&[f32::INFINITY], &[1.0], &[1e9], flat, |_| "").unwrap();
        assert_eq!(v.failed, 1);
        // Non-finite expectations are judged: NaN must be NaN, ±∞ that infinity.
        let v = compare(&[3.0], &[f64::NEG_INFINITY], &[1.0], flat, |_| "").unwrap();
        assert_eq!(v.failures[0].kind, Mismatch::NonFinite);
        let v = compare(&[f32::INFINITY], &[f64::NEG_INFINITY], &[1.0], flat, |_| "").unwrap();
        assert_eq!(v.failed, 1);
        let v = compare(&[3.0], &[f64::NAN], &[1e9], flat, |_| "").unwrap();
        assert_eq!(v.failed, 1);
        let v = compare(
            &[f32::NAN, f32::NEG_INFINITY],
            &[f64::NAN, f64::NEG_INFINITY],
            &[0.0; 2],
            flat,
            |_| "",
        )
        .unwrap();
        assert!(v.passed() && v.unjudged == 0);
        // Any value, even a finite one, is acceptable where the model leaves it undefined.
        let mut b = [1.0];
        assert_eq!(undefined_where_non_finite(&[f64::NEG_INFINITY], &mut b), 1);
        let v = compare(&[3.0], &[f64::NEG_INFINITY], &b, flat, |_| "").unwrap();
        assert!(v.passed() && v.unjudged == 1);
    }

    #[test]
    fn a_bound_missing_for_an_element_is_an_error_not_a_skip() {
        let e = compare(&[1.0, 2.0], &[1.0, 2.0], &[0.1], flat, |_| "").unwrap_err();
        assert!(
            e.contains("2 kernel values, 2 reference values and 1 bounds"),
            "{e}"
        );
        assert!(compare(&[1.0], &[1.0, 2.0], &[0.1, 0.1], flat, |_| "").is_err());
    }
}
