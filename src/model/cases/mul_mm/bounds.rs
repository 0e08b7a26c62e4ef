//! The matrix-matrix error model (mul_mm.comp scalar and cm1 paths, MUL_MAT and MUL_MAT_ID).
//! Shared arithmetic: [`crate::model::tolerance`].
//!
//! § numbers: sections of docs/interface.md.

#[allow(unused_imports)]
use crate::model::tolerance::*;

/// [`loosest`] for matmul bounds: an element may overflow if it may under any candidate.
pub fn loosest_mm(candidates: Vec<MulMmBounds>) -> MulMmBounds {
    let may_overflow = candidates.iter().fold(Vec::new(), |acc: Vec<bool>, c| {
        if acc.is_empty() {
            c.may_overflow.clone()
        } else {
            acc.iter()
                .zip(&c.may_overflow)
                .map(|(a, b)| *a || *b)
                .collect()
        }
    });
    MulMmBounds {
        bounds: loosest(candidates.into_iter().map(|c| c.bounds).collect()),
        may_overflow,
    }
}

/// The (split_k, k_split) pairs a backend may choose for a K-long MUL_MAT beyond its host
/// model's (backend mode candidates): the pinned host's split_k 1–4 with k_split = ⌈K/split_k⌉,
/// and later upstream's (0.1.161 `ggml_vk_guess_split_k`): split_k up to 8 with k_split rounded
/// up to a multiple of 256, split_k lowered while that would leave the last split empty.
pub fn split_candidates(k: usize) -> Vec<(usize, usize)> {
    let whole = |s: usize| if s > 1 { k.div_ceil(s) } else { k };
    let mut out: Vec<(usize, usize)> = (1..=4.min(k.max(1))).map(|s| (s, whole(s))).collect();
    for s in 2..=8 {
        let rounded = |t: usize| k.div_ceil(t).next_multiple_of(256);
        let mut t = s;
        while t > 1 && rounded(t) * (t - 1) >= k {
            t -= 1;
        }
        let pair = if t > 1 { (t, rounded(t)) } else { (1, k) };
        if !out.contains(&pair) {
            out.push(pair);
        }
    }
    out
}

/// The arithmetic of one mul_mm dispatch (§6.6), as the runner's plan describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MulMmArith {
    /// A's values are d·q + m (q4_1, q5_1) or d·sc·q − dmin·m (q2_K, q4_K, q5_K) evaluated in
    /// f32 — one rounding — before anything else (also when the host dequantizes A to f16).
    pub a_min_rounding: bool,
    /// The format A's values are rounded to before they are multiplied: FLOAT_TYPE (f16 in
    /// fp16 mode, f32 in fp32 mode and for bf16, whose values it holds exactly).
    pub a_operand: Fp,
    /// The same for B: FLOAT_TYPE, or the type the host converted B to (bf16 for a bf16 A).
    pub b_operand: Fp,
    /// ACC_TYPE: f16 (the `_f16acc` variants) or f32.
    pub acc: Fp,
    /// K splits (1: none); split s sums k in [s·k_split, min(K, (s + 1)·k_split)).
    pub split_k: usize,
    /// K range of a split.
    pub k_split: usize,
}

impl MulMmArith {
    /// Whether products of two operands are exact in the accumulator: f16·f16 (22 significant
    /// bits, at least 2⁻⁴⁸) and bf16·bf16 (16 bits; it may be subnormal in f32) are exact in
    /// f32; every product rounds in an f16 accumulator, and f32·f32 in f32.
    pub fn exact_products(&self) -> bool {
        self.acc == Fp::F32 && self.a_operand != Fp::F32 && self.b_operand != Fp::F32
    }
}

/// Bounds on one matrix-matrix result, and which elements may be non-finite.
#[derive(Debug, Clone, PartialEq)]
pub struct MulMmBounds {
    /// |got − want| bound per dst element.
    pub bounds: Vec<f64>,
    /// Elements whose computation may overflow the accumulator or an operand (f16: past 65504):
    /// upstream's kernel has no clamping at this commit (§12 later-changed 7), so ±∞ (and NaN
    /// after ∞ − ∞ or ∞·0) is what it legitimately produces there.
    pub may_overflow: Vec<bool>,
}

impl MulMmBounds {
    /// The bounds to judge `got` by: the model's, except NaN (undefined, not judged, see
    /// compare.rs) where the computation may overflow and the kernel's value is indeed
    /// non-finite. A finite value there is judged by the bound as usual: under
    /// round-to-nearest an overflow to ±∞ never comes back to a finite value, so a finite
    /// result means no overflow happened and the analysis holds (an operand that surely
    /// overflows has an infinite bound: any finite value is then accepted).
    pub fn judged_bounds(&self, got: &[f32]) -> Vec<f64> {
        self.bounds
            .iter()
            .zip(got)
            .zip(&self.may_overflow)
            .map(|((&b, &g), &ovf)| {
                // ±65504: later upstream clamps f16 accumulators (§12 later-changed 7); recent ggml
                // trees in backend mode produce it where the pinned kernel produces ±∞.
                if ovf && (!g.is_finite() || f64::from(g.abs()) == F16_MAX) {
                    f64::NAN
                } else {
                    b
                }
            })
            .collect()
    }
}

/// Error of one operand: the exact value `x`, rounded to f32 first when `pre32`, then to
/// `fmt`, and whether it may round to ±∞ (then, when it surely does, the error is infinite:
/// anything computed from it is undefined).
fn mul_mm_operand_error(x: f64, pre32: bool, fmt: Fp) -> (f64, bool) {
    let ax = x.abs();
    if ax == 0.0 || !ax.is_finite() {
        return (0.0, false);
    }
    if fmt.holds(x) {
        // Exact in the format (then also in f32, so the pre-rounding is exact too).
        return (fmt.flushing(ax, ax), false);
    }
    let pre = if pre32 && !Fp::F32.holds(x) {
        U32 * ax
    } else {
        0.0
    };
    let (lo, hi) = (ax - pre, ax + pre);
    if lo >= fmt.overflow() {
        return (f64::INFINITY, true);
    }
    (pre + fmt.rounding(lo, hi), hi >= fmt.overflow())
}

/// Per-element operand errors of values staged as on the scalar path (§6.6: `pre32` one f32
/// rounding first, for the decoded types with a min, then a rounding to `fmt`), in the form the
/// coopmat step model takes: None where the operand may round to ±∞. The cm1 path stages its
/// operands exactly so (`mul_mm.comp` with COOPMAT shares the staging).
pub fn staged_operand_errors(rows: &[f64], pre32: bool, fmt: Fp) -> Vec<Option<f64>> {
    use rayon::prelude::*;
    rows.par_iter()
        .map(|&x| match mul_mm_operand_error(x, pre32, fmt) {
            (e, false) => Some(e),
            (_, true) => None,
        })
        .collect()
}

/// Matrix-matrix bounds (§6.6): a forward running error analysis of exactly the arithmetic
/// the interface fixes, evaluated along the exact partial sums.
///
/// **What is computed.** Output (m, n) of split s is one chain in one invocation:
/// σ ← 0; σ ← fl(σ + fl(â_k·b̂_k)) for k ascending over the split's range, in ACC_TYPE; the
/// f32 partial sums of the splits are then added in split order by the reduce shader. â and b̂
/// are A's and B's values as staged: a block value is d·q (+ m) in f32 (exact without a min,
/// one rounding with one), then rounded to FLOAT_TYPE (f16 in fp16 mode: 2⁻¹¹ relative per
/// operand; f32 values, and f16 and bf16 ones that the format holds, stay exact); a B that
/// the host converted is rounded once to its new type.
///
/// **Why a running bound and not γ(K)·Σ|a·b|.** With f16 accumulators every add rounds by
/// up to u16 = 2⁻¹¹ of the running sum, so γ16(K) = K·u16/(1 − K·u16) exceeds 1 at K = 1024
/// and is undefined from K = 2048: the a-priori bound says nothing exactly where f16
/// accumulation matters. The running bound replaces Σ|terms| by the sizes the partial sums
/// really reach: with D_k the error carried into step k,
///   e_in  = |a|·e_b + |b|·e_a + e_a·e_b            (operand rounding, |â·b̂ − a·b|)
///   e_p   = rounding of the product into ACC_TYPE (0 when exact: f16·f16 in f32)
///   D     = E_{k−1} + e_in + e_p (+ a flushed subnormal running sum)
///   E_k   = D + rounding of a value within D of the exact partial sum s_k, i.e. of magnitude
///           at most |s_k| + D
/// so E_K bounds |σ − s_K| rigorously by induction (Wilkinson's running error analysis, with
/// the exact partial sums standing in for the computed ones). It is as large as γ(K)·Σ|a·b|
/// when every partial sum is as large as the total (all terms of one sign: then f16
/// accumulation really does stagnate), and about √K times smaller for mixed signs. Roundings
/// are charged as an unfused multiply and add, which also bounds a fused fma.
///
/// **Subnormals and overflow.** Vulkan may flush subnormal inputs and results to zero: a
/// value that may lie below the format's smallest normal is charged its full size (at most
/// 2⁻¹⁴ in f16). Steps where an operand, a product or a partial sum may exceed the largest
/// finite value are marked in [`MulMmBounds::may_overflow`] (see [`MulMmBounds::judged_want`]).
///
/// `a_rows`/`b_rows` are the exact values of A's and B's rows (K each, as the reference
/// decodes them); dst column c (an (n, batch) or (slot, token) pair) multiplies A rows
/// `columns[c].0 .. + m` by B row `columns[c].1`; dst is column-major, M fastest.
pub fn mul_mm_bounds(
    arith: &MulMmArith,
    k: usize,
    m: usize,
    a_rows: &[f64],
    b_rows: &[f64],
    columns: &[(usize, usize)],
) -> MulMmBounds {
    mul_mm_bounds_lanes::<LANES>(arith, k, m, a_rows, b_rows, columns)
}

/// Output rows whose chains [`mul_mm_bounds`] steps together: the same B element meets
/// LANES A rows, and the step's ~30 operations become vector operations. Each lane is the
/// very same arithmetic as one row alone (the tests compare against one lane, bit for bit).
const LANES: usize = 8;

/// [`mul_mm_bounds`] with the rows of a column taken `L` at a time (the last group padded
/// with copies of its last row, whose results are dropped).
fn mul_mm_bounds_lanes<const L: usize>(
    arith: &MulMmArith,
    k: usize,
    m: usize,
    a_rows: &[f64],
    b_rows: &[f64],
    columns: &[(usize, usize)],
) -> MulMmBounds {
    use rayon::prelude::*;
    let errors = |rows: &[f64], pre32: bool, fmt: Fp| -> (Vec<f64>, Vec<bool>) {
        rows.par_iter()
            .map(|&x| mul_mm_operand_error(x, pre32, fmt))
            .unzip()
    };
    let (ea, oa) = errors(a_rows, arith.a_min_rounding, arith.a_operand);
    let (eb, ob) = errors(b_rows, false, arith.b_operand);
    let split_k = arith.split_k.max(1);
    let k_split = if split_k > 1 { arith.k_split } else { k };
    let splits: Vec<(usize, usize)> = (0..split_k)
        .map(|s| ((s * k_split).min(k), ((s + 1) * k_split).min(k)))
        .collect();
    let model = ChainModel {
        unit: arith.acc.constants(),
        exact: arith.exact_products(),
    };
    // A rows go L at a time into interleaved copies (lane fastest: one load a step), made
    // once per distinct first row, i.e. per A matrix the columns use.
    let mut firsts: Vec<usize> = columns.iter().map(|c| c.0).collect();
    firsts.sort_unstable();
    firsts.dedup();
    let groups = m.div_ceil(L);
    let interleaved: Vec<Vec<LaneGroup<L>>> = firsts
        .par_iter()
        .map(|&a_first| {
            (0..groups)
                .map(|g| {
                    let rows: [usize; L] =
                        std::array::from_fn(|l| a_first + (g * L + l).min(m - 1));
                    LaneGroup::new(rows.map(|r| r * k..(r + 1) * k), a_rows, &ea, &oa, &splits)
                })
                .collect()
        })
        .collect();
    let mut bounds = vec![0.0; m * columns.len()];
    let mut may_overflow = vec![false; m * columns.len()];
    bounds
        .par_chunks_mut(m.max(1))
        .zip(may_overflow.par_chunks_mut(m.max(1)))
        .zip(columns.par_iter())
        .for_each(|((out, ovf_out), &(a_first, b_row))| {
            let b = &b_rows[b_row * k..][..k];
            let (eb, ob) = (&eb[b_row * k..][..k], &ob[b_row * k..][..k]);
            let matrix = &interleaved[firsts.binary_search(&a_first).unwrap()];
            for (g, group) in matrix.iter().enumerate() {
                let (mut total, mut total_err, mut ovf) = ([0.0; L], [0.0; L], [false; L]);
                for (s, &(from, to)) in splits.iter().enumerate() {
                    let mut chain = model.run(SplitInputs {
                        xs: &group.xs[from..to],
                        exs: &group.exs[from..to],
                        b: &b[from..to],
                        eb: &eb[from..to],
                    });
                    let b_ovf = ob[from..to].iter().any(|&o| o);
                    for l in 0..L {
                        // An operand that may round to ±∞ (the step's e_in is then infinite).
                        chain.ovf[l] |= b_ovf || group.operand_ovf[s][l];
                        // A kernel that adds the same products in another order (upstream's
                        // loaders, a compiler's reassociation) has partial sums up to Σ|a·b|
                        // plus the errors: past the largest finite value some order
                        // overflows. (Seen on the H100: upstream's f16-accumulator matmul gave
                        // ±∞ where k-ascending partial sums stay below 65504.) NaN-safe: a
                        // NaN magnitude counts as overflow too.
                        chain.ovf[l] |= chain.mag[l].partial_cmp(&arith.acc.overflow())
                            != Some(std::cmp::Ordering::Less);
                        if chain.ovf[l] && split_k > 1 {
                            // Later upstream clamps each split's accumulators to ±ACC_TYPE_MAX
                            // before the f32 reduce (§12 later-changed 7), so an overflowing split
                            // adds a finite ±65504 whatever its exact partial (|·| ≤ mag): the
                            // result stays finite, off by at most 65504 + mag for this split.
                            chain.err[l] += arith.acc.overflow() + chain.mag[l];
                        }
                        ovf[l] |= chain.ovf[l];
                        (total[l], total_err[l]) = add_split(
                            split_k == 1,
                            (total[l], total_err[l]),
                            (chain.sum[l], chain.err[l]),
                        );
                    }
                }
                let first = g * L;
                for l in 0..L.min(m - first) {
                    out[first + l] = total_err[l];
                    ovf_out[first + l] = ovf[l] || !total_err[l].is_finite();
                }
            }
        });
    MulMmBounds {
        bounds,
        may_overflow,
    }
}

/// L rows of A interleaved, lane fastest: values, their operand errors, and per split whether
/// one of the lane's operands may round to ±∞.
struct LaneGroup<const L: usize> {
    xs: Vec<[f64; L]>,
    exs: Vec<[f64; L]>,
    operand_ovf: Vec<[bool; L]>,
}

impl<const L: usize> LaneGroup<L> {
    fn new(
        rows: [std::ops::Range<usize>; L],
        values: &[f64],
        errors: &[f64],
        may_overflow: &[bool],
        splits: &[(usize, usize)],
    ) -> Self {
        let k = rows[0].len();
        let (values, errors) = (rows.clone().map(|r| &values[r]), rows.clone().map(|r| &errors[r]));
        let may_overflow = rows.map(|r| &may_overflow[r]);
        Self {
            xs: (0..k).map(|kk| values.map(|v| v[kk])).collect(),
            exs: (0..k).map(|kk| errors.map(|e| e[kk])).collect(),
            operand_ovf: splits
                .iter()
                .map(|&(from, to)| may_overflow.map(|o| o[from..to].iter().any(|&o| o)))
                .collect(),
        }
    }
}

/// The accumulator's constants for [`mul_mm_bounds`]'s chains.
#[derive(Clone, Copy)]
struct ChainModel {
    unit: FpConstants,
    /// [`MulMmArith::exact_products`].
    exact: bool,
}

/// The state of L chains after a split's steps: exact partial sum, error bound, the sum of
/// the step magnitudes (for other orders' overflow) and whether a step may overflow.
struct Chains<const L: usize> {
    sum: [f64; L],
    err: [f64; L],
    mag: [f64; L],
    ovf: [bool; L],
}

/// One split of L chains: lane l multiplies `xs[k][l]` (error `exs[k][l]`) by `b[k]` (error
/// `eb[k]`).
#[derive(Clone, Copy)]
struct SplitInputs<'a, const L: usize> {
    xs: &'a [[f64; L]],
    exs: &'a [[f64; L]],
    b: &'a [f64],
    eb: &'a [f64],
}

impl ChainModel {
    /// Runs L chains over one split. Operands that may round to ±∞ are the caller's to flag.
    fn run<const L: usize>(self, split: SplitInputs<L>) -> Chains<L> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F (checked just above).
                return unsafe { self.run_avx512(split) };
            }
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2 (checked just above).
                return unsafe { self.run_avx2(split) };
            }
        }
        self.run_portable(split)
    }

    /// The same code compiled for eight f64 lanes a vector: one vector per [`LANES`] chains
    /// (no FMA is enabled here either, so the bits are the portable build's).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn run_avx512<const L: usize>(self, split: SplitInputs<L>) -> Chains<L> {
        self.run_portable(split)
    }

    /// The same code compiled for four f64 lanes a vector (no FMA is enabled: every
    /// operation rounds as in the portable build, so the bits are the same).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn run_avx2<const L: usize>(self, split: SplitInputs<L>) -> Chains<L> {
        self.run_portable(split)
    }

    /// One step per k, as [`mul_mm_bounds`] describes (D, E_k). Every choice is a select or
    /// one of [`FpConstants`]' small ifs, which LLVM turns into selects, so the lanes
    /// vectorize.
    #[inline(always)]
    fn run_portable<const L: usize>(self, split: SplitInputs<L>) -> Chains<L> {
        let SplitInputs { xs, exs, b, eb } = split;
        let unit = self.unit;
        let (mut sum, mut err, mut mag, mut ovf) = ([0.0f64; L], [0.0f64; L], [0.0f64; L], [false; L]);
        for (((x, ex), &y), &ey) in xs.iter().zip(exs).zip(b).zip(eb) {
            let ay = y.abs();
            for l in 0..L {
                let (x, ex) = (x[l], ex[l]);
                let ax = x.abs();
                // An operand that surely overflows makes the product undefined (∞·0 is NaN,
                // so no arithmetic on the bounds there).
                let finite = ex.is_finite() && ey.is_finite();
                let e_in = select(finite, ax * ey + ay * ex + ex * ey, f64::INFINITY);
                let hi = select(finite, (ax + ex) * (ay + ey), f64::INFINITY);
                let lo = (ax - ex).max(0.0) * (ay - ey).max(0.0);
                let e_p = select(
                    self.exact,
                    unit.flushing(lo, hi),
                    unit.rounding(lo, hi),
                );
                // The running sum as an input may be a flushed subnormal.
                let s = sum[l].abs();
                let e_sin = unit.flushing((s - err[l]).max(0.0), s + err[l]);
                sum[l] += x * y;
                let d = err[l] + e_in + e_p + e_sin;
                let s = sum[l].abs();
                let (xlo, xhi) = ((s - d).max(0.0), s + d);
                ovf[l] |= !(hi < unit.overflow && xhi < unit.overflow);
                err[l] = d + unit.rounding(xlo, xhi);
                mag[l] += hi + d;
            }
        }
        Chains { sum, err, mag, ovf }
    }
}

#[inline(always)]
fn select(c: bool, a: f64, b: f64) -> f64 {
    if c {
        a
    } else {
        b
    }
}

#[cfg(test)]
mod mul_mm_tests {
    use super::*;

    fn arith(acc: Fp) -> MulMmArith {
        MulMmArith {
            a_min_rounding: false,
            a_operand: Fp::F16,
            b_operand: Fp::F16,
            acc,
            split_k: 1,
            k_split: 0,
        }
    }

    #[test]
    fn vector_builds_give_the_portable_bits() {
        // The chain step picked at run time (AVX-512, AVX2) against the portable build, on
        // values across the formats' ranges: no FMA is enabled, so every bit must agree.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let value = |rng: &mut rand_chacha::ChaCha8Rng| match rng.gen_range(0..300) {
            0 => 0.0,
            1 => f64::INFINITY,
            2 => 70000.0,
            3 => 2f64.powi(-20) * rng.gen_range(-4.0..4.0),
            _ => rng.gen_range(-300.0f64..300.0) * 2f64.powi(rng.gen_range(-12..3)),
        };
        for k in [1, 7, 64, 300] {
            let xs: Vec<[f64; LANES]> =
                (0..k).map(|_| std::array::from_fn(|_| value(&mut rng))).collect();
            let exs: Vec<[f64; LANES]> = (0..k)
                .map(|_| std::array::from_fn(|_| value(&mut rng).abs() * 1e-3))
                .collect();
            let b: Vec<f64> = (0..k).map(|_| value(&mut rng)).collect();
            let eb: Vec<f64> = (0..k).map(|_| value(&mut rng).abs() * 1e-3).collect();
            for acc in [Fp::F16, Fp::F32] {
                for exact in [false, true] {
                    let model = ChainModel {
                        unit: acc.constants(),
                        exact,
                    };
                    let split = SplitInputs {
                        xs: &xs,
                        exs: &exs,
                        b: &b,
                        eb: &eb,
                    };
                    let (fast, plain) = (model.run(split), model.run_portable(split));
                    let bits = |v: &[f64; LANES]| v.map(|x| if x.is_nan() { 1 } else { x.to_bits() });
                    assert_eq!(bits(&fast.sum), bits(&plain.sum), "k {k} {acc:?} {exact}");
                    assert_eq!(bits(&fast.err), bits(&plain.err), "k {k} {acc:?} {exact}");
                    assert_eq!(bits(&fast.mag), bits(&plain.mag), "k {k} {acc:?} {exact}");
                    assert_eq!(fast.ovf, plain.ovf);
                }
            }
        }
    }

    #[test]
    fn lanes_give_the_bits_of_one_row_at_a_time() {
        // Values across the formats' ranges (f16 overflow, subnormals, zeros, ±∞, NaN) in
        // several A matrices, with and without splits and exact products.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let value = |rng: &mut rand_chacha::ChaCha8Rng| match rng.gen_range(0..400) {
            0 => 0.0,
            1 => f64::INFINITY,
            2 => f64::NAN,
            3 => 70000.0,
            4 => 2f64.powi(-20) * rng.gen_range(-4.0..4.0),
            _ => rng.gen_range(-300.0f64..300.0) * 2f64.powi(rng.gen_range(-12..3)),
        };
        for (m, k, split_k) in [(13, 37, 1), (8, 64, 3), (3, 5, 2), (17, 200, 1)] {
            let a: Vec<f64> = (0..3 * m * k).map(|_| value(&mut rng)).collect();
            let b: Vec<f64> = (0..5 * k).map(|_| value(&mut rng)).collect();
            let columns: Vec<(usize, usize)> = (0..5).map(|c| ((c % 3) * m, c)).collect();
            for acc in [Fp::F16, Fp::F32] {
                for a_operand in [Fp::F16, Fp::F32] {
                    let ar = MulMmArith {
                        a_min_rounding: split_k == 3,
                        a_operand,
                        b_operand: Fp::F16,
                        acc,
                        split_k,
                        k_split: k.div_ceil(split_k),
                    };
                    let one = mul_mm_bounds_lanes::<1>(&ar, k, m, &a, &b, &columns);
                    let lanes = mul_mm_bounds(&ar, k, m, &a, &b, &columns);
                    // Bits, any NaN as one (vector and scalar code make NaNs of either sign).
                    let bits = |v: &[f64]| {
                        v.iter()
                            .map(|x| if x.is_nan() { 1 } else { x.to_bits() })
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(bits(&one.bounds), bits(&lanes.bounds), "{m}×{k}/{split_k} {ar:?}");
                    assert_eq!(one.may_overflow, lanes.may_overflow);
                }
            }
        }
    }

    #[test]
    fn exact_f16_inputs_in_f32_cost_one_rounding_per_add() {
        // 1·1 + 2·1 + 3·1: operands exact in f16, products exact in f32; the adds round at
        // most u32 of |1|, |3| and |6|.
        let b = mul_mm_bounds(
            &arith(Fp::F32),
            3,
            1,
            &[1., 2., 3.],
            &[1., 1., 1.],
            &[(0, 0)],
        );
        assert!(
            (b.bounds[0] / (U32 * (1.0 + 3.0 + 6.0)) - 1.0).abs() < 1e-6,
            "{}",
            b.bounds[0]
        );
        assert!(!b.may_overflow[0]);
    }

    #[test]
    fn a_clamped_overflowing_split_stays_within_the_bound() {
        // Two splits of two keys with f16 accumulators: the first split's partial 80000 passes
        // 65504, later upstream clamps it and the f32 reduce adds the second split's 2, so a
        // finite 65506 comes back where the exact value is 80002.
        let mut ar = arith(Fp::F16);
        (ar.split_k, ar.k_split) = (2, 2);
        let a = [40000., 40000., 1., 1.];
        let b = mul_mm_bounds(&ar, 4, 1, &a, &[1.; 4], &[(0, 0)]);
        assert!(b.may_overflow[0]);
        assert!(b.bounds[0] >= 80002.0 - 65506.0, "{}", b.bounds[0]);
        // Without a split nothing is added (an overflow is ±∞ or ±65504, judged apart), and a
        // split that cannot overflow is charged nothing either.
        let one = mul_mm_bounds(&arith(Fp::F16), 4, 1, &a, &[1.; 4], &[(0, 0)]);
        assert!(one.bounds[0] < 1000.0, "{}", one.bounds[0]);
        let small = mul_mm_bounds(&ar, 4, 1, &[3., 5., 1., 1.], &[1.; 4], &[(0, 0)]);
        assert!(!small.may_overflow[0] && small.bounds[0] < 1.0);
    }

    #[test]
    fn split_candidates_cover_both_hosts() {
        // The pin: 1–4 with ⌈K/split⌉; later upstream: up to 8, k_split a multiple of 256.
        let c = split_candidates(2048);
        assert!(c.contains(&(4, 512)) && c.contains(&(8, 256)), "{c:?}");
        // K = 2304: 8 → 5 splits of 512 (six or more would leave the last split empty).
        assert!(split_candidates(2304).contains(&(5, 512)));
        assert!(!split_candidates(2304).contains(&(8, 288)));
        assert_eq!(split_candidates(1), vec![(1, 1)]);
    }

    #[test]
    fn f16_accumulators_charge_products_and_adds() {
        let u = Fp::F16.unit();
        let b = mul_mm_bounds(&arith(Fp::F16), 2, 1, &[3., 5.], &[1., 1.], &[(0, 0)]);
        // Step 1: product 3 (rounding ≤ 3u), sum ≤ 3 + 3u (≤ (3 + 3u)u).
        let e1 = 3.0 * u + (3.0 + 3.0 * u) * u;
        // Step 2: product 5 (5u), sum within e1 + 5u of 8.
        let d2 = e1 + 5.0 * u;
        let e2 = d2 + (8.0 + d2) * u;
        assert!((b.bounds[0] - e2).abs() < 1e-15, "{} vs {e2}", b.bounds[0]);
    }

    #[test]
    fn f32_operands_are_rounded_to_f16_and_overflow_is_flagged() {
        let x = 1.0 + 2f64.powi(-20); // not an f16 number
        let b = mul_mm_bounds(&arith(Fp::F32), 1, 2, &[x, 70000.0], &[1.0], &[(0, 0)]);
        assert!(b.bounds[0] >= 2f64.powi(-20) * 0.99 && b.bounds[0] < 2f64.powi(-10));
        assert!(!b.may_overflow[0]);
        assert!(b.may_overflow[1], "70000 has no f16 value");
        // In an f16 accumulator 300·300 overflows.
        let b = mul_mm_bounds(&arith(Fp::F16), 1, 1, &[300.0], &[300.0], &[(0, 0)]);
        assert!(b.may_overflow[0]);
        let got = [f32::INFINITY];
        assert!(b.judged_bounds(&got)[0].is_nan());
        assert_eq!(b.judged_bounds(&[1.0])[0], b.bounds[0]);
    }

    #[test]
    fn specials_are_judged_where_every_order_agrees() {
        let (f16, f32) = (Fp::F16, Fp::F32);
        let sp = |a: &[f64], b: &[f64], acc| dot_special(a, b, f16, f32, acc, true);
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        assert_eq!(sp(&[1.0, 2.0], &[3.0, 4.0], f32), Special::Finite);
        assert_eq!(sp(&[1.0, nan], &[3.0, 4.0], f32), Special::Nan);
        assert_eq!(sp(&[1.0, 2.0], &[nan, 4.0], f32), Special::Nan);
        assert_eq!(sp(&[inf, 2.0], &[0.0, 4.0], f32), Special::Nan, "∞·0");
        assert_eq!(sp(&[inf, -inf], &[1.0, 1.0], f32), Special::Nan, "∞ − ∞");
        assert_eq!(sp(&[inf, 2.0], &[1.0, -4.0], f32), Special::Inf(inf));
        assert_eq!(sp(&[inf, 2.0], &[-1.0, 4.0], f32), Special::Inf(-inf));
        // A partner that may be flushed (f32 subnormal) gives NaN or ∞.
        assert_eq!(sp(&[inf], &[1e-40], f32), Special::Undefined);
        // In f16 the finite part −300·300 may overflow to −∞ before +∞ arrives.
        assert_eq!(sp(&[inf, 300.0], &[1.0, -300.0], f16), Special::Undefined);
        assert_eq!(sp(&[inf, 30.0], &[1.0, -30.0], f16), Special::Inf(inf));
        // An operand that may round to ±∞ in its format.
        assert_eq!(sp(&[inf, 70000.0], &[1.0, -1.0], f16), Special::Undefined);
        // Block formats: a non-finite decoded value depends on the kernel, unless B is NaN.
        let q = |a: &[f64], b: &[f64]| dot_special(a, b, f16, f32, f32, false);
        assert_eq!(q(&[nan, 1.0], &[1.0, 1.0]), Special::Undefined);
        assert_eq!(q(&[inf, 1.0], &[1.0, nan]), Special::Nan);
        assert_eq!(q(&[2.0], &[inf]), Special::Undefined);
        assert_eq!(q(&[0.0], &[inf]), Special::Nan);
    }

    #[test]
    fn subnormal_f16_operands_may_be_flushed() {
        let tiny = 2f64.powi(-20); // an f16 subnormal
        let b = mul_mm_bounds(&arith(Fp::F32), 1, 1, &[tiny], &[1.0], &[(0, 0)]);
        assert!(b.bounds[0] >= tiny, "the whole product may vanish");
    }

    #[test]
    fn staged_operands_for_the_step_model() {
        let x = 1.0 + 2f64.powi(-20); // not an f16 number: one rounding to f16
        let e = staged_operand_errors(&[x, 0.5, 70000.0], false, Fp::F16);
        assert!(e[0].unwrap() >= 2f64.powi(-20) * 0.99 && e[0].unwrap() < 2f64.powi(-10));
        assert_eq!(e[1], Some(0.0), "exact in f16");
        assert_eq!(e[2], None, "70000 has no f16 value");
        // A min type rounds in f32 first: more than the f16 rounding alone.
        let y = 3.0 + 2f64.powi(-30);
        let (a, b) = (
            staged_operand_errors(&[y], true, Fp::F16)[0].unwrap(),
            staged_operand_errors(&[y], false, Fp::F16)[0].unwrap(),
        );
        assert!(a > b, "{a} vs {b}");
    }

    #[test]
    fn splits_add_one_f32_rounding_each() {
        let mut a = arith(Fp::F32);
        (a.split_k, a.k_split) = (2, 1);
        let one = mul_mm_bounds(&arith(Fp::F32), 2, 1, &[1., 2.], &[1., 1.], &[(0, 0)]);
        let two = mul_mm_bounds(&a, 2, 1, &[1., 2.], &[1., 1.], &[(0, 0)]);
        // Unsplit: adds of 1 and 3. Split: 1 and 2 alone, then the reduce's 1 and 3.
        assert!((one.bounds[0] / (U32 * 4.0) - 1.0).abs() < 1e-6);
        assert!((two.bounds[0] / (U32 * (1.0 + 2.0 + 1.0 + 3.0)) - 1.0).abs() < 1e-6);
    }
}

