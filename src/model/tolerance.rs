//! Error models: the shared arithmetic every kernel's per-element bound is built from. Each
//! kernel's own model sits beside its case model (`src/model/cases/<kernel>/bounds.rs`); what is here
//! is common to several: the f32 and f16 units and γ, the floating-point formats operands are
//! rounded to ([`Fp`]), and the IEEE special-value classes of a dot product ([`Special`]).
//!
//! The reference gives the exact value `want` of each output element. A GPU result `got` passes
//! when |got − want| ≤ bound, where the bound is a rounding-error analysis of the arithmetic the
//! kernel's interface prescribes, not a tolerance tuned until green:
//!
//! * Every f32 add and multiply on Vulkan is correctly rounded (SPIR-V precision rules), so each
//!   contributes a relative error of at most u = 2⁻²⁴; a fused multiply-add only removes one.
//! * A sum of n terms evaluated in any order along a dependency chain of depth d (the most
//!   roundings any single term goes through) is off by at most γ(d)·Σ|termᵢ|, with
//!   γ(d) = d·u / (1 − d·u) (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1).
//!   Σ|termᵢ| — the *magnitude* — is computed exactly by the reference, so cancellation in the
//!   result never makes the bound unfairly tight.
//! * Inputs are exactly representable where the kernel reads them (f16/bf16 widen exactly to f32,
//!   and d·q of every block format here is exact in f32), so input rounding adds nothing except
//!   for formats with a minimum (d·q + m rounds once: one more level of depth).
//! * An absolute floor of (terms + 1)·2⁻¹²⁶ covers devices that flush f32 subnormals to zero.
//!
//! Each kernel's depth is derived, in its bounds module, from the reduction structure its
//! interface fixes.

/// Unit roundoff of f32.
pub const U32: f64 = 1.0 / (1u64 << 24) as f64;

/// Backend mode: the loosest of several candidate bounds per element, for choices the backend
/// makes that a harness cannot observe (split_k, accumulator precision). A NaN bound (element
/// not judged) in any candidate stays NaN.
pub fn loosest(candidates: Vec<Vec<f64>>) -> Vec<f64> {
    let mut it = candidates.into_iter();
    let mut out = it.next().unwrap_or_default();
    for c in it {
        for (o, x) in out.iter_mut().zip(c) {
            *o = if o.is_nan() || x.is_nan() {
                f64::NAN
            } else {
                o.max(x)
            };
        }
    }
    out
}

/// γ(d) for f32 arithmetic: the relative error bound of a depth-d chain of roundings.
pub fn gamma(depth: f64) -> f64 {
    gamma_of(U32, depth)
}

/// γ(d) for roundings of unit `unit`: d·u/(1 − d·u), and +∞ where d·u ≥ 1, where the chain's
/// worst case bounds nothing (e.g. an f16 sum over 2,048 terms). The formula itself would go
/// negative there and shrink a bound instead of lifting it.
pub fn gamma_of(unit: f64, depth: f64) -> f64 {
    let du = depth * unit;
    if du >= 1.0 {
        f64::INFINITY
    } else {
        du / (1.0 - du)
    }
}

/// Floor for flushed subnormals over `terms` terms.
pub fn subnormal_floor(terms: usize) -> f64 {
    (terms as f64 + 1.0) * f32::MIN_POSITIVE as f64
}

/// The relative error of one rounding to f16, for every kernel's model ([`Fp::unit`] too):
/// 2⁻¹¹, plus 2⁻²⁴ because an f16 result may be computed through f32 and rounded twice (CPU
/// drivers do: an f16 fma becomes an f32 fma and a conversion), which can miss the nearest
/// f16 by one f32 half-ulp.
pub const U16: f64 = 1.0 / 2048.0 + U32;
/// The smallest normal f16: devices may flush f16 values below it to zero (no denorm mode is
/// requested), an absolute error of up to this much per rounding.
pub const F16_MIN_NORMAL: f64 = 1.0 / 16384.0;
/// The largest finite f16.
pub const F16_MAX: f64 = 65504.0;

/// One split's partial (value, error bound) added to the running total: the first split is
/// the total; later ones cost one f32 add each, as `mul_mat_split_k_reduce.comp` sums the splits
/// in order (an f16 partial widens to f32 exactly).
pub fn add_split(
    first: bool,
    (total, total_err): (f64, f64),
    (sum, err): (f64, f64),
) -> (f64, f64) {
    if first {
        return (sum, err);
    }
    let total = total + sum;
    let d = total_err + err;
    let (xlo, xhi) = ((total.abs() - d).max(0.0), total.abs() + d);
    (total, d + Fp::F32.rounding(xlo, xhi))
}

/// A floating-point format a value is rounded to on the matrix-matrix path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fp {
    /// IEEE binary16 (float16_t).
    F16,
    /// bfloat16.
    Bf16,
    /// IEEE binary32.
    F32,
}

impl Fp {
    /// Relative error of one rounding into the format. f16 results may be computed through
    /// f32 and rounded twice (CPU drivers do: an f16 fma becomes an f32 fma and a conversion),
    /// which can miss the nearest f16 by one f32 half-ulp: u16 + u32 with u16 = 2⁻¹¹.
    pub fn unit(self) -> f64 {
        match self {
            Fp::F16 => U16,
            Fp::Bf16 => 2f64.powi(-8),
            Fp::F32 => U32,
        }
    }

    /// The smallest normal value: below it a result may be flushed to zero.
    pub fn min_normal(self) -> f64 {
        match self {
            Fp::F16 => 2f64.powi(-14),
            Fp::Bf16 | Fp::F32 => f64::from(f32::MIN_POSITIVE),
        }
    }

    /// The smallest magnitude that may round to ±∞: for f16 the midpoint 65520 between 65504
    /// and 2¹⁶ (round-to-nearest-even sends it up), less the f32 half-ulp by which a value
    /// rounded to f32 first may land on it.
    pub fn overflow(self) -> f64 {
        match self {
            Fp::F16 => 65520.0 - 2f64.powi(-7),
            Fp::Bf16 => f64::from(half::bf16::MAX.to_f32()),
            Fp::F32 => f64::from(f32::MAX),
        }
    }

    /// Whether `x` is a number of the format (no rounding needed).
    pub fn holds(self, x: f64) -> bool {
        match self {
            Fp::F16 => half::f16::from_f64(x).to_f64() == x,
            Fp::Bf16 => half::bf16::from_f64(x).to_f64() == x,
            Fp::F32 => (x as f32) as f64 == x,
        }
    }

    /// Bound on the error of rounding a value whose magnitude lies in [lo, hi] into the
    /// format (see [`FpConstants::rounding`]).
    pub fn rounding(self, lo: f64, hi: f64) -> f64 {
        self.constants().rounding(lo, hi)
    }

    /// Bound on the error of using an exact value of magnitude in [lo, hi] that needs no
    /// rounding (see [`FpConstants::flushing`]).
    pub fn flushing(self, lo: f64, hi: f64) -> f64 {
        self.constants().flushing(lo, hi)
    }

    /// The format's unit, smallest normal and overflow threshold, for loops that round often.
    pub fn constants(self) -> FpConstants {
        FpConstants {
            unit: self.unit(),
            tiny: self.min_normal(),
            overflow: self.overflow(),
        }
    }
}

/// [`Fp`]'s numbers taken out of the match once ([`Fp::constants`]).
#[derive(Debug, Clone, Copy)]
pub struct FpConstants {
    /// [`Fp::unit`].
    pub unit: f64,
    /// [`Fp::min_normal`].
    pub tiny: f64,
    /// [`Fp::overflow`].
    pub overflow: f64,
}

impl FpConstants {
    /// Bound on the error of rounding a value whose magnitude lies in [lo, hi] into the
    /// format: u·hi while the value is surely normal, hi when it is surely below the smallest
    /// normal (flushed, or rounded to a subnormal), the larger of both otherwise.
    #[inline(always)]
    pub fn rounding(self, lo: f64, hi: f64) -> f64 {
        let (u, tiny) = (self.unit, self.tiny);
        if lo >= tiny {
            u * hi
        } else if hi < tiny {
            hi
        } else {
            (u * hi).max(tiny)
        }
    }

    /// Bound on the error of using an exact value of magnitude in [lo, hi] that needs no
    /// rounding: nothing, unless it may be subnormal and flushed to zero.
    #[inline(always)]
    pub fn flushing(self, lo: f64, hi: f64) -> f64 {
        if lo >= self.tiny {
            0.0
        } else {
            hi.min(self.tiny)
        }
    }
}

/// What a dot product Σ a_k·b_k is beyond finite numbers, where every order, contraction and
/// split of the sum gives the same IEEE answer (ggml's CPU result): the class the comparison
/// judges NaN and ±∞ expectations by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Special {
    /// No NaN or ±∞ operand: judged by the finite model (which handles overflow itself).
    Finite,
    /// NaN in every order: a NaN operand (NaN·x and NaN + x are NaN), ±∞·0, or infinite
    /// products of both signs (∞ − ∞ in whatever order they meet).
    Nan,
    /// ±∞ in every order: infinite products of one sign only, no ∞·0, and finite terms too
    /// small to overflow to the other infinity in any order.
    Inf(f64),
    /// Depends on the order or on flushing: left unjudged.
    Undefined,
}

/// The [`Special`] class of Σ a_k·b_k computed with operands in the formats `fa`, `fb` and an
/// accumulator `acc`, from the exact operand values `a`, `b`. `a_exact`: A's values are the
/// kernel's operands (float types); block formats are not, as a kernel may factor a block's
/// scale out of its sum (d·Σ q·b), so a non-finite scale's result depends on the kernel.
///
/// Rules (IEEE 754, which ggml's CPU path follows): a NaN operand makes every order NaN; an
/// infinite operand times an exact zero is NaN, times a value that the device may flush
/// (below its format's smallest normal) either NaN or ±∞ (undefined); infinite products of
/// both signs meet somewhere in every order (NaN). With one sign only the result is that
/// infinity unless the finite part may overflow to the other one: every partial sum of finite
/// terms is at most Σ|â·b̂|·(1 + u)^(K+1) in magnitude (each product and add rounds by at most
/// a factor 1 + u), â, b̂ the operands rounded to their formats. An operand that may itself
/// round to ±∞ makes the answer undefined.
pub fn dot_special(a: &[f64], b: &[f64], fa: Fp, fb: Fp, acc: Fp, a_exact: bool) -> Special {
    // `undefined`: a term whose value depends on the kernel; `overflowing`: a finite operand
    // that may round to ±∞ (the finite model flags that itself when nothing else is special).
    let (mut pos, mut neg, mut undefined, mut overflowing) = (false, false, false, false);
    let mut finite = 0.0f64;
    for (&x, &y) in a.iter().zip(b) {
        if y.is_nan() || (a_exact && x.is_nan()) {
            return Special::Nan;
        }
        if !a_exact && !x.is_finite() {
            undefined = true;
            continue;
        }
        match (x.is_infinite(), y.is_infinite()) {
            (false, false) => {
                if x.abs() >= fa.overflow() || y.abs() >= fb.overflow() {
                    overflowing = true;
                }
                finite += x.abs() * (1.0 + fa.unit()) * y.abs() * (1.0 + fb.unit());
            }
            (xi, yi) => {
                let (other, fmt) = if xi { (y, fb) } else { (x, fa) };
                if other == 0.0 {
                    return Special::Nan;
                }
                // A flushed partner gives NaN, an unflushed one ±∞; a block value's scale may
                // be flushed on its own (d subnormal, d·q not).
                if !(xi && yi) && (other.abs() < fmt.min_normal() || !a_exact) {
                    undefined = true;
                    continue;
                }
                if x.signum() * y.signum() > 0.0 {
                    pos = true;
                } else {
                    neg = true;
                }
            }
        }
    }
    if pos && neg {
        return Special::Nan;
    }
    if !(pos || neg || undefined) {
        return Special::Finite;
    }
    let growth = ((a.len() + 1) as f64 * acc.unit().ln_1p()).exp();
    if undefined || overflowing || finite * growth >= acc.overflow() {
        return Special::Undefined;
    }
    Special::Inf(if pos {
        f64::INFINITY
    } else {
        f64::NEG_INFINITY
    })
}

/// [`dot_special`] per dst element of a matrix product laid out as in [`mul_mm_bounds`]
/// (column c multiplies A rows `columns[c].0 ..` by B row `columns[c].1`, M fastest).
#[allow(clippy::too_many_arguments)]
pub fn mul_mat_specials(
    a_rows: &[f64],
    b_rows: &[f64],
    k: usize,
    m: usize,
    columns: &[(usize, usize)],
    formats: (Fp, Fp, Fp),
    a_exact: bool,
) -> Vec<Special> {
    let a_special = if k == 0 {
        Vec::new()
    } else {
        rows_with(a_rows, k, |x| !x.is_finite())
    };
    specials_where(
        |r| a_special[r],
        |r| &a_rows[r * k..][..k],
        b_rows,
        k,
        m,
        columns,
        formats,
        a_exact,
    )
}

/// [`mul_mat_specials`] for a B without NaN or ±∞, from A's rows that hold one (keyed by row,
/// in [`vkdiff_reference::TensorView::rows`] order; every other row is finite, and its
/// products are then Finite without its values): a caller need not decode the rest of A.
pub fn mul_mat_specials_sparse(
    a_special_rows: &std::collections::HashMap<usize, Vec<f64>>,
    b_rows: &[f64],
    k: usize,
    m: usize,
    columns: &[(usize, usize)],
    formats: (Fp, Fp, Fp),
    a_exact: bool,
) -> Vec<Special> {
    // (With a special B row every A row would be needed: the lookup below would panic.)
    specials_where(
        |r| a_special_rows.contains_key(&r),
        |r| &a_special_rows[&r],
        b_rows,
        k,
        m,
        columns,
        formats,
        a_exact,
    )
}

/// The two above: [`dot_special`] for the elements whose A row (`a_special`) or B row holds a
/// NaN or ±∞, with A row r's values from `a_row(r)`; a product of two rows without one is
/// Finite (dot_special's loop can only say so), so the loop runs for those few elements.
#[allow(clippy::too_many_arguments)]
fn specials_where<'a>(
    a_special: impl Fn(usize) -> bool + Sync,
    a_row: impl Fn(usize) -> &'a [f64] + Sync,
    b_rows: &[f64],
    k: usize,
    m: usize,
    columns: &[(usize, usize)],
    (fa, fb, acc): (Fp, Fp, Fp),
    a_exact: bool,
) -> Vec<Special> {
    use rayon::prelude::*;
    if k == 0 {
        return vec![Special::Finite; columns.len() * m];
    }
    let b_special = rows_with(b_rows, k, |x| !x.is_finite());
    columns
        .par_iter()
        .flat_map_iter(|&(a_first, b_row)| {
            let b = &b_rows[b_row * k..][..k];
            let (a_special, a_row, b_special) = (&a_special, &a_row, b_special[b_row]);
            (0..m).map(move |i| match b_special || a_special(a_first + i) {
                true => dot_special(a_row(a_first + i), b, fa, fb, acc, a_exact),
                false => Special::Finite,
            })
        })
        .collect()
}

/// The rows of `t` (index in [`vkdiff_reference::TensorView::rows`] order) that hold a NaN or
/// ±∞, with their values: decoded one row at a time, so a large tensor with few such rows
/// never lives in memory as f64.
pub fn rows_with_specials(
    t: &vkdiff_reference::Tensor,
) -> vkdiff_reference::Result<std::collections::HashMap<usize, Vec<f64>>> {
    use rayon::prelude::*;
    let [k, n1, n2, _] = t.ne();
    (0..t.nrows())
        .into_par_iter()
        .map_init(
            || vec![0.0; k],
            |row, r| {
                t.row_into(r % n1, r / n1 % n2, r / (n1 * n2), row)?;
                Ok((row.iter().any(|x| !x.is_finite())).then(|| (r, row.clone())))
            },
        )
        .filter_map(Result::transpose)
        .collect()
}

/// Per row of `k` > 0 values (the last may be short), whether any value satisfies `pred`.
fn rows_with(values: &[f64], k: usize, pred: impl Fn(f64) -> bool + Sync) -> Vec<bool> {
    use rayon::prelude::*;
    values
        .par_chunks(k)
        .map(|row| row.iter().any(|&x| pred(x)))
        .collect()
}

/// Per dst element (laid out as in [`mul_mat_specials`]), Σ|a_k·b_k| over the finite terms
/// with an operand below its format's smallest normal: Vulkan lets a device flush such inputs
/// to zero, which drops the whole term (an error of 100% of it, which no γ·Σ|a·b| covers).
pub fn mul_mat_flushable(
    a_rows: &[f64],
    b_rows: &[f64],
    k: usize,
    m: usize,
    columns: &[(usize, usize)],
    (fa, fb): (Fp, Fp),
) -> Vec<f64> {
    use rayon::prelude::*;
    let (ta, tb) = (fa.min_normal(), fb.min_normal());
    if k == 0 {
        return vec![0.0; columns.len() * m];
    }
    // Without a nonzero subnormal in either row, every counted term has a zero operand and
    // adds 0 (or NaN, which is dropped): the sum is 0 without the loop.
    let a_tiny = rows_with(a_rows, k, |x| x != 0.0 && x.abs() < ta);
    let b_tiny = rows_with(b_rows, k, |x| x != 0.0 && x.abs() < tb);
    columns
        .par_iter()
        .flat_map_iter(|&(a_first, b_row)| {
            let b = &b_rows[b_row * k..][..k];
            let (a_tiny, b_tiny) = (&a_tiny, b_tiny[b_row]);
            (0..m).map(move |i| {
                if !b_tiny && !a_tiny[a_first + i] {
                    return 0.0;
                }
                let a = &a_rows[(a_first + i) * k..][..k];
                a.iter()
                    .zip(b)
                    .filter(|(x, y)| x.abs() < ta || y.abs() < tb)
                    .map(|(x, y)| (x * y).abs())
                    .filter(|p| p.is_finite())
                    .sum::<f64>()
            })
        })
        .collect()
}

/// Sets the expectation and bound of each element by its [`Special`] class: NaN or ±∞ judged
/// exactly (bound 0), undefined ones unjudged (NaN bound); finite ones keep their model's
/// bound, except that an expectation which is not finite there (beyond the model) is
/// undefined too.
pub fn apply_specials(specials: &[Special], want: &mut [f64], bounds: &mut [f64]) {
    for ((s, w), b) in specials.iter().zip(want.iter_mut()).zip(bounds.iter_mut()) {
        match *s {
            Special::Nan => (*w, *b) = (f64::NAN, 0.0),
            Special::Inf(x) => (*w, *b) = (x, 0.0),
            Special::Undefined => *b = f64::NAN,
            Special::Finite if !w.is_finite() => *b = f64::NAN,
            Special::Finite => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gamma_is_about_d_times_u() {
        assert!((gamma(10.0) / (10.0 * U32) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn a_chain_too_long_for_its_unit_bounds_nothing() {
        // 4,162 f16 roundings (a KV = 4096 sum): d·u > 1, where d·u/(1 − d·u) is negative.
        assert_eq!(gamma_of(U16, 4162.0), f64::INFINITY);
        assert!(gamma_of(U16, 130.0) > 0.06 && gamma_of(U16, 130.0) < 0.07);
    }

    #[test]
    fn sparse_specials_match_the_dense_ones() {
        use vkdiff_reference::{DType, Tensor};
        // q8_0 A, K = 64, 3 rows × 2 matrices; blocks with scale +∞, NaN and −∞, some
        // quants 0 (0·∞ is NaN) or of either sign; a finite B with a zero.
        let (k, m) = (64, 3);
        let scales: [u16; 12] = [
            0x3C00, 0x7C00, 0x3C00, 0x3800, 0x7E00, 0x3C00, 0x4000, 0x3C00, 0x3C00, 0xFC00, 0x3C00,
            0x3C00,
        ];
        let mut bytes = Vec::new();
        for (i, d) in scales.iter().enumerate() {
            bytes.extend(d.to_le_bytes());
            bytes.extend((0..32).map(|j| [0u8, 1, 0xFF, 3][(i + j) % 4]));
        }
        let a = Tensor::from_bytes(DType::Q8_0, [k, m, 2, 1], bytes).unwrap();
        let b: Vec<f64> = (0..2 * k).map(|i| [0.5, -2.0, 0.0, 1.0][i % 4]).collect();
        let columns = [(0, 0), (m, 1), (m, 0)];
        let f = (Fp::F32, Fp::F32, Fp::F32);
        let dense = mul_mat_specials(&a.rows().unwrap(), &b, k, m, &columns, f, false);
        let rows = rows_with_specials(&a).unwrap();
        assert_eq!(rows.keys().count(), 3, "rows 0, 2 and 4 hold specials");
        let sparse = mul_mat_specials_sparse(&rows, &b, k, m, &columns, f, false);
        assert_eq!(format!("{dense:?}"), format!("{sparse:?}"));
        assert!(dense.iter().any(|s| *s != Special::Finite), "{dense:?}");
    }
}
