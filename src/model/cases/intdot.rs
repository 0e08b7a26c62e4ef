//! The error model of ggml's integer-dot paths, where B (the activations, f32) is first
//! quantized to q8_1 blocks and each block of A is multiplied with them by exact integer dot
//! products: mat-vec (MMVQ, `mul_mat_vecq`), matrix-matrix and MUL_MAT_ID (MMQ, `mul_mmq`).
//! ggml takes these paths on a device with 4×8-bit packed signed integer-dot acceleration; a
//! model here is a candidate beside the float path's, for the A types that have one.
//!
//! **The quantization** ([`quantize_q8_1`]): per 32 consecutive elements x of a B row, in f32,
//! amax = max|x|, d = amax/127, d⁻¹ = 1/d (0 where d = 0), q = round(x·d⁻¹) as int8, Σq summed
//! exactly (integers), and stored: d as f16, s = f16(Σq·d) (the f32 d). Layout (the x4 blocks of
//! newer trees' mat-vec: four blocks' scales, then their quants) changes nothing of this.
//! vkdiff redoes this in f32 and takes b̂ = d₁₆·q as the B the integer path multiplies. What a
//! device may do differently, and what each costs in the bound:
//!
//! * Division is only accurate to 2.5 ulp in Vulkan (d and d⁻¹ both), so x·d⁻¹ is within
//!   11 f32 units (we allow 16) of x·127/amax. An element whose exact x·127/amax is that close
//!   to a half-integer (a *tie*: GLSL `round` also leaves halfway cases to the implementation)
//!   may be quantized to either neighbour: ±1 step, |a_i|·d₁₆ of latitude. A subnormal x may be
//!   flushed to 0: |q|+1 steps. No other element gets any.
//! * The f32 d may differ by 5 units, so its f16 may be the adjacent f16 value where the exact
//!   amax/127 lies near a rounding boundary between two (or 0, if it is an f16 subnormal the
//!   conversion flushes): |Δd|·Σ|a_i|·|q_i| for that block.
//! * The stored sum s stands for d₁₆·Σq in the bodies that use it (A types with an offset or a
//!   minimum), but is rounded on its own: such a body adds c·(d₁₆·Σq − s) to Σ a_i·b̂_i, c the
//!   block's offset coefficient ([`offset_coefs`]). vkdiff's quantization gives that term
//!   exactly (it is part of the centre, not of the bound: it is as large as 2⁻¹¹·|c·s|, and a
//!   bound that held it would hide a wrong scale); a device's may differ by what its own f32 d
//!   (5 units), Σq (ties) and the f16 roundings of d and s (or their flushing) allow: the
//!   extremes of d′·Σ′ − s′ over those, times |c|.
//!
//! Blocks ggml's arithmetic cannot represent leave their outputs unjudged (a NaN bound), each
//! for a named reason: a NaN or ±∞ in B's block (d or q is then NaN or ±∞), d beyond f16's
//! range, and, for the bodies that use s, Σq·d beyond f16's range or d below f32's normal
//! range (1/d may overflow: q and s become NaN).
//!
//! **The integer-dot bodies** ([`int_dot_candidate`]): each body computes, per piece of K (one
//! q8_1 block, or 8 or 16 of its elements), the exact integer Σ p·q of A's integer codes p with
//! B's quants, then a few f32 products with the scales (A's α, B's d₁₆) and, for offset types,
//! minus c·s. With v_i = α·p_i = a_i + c (a the exact A value), a piece is exactly
//! d₁₆·Σ v_i·q_i − c·s, i.e. Σ a_i·b̂_i + c·(d₁₆·Σq − s). The pieces are summed in f32 along a
//! chain of depth [`mmvq_depth`] or [`mmq_depth`]. Every rounding is relative to a partial
//! result bounded by M = Σ|a_i|·|b̂_i| + 2·Σ_blocks |c|·Σ|b̂_i| (|v_i| ≤ |a_i| + |c|, |c·s| ≤
//! |c|·Σ|b̂_i|), so the bound around the centre Σ a_i·b̂_i is
//! γ(depth)·M + ties + Δd + Δs + a subnormal floor, around Σ a_i·b̂_i + Σ_blocks c·(d₁₆·Σq − s). MMQ compiled with fp16 keeps A's scale
//! products (d·sc) in f16 in shared memory: one more f16 rounding, u₁₆·M. The July 2025 tree's
//! MMQ (q4_0 … q8_0, MUL_MAT only) accumulates in f16 at GGML_PREC_DEFAULT on fp16 devices:
//! each piece is rounded to f16 and summed there, γ₁₆(chain + 1) more (and f16's range).

use half::f16;
use vkdiff_reference::DType;

use crate::model::tolerance::{gamma, gamma_of, subnormal_floor, Fp, U16, U32};

/// Elements per q8_1 block.
pub const QK8_1: usize = 32;

/// Relative error allowed between a device's x·d⁻¹ and the exact x·127/amax, in f32 units:
/// 2.5 ulp for the division d = amax/127, 2.5 for 1/d (Vulkan's precision for OpFDiv), 0.5 for
/// the product, each ulp two units; 11, rounded up.
const QUANT_UNITS: f64 = 16.0;
/// Relative error of a device's f32 d against the exact amax/127 (2.5 ulp).
const D_UNITS: f64 = 5.0;

/// One q8_1 block as ggml's quantize shader writes it, with what a device may write instead.
#[derive(Debug, Clone, PartialEq)]
pub struct Q8_1Block {
    /// The stored scale d₁₆ (f16, as f64).
    pub d: f64,
    /// The largest |d₁₆ − d′| over the f16 scales d′ a device may store instead (0 if none).
    pub d_spread: f64,
    /// The exact amax/127.
    pub d_exact: f64,
    /// The quants.
    pub q: [i8; QK8_1],
    /// Per element, the quant steps a device may differ by: 0, 1 at a tie, |q|+1 for a
    /// subnormal x (flushable).
    pub latitude: [u8; QK8_1],
    /// Σq.
    pub sum_q: i32,
    /// The stored sum s = f16(Σq·d) of vkdiff's f32 quantization (as f64).
    pub s: f64,
    /// d₁₆·Σq − s: what a body that uses s adds, times the offset coefficient c, beyond
    /// Σ a_i·b̂_i (part of the centre).
    pub sum_error: f64,
    /// The most a device's d′·Σq′ − s′ may differ from [`Q8_1Block::sum_error`] (the f32 d and
    /// Σq′ it may have, the f16 values they round to, flushing).
    pub sum_error_spread: f64,
    /// Why outputs that use this block are left unjudged, if they are.
    pub undefined: Option<&'static str>,
    /// Why outputs whose body uses the stored sum s are left unjudged, if they are.
    pub no_sum: Option<&'static str>,
}

impl Q8_1Block {
    /// b̂_i = d₁₆·q_i.
    pub fn value(&self, i: usize) -> f64 {
        self.d * f64::from(self.q[i])
    }
}

/// Quantizes `x` (a multiple of 32 elements) to q8_1 exactly as ggml's quantize shader does in
/// f32 (module doc), marking ties and ambiguous scales.
pub fn quantize_q8_1(x: &[f32]) -> Vec<Q8_1Block> {
    assert!(x.len() % QK8_1 == 0, "q8_1 takes whole blocks of 32");
    x.chunks_exact(QK8_1).map(quantize_block).collect()
}

fn quantize_block(x: &[f32]) -> Q8_1Block {
    let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let d32 = amax / 127.0;
    let d_inv = if d32 != 0.0 { 1.0 / d32 } else { 0.0 };
    let mut q = [0i8; QK8_1];
    let mut latitude = [0u8; QK8_1];
    let mut sum = 0.0f32;
    let exact_inv = if amax > 0.0 {
        127.0 / f64::from(amax)
    } else {
        0.0
    };
    for (i, &v) in x.iter().enumerate() {
        let r = (v * d_inv).round();
        sum += r;
        q[i] = r as i8;
        let t = f64::from(v) * exact_inv;
        let off = (t.abs().fract() - 0.5).abs();
        if v != 0.0 && v.abs() < f32::MIN_POSITIVE {
            latitude[i] = q[i].unsigned_abs().saturating_add(1);
        } else if off <= t.abs() * QUANT_UNITS * U32 + f64::MIN_POSITIVE {
            latitude[i] = 1;
        }
    }
    let d_exact = f64::from(amax) / 127.0;
    let d = f16::from_f32(d32).to_f64();
    let mut spread = 0.0f64;
    for cand in [
        d_exact * (1.0 - D_UNITS * U32),
        d_exact * (1.0 + D_UNITS * U32),
    ] {
        let c = f16::from_f64(cand).to_f64();
        spread = spread.max((c - d).abs());
        if c != 0.0 && c.abs() < Fp::F16.min_normal() {
            spread = spread.max(d.abs());
        }
    }
    let sum_q = sum as i32;
    let s = f16::from_f32(sum * d32).to_f64();
    let sum_error = d * f64::from(sum_q) - s;
    let ties: i32 = latitude.iter().map(|&l| i32::from(l)).sum();
    let sum_error_spread = sum_spread(d_exact, sum_q, ties, sum_error);
    let mut block = Q8_1Block {
        d,
        d_spread: spread,
        d_exact,
        q,
        latitude,
        sum_q,
        s,
        sum_error,
        sum_error_spread,
        undefined: None,
        no_sum: None,
    };
    if x.iter().any(|v| !v.is_finite()) {
        block.undefined = Some("a NaN or ±∞ in a q8_1 block of B");
    } else if d_exact * (1.0 + D_UNITS * U32) >= Fp::F16.overflow() {
        block.undefined = Some("B's q8_1 scale amax/127 is beyond f16's range");
    } else if d_exact * f64::from(sum_q.abs() + ties) * (1.0 + 2.0 * U16) >= Fp::F16.overflow() {
        block.no_sum = Some("B's q8_1 sum Σq·d is beyond f16's range");
    } else if d_exact > 0.0 && d_exact < f64::from(f32::MIN_POSITIVE) {
        block.no_sum = Some("B's q8_1 scale amax/127 is an f32 subnormal (1/d may overflow)");
    }
    block
}

/// The f16 values a device may store for a value in [lo, hi] (lo ≤ hi): the roundings of the
/// ends (rounding is monotone), and 0 where an f16 subnormal may be flushed.
fn f16_ends(lo: f64, hi: f64) -> Vec<f64> {
    let mut v = vec![f16::from_f64(lo).to_f64(), f16::from_f64(hi).to_f64()];
    if v.iter().any(|x| x.abs() < Fp::F16.min_normal()) {
        v.push(0.0);
    }
    v
}

/// The most d′·Σ′ − s′ of a device may differ from `e0`, over Σ′ within `ties` of `sum_q`, its
/// f32 d within [`D_UNITS`] units of `d_exact` (d′ its f16) and s′ the f16 of the f32 product
/// Σ′·d. d′·Σ′ − s′ is linear in d′ and in s′, so their extreme values suffice.
fn sum_spread(d_exact: f64, sum_q: i32, ties: i32, e0: f64) -> f64 {
    let (d_lo, d_hi) = (
        d_exact * (1.0 - D_UNITS * U32),
        d_exact * (1.0 + D_UNITS * U32),
    );
    let ds = f16_ends(d_lo, d_hi);
    let mut worst = 0.0f64;
    for sigma in sum_q - ties..=sum_q + ties {
        let sg = f64::from(sigma);
        let (y1, y2) = (sg * d_lo, sg * d_hi);
        // The f32 product rounds by at most u relative.
        let (a, b) = (y1.min(y2), y1.max(y2));
        let (ylo, yhi) = (a - a.abs() * U32, b + b.abs() * U32);
        for &s in &f16_ends(ylo, yhi) {
            for &d in &ds {
                worst = worst.max((d * sg - s - e0).abs());
            }
        }
    }
    worst
}

/// Which integer-dot path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntDotPath {
    /// Mat-vec, `mul_mat_vecq` (1–8 columns; MUL_MAT_ID's mat-vec too).
    Mmvq,
    /// Matrix-matrix, `mul_mmq` (MUL_MAT and MUL_MAT_ID).
    Mmq,
}

/// Mat-vec (MMVQ) A types, in the recent tree's order.
const MMVQ_TYPES: &[DType] = &[
    DType::Q4_0,
    DType::Q4_1,
    DType::Q5_0,
    DType::Q5_1,
    DType::Q8_0,
    DType::Q2_0,
    DType::Mxfp4,
    DType::Q2_K,
    DType::Q3_K,
    DType::Q4_K,
    DType::Q5_K,
    DType::Q6_K,
    DType::Iq1S,
    DType::Iq1M,
    DType::Iq4Xs,
];

/// Matrix-matrix (MMQ) A types.
const MMQ_TYPES: &[DType] = &[
    DType::Q4_0,
    DType::Q4_1,
    DType::Q5_0,
    DType::Q5_1,
    DType::Q8_0,
    DType::Q2_0,
    DType::Mxfp4,
    DType::Q2_K,
    DType::Q3_K,
    DType::Q4_K,
    DType::Q5_K,
    DType::Q6_K,
    DType::Iq3S,
    DType::Iq4Xs,
    // cm1 devices only (`mul_mmq_cm1.comp`; no scalar MMQ body), on RDNA4 not at all.
    DType::Nvfp4,
];

/// The A types vkdiff knows that have an integer-dot body on `path` in the recent registry
/// tree (llama.cpp 2026-11: `mul_mat_vecq_funcs.glsl`, `mul_mmq_funcs.glsl`). q2_0's body is
/// q4_0's with offset 1 (da·(Σq·db − s/2), 16 codes a piece). mxfp4's codes are integers times its block
/// scale, like q8_0's, so its bodies are modelled as q8_0's (no offset, default depths). MMQ's iq4_nl body is cm1-only.
pub fn int_dot_types(path: IntDotPath) -> &'static [DType] {
    match path {
        IntDotPath::Mmvq => MMVQ_TYPES,
        IntDotPath::Mmq => MMQ_TYPES,
    }
}

/// Whether A type `a`'s integer-dot bodies subtract the stored sum s of B's block (times the
/// offset coefficient c): the offset and minimum formats.
pub fn uses_stored_sum(a: DType) -> bool {
    matches!(
        a,
        DType::Q4_0
            | DType::Q2_0
            | DType::Q5_0
            | DType::Q4_1
            | DType::Q5_1
            | DType::Q4_K
            | DType::Q5_K
            | DType::Iq1S
    )
}

/// Per 32-element block of one A row (`row`: its bytes), the signed offset coefficient c with
/// α·p_i = a_i + c (the integer codes' part of each value): q4_0 8·d, q2_0 d, q5_0 16·d, q4_1 and q5_1
/// −m, q4_K and q5_K dmin·m of the sub-block, iq1_s dl·(1 − δ); q2_K, whose mins change every
/// 16 elements and whose bodies sum them with integer dots, the larger dmin·m of the two halves
/// (only its magnitude enters the model). 0 for every other type.
pub fn offset_coefs(a: DType, row: &[u8]) -> Vec<f64> {
    let f16_at = |b: &[u8], at: usize| f16::from_le_bytes([b[at], b[at + 1]]).to_f64();
    let per_block = a.block_len() / QK8_1;
    let mut out = Vec::with_capacity(row.len() / a.block_bytes() * per_block);
    for b in row.chunks_exact(a.block_bytes()) {
        for j in 0..per_block {
            out.push(match a {
                DType::Q4_0 => 8.0 * f16_at(b, 0),
                DType::Q2_0 => f16_at(b, 0),
                DType::Q5_0 => 16.0 * f16_at(b, 0),
                DType::Q4_1 | DType::Q5_1 => -f16_at(b, 2),
                DType::Q4_K | DType::Q5_K => {
                    let scales: &[u8; 12] = b[4..16].try_into().expect("12 scale bytes");
                    let (_, m) = vkdiff_reference::formats::scale_min_k4(scales, j);
                    f16_at(b, 2) * f64::from(m)
                }
                DType::Q2_K => {
                    let m = (b[2 * j] >> 4).max(b[2 * j + 1] >> 4);
                    f16_at(b, 82) * f64::from(m)
                }
                DType::Iq1S => {
                    let h = u16::from_le_bytes([b[34 + 2 * j], b[35 + 2 * j]]);
                    let dl = f16_at(b, 0) * f64::from(2 * ((h >> 12) & 7) + 1);
                    let delta = if h & 0x8000 != 0 { -0.125 } else { 0.125 };
                    dl * (1.0 - delta)
                }
                _ => 0.0,
            });
        }
    }
    out
}

/// MMQ compiled with fp16 keeps A's per-piece scales (d·sc, dmin·m) as f16: whether one of
/// row `row`'s (bytes of type `a`) may overflow there, from its f16 scale fields times the
/// largest sub-scale the format holds (q6_K 128, q4_K/q5_K 63, q3_K and iq4_xs 32, iq3_s 31,
/// q2_K 15; the legacy formats keep d and m as they are).
pub fn f16_scale_overflows(a: DType, row: &[u8]) -> bool {
    let mult = match a {
        DType::Q6_K => 128.0,
        DType::Q4_K | DType::Q5_K => 63.0,
        DType::Q3_K | DType::Iq4Xs => 32.0,
        DType::Iq3S => 31.0,
        DType::Q2_K => 15.0,
        _ => return false,
    };
    row.chunks_exact(a.block_bytes()).any(|b| {
        (0..a.f16_scales()).any(|i| {
            let v = a.f16_scale(b, i).to_f64().abs();
            !v.is_finite() || v * mult >= Fp::F16.overflow()
        })
    })
}

/// The f32 roundings inside one piece of a body (after its exact integer dot), the most any
/// term goes through: e.g. q4_0's da·(Σ·db − 2·s) is 3, iq1_m's four-group chain 5.
pub fn piece_depth(path: IntDotPath, a: DType) -> f64 {
    match (path, a) {
        (IntDotPath::Mmvq, DType::Iq1M) => 5.0,
        (IntDotPath::Mmvq, DType::Q2_K) => 4.0,
        (IntDotPath::Mmq, DType::Q2_K) => 4.0,
        (_, DType::Q3_K | DType::Q6_K) => 3.0,
        (_, DType::Q8_0 | DType::Iq4Xs | DType::Iq3S) => 2.0,
        _ => 3.0,
    }
}

/// K elements per MMVQ piece (`K_PER_ITER`): 8 legacy, 16 K-quants, 32 iq1_s, iq1_m, iq4_xs.
pub fn mmvq_k_per_iter(a: DType) -> usize {
    match a {
        DType::Q2_K | DType::Q3_K | DType::Q4_K | DType::Q5_K | DType::Q6_K => 16,
        DType::Iq1S | DType::Iq1M | DType::Iq4Xs => 32,
        _ => 8,
    }
}

/// MMVQ depth: a piece ([`piece_depth`]), one add per piece an invocation folds into its sum
/// (⌈K/(K_PER_ITER·BLOCK_SIZE)⌉ of them), then the ⌈log₂ BLOCK_SIZE⌉ tree of the workgroup
/// reduction, as the float mat-vec model counts it. ggml's workgroup is the subgroup size
/// `subgroup` or four times it: the deeper of both.
pub fn mmvq_depth(a: DType, k: usize, subgroup: u32) -> f64 {
    let sg = subgroup.max(1) as usize;
    [sg, 4 * sg]
        .into_iter()
        .map(|bs| {
            let pieces = k.div_ceil(mmvq_k_per_iter(a) * bs) as f64;
            piece_depth(IntDotPath::Mmvq, a) + pieces + (bs as f64).log2().ceil()
        })
        .fold(0.0, f64::max)
}

/// MMQ depth: a piece, then one add per q8_1 block of the split's K range into the output's
/// accumulator (one thread owns it over K), then split_k's adds: the most over the `splits`
/// (count, K per split) a host may choose.
pub fn mmq_depth(a: DType, splits: &[(usize, usize)]) -> f64 {
    splits
        .iter()
        .map(|&(n, k_split)| {
            piece_depth(IntDotPath::Mmq, a) + k_split.div_ceil(QK8_1) as f64 + (n.max(1) - 1) as f64
        })
        .fold(0.0, f64::max)
}

/// One output of an integer-dot body: A's row `a` (exact values), its offset coefficients `c`
/// ([`offset_coefs`]), B's q8_1 blocks `b` of the same K range. Returns (centre, bound): the
/// device's result lies within bound of Σ a_i·b̂_i (module doc); a NaN bound leaves it unjudged.
/// `sum_used`: [`uses_stored_sum`]; `plan`: the arithmetic ([`IntDotPlan`]).
pub fn int_dot_element(
    a: &[f64],
    c: &[f64],
    b: &[Q8_1Block],
    sum_used: bool,
    plan: &IntDotPlan,
) -> (f64, f64) {
    let depth = plan.depth;
    let (mut centre, mut mag, mut extra) = (0.0f64, 0.0f64, 0.0f64);
    for ((a, &c), blk) in a.chunks_exact(QK8_1).zip(c).zip(b) {
        if blk.undefined.is_some() || (sum_used && blk.no_sum.is_some()) || !c.is_finite() {
            return (f64::NAN, f64::NAN);
        }
        let d_max = blk.d.abs() + blk.d_spread;
        let (mut abs_b, mut abs_aq) = (0.0f64, 0.0f64);
        for (i, &x) in a.iter().enumerate() {
            if !x.is_finite() {
                return (f64::NAN, f64::NAN);
            }
            centre += x * blk.value(i);
            let steps = f64::from(blk.q[i].unsigned_abs()) + f64::from(blk.latitude[i]);
            abs_b += d_max * steps;
            abs_aq += x.abs() * steps;
            // A tie or a flushable x: the device's quant may be off by latitude steps.
            extra += x.abs() * d_max * f64::from(blk.latitude[i]);
        }
        mag += abs_aq * d_max + 2.0 * c.abs() * abs_b * (1.0 + 2.0 * U16);
        // The f16 scale a device may store instead.
        extra += blk.d_spread * abs_aq;
        if sum_used {
            centre += c * blk.sum_error;
            extra += c.abs() * blk.sum_error_spread;
        }
    }
    let mut g = gamma(depth);
    if plan.f16_scales {
        g += U16 * (1.0 + g);
    }
    let mut floor = subnormal_floor(4 * a.len()) * f64::from(1u32 << 23);
    let mut overflow = f64::from(f32::MAX);
    if let Some(steps) = plan.f16_acc_steps {
        // Each piece rounded to f16, then summed in f16: the pieces' f32 error grows by at
        // most γ₁₆(steps) more; each f16 rounding may flush below its smallest normal.
        g += gamma_of(U16, steps) * (1.0 + g);
        floor += steps * Fp::F16.min_normal();
        overflow = Fp::F16.overflow();
    }
    if !centre.is_finite() || mag * (1.0 + g) >= overflow {
        return (f64::NAN, f64::NAN);
    }
    // f64 evaluation of the centre: a few units of 2⁻⁵³ per term.
    let f64_slack = (a.len() as f64 + 2.0) * f64::EPSILON * mag;
    (centre, g * mag + extra + f64_slack + floor)
}

/// The smallest interval holding both [c₁ − b₁, c₁ + b₁] and [c₂ − b₂, c₂ + b₂], as (centre,
/// radius): how a candidate of another centre joins the float path's bound. A NaN bound in
/// either stays NaN.
pub fn hull((c1, b1): (f64, f64), (c2, b2): (f64, f64)) -> (f64, f64) {
    if b1.is_nan() || b2.is_nan() {
        return (c1, f64::NAN);
    }
    let lo = (c1 - b1).min(c2 - b2);
    let hi = (c1 + b1).max(c2 + b2);
    ((lo + hi) / 2.0, (hi - lo) / 2.0)
}

/// The arithmetic of one integer-dot candidate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntDotPlan {
    /// The path.
    pub path: IntDotPath,
    /// Depth of its f32 arithmetic ([`mmvq_depth`] or [`mmq_depth`]; with f16 accumulators,
    /// the piece's f32 part only).
    pub depth: f64,
    /// MMQ with fp16 scales (module doc).
    pub f16_scales: bool,
    /// f16 accumulators: the f16 roundings along the chain (each piece's conversion, then the
    /// adds), as the July 2025 tree's MMQ at GGML_PREC_DEFAULT on an fp16 device has them.
    pub f16_acc_steps: Option<f64>,
}

impl IntDotPlan {
    /// MMVQ (f32 throughout): [`mmvq_depth`].
    pub fn mmvq(a: DType, k: usize, subgroup: u32) -> IntDotPlan {
        IntDotPlan {
            path: IntDotPath::Mmvq,
            depth: mmvq_depth(a, k, subgroup),
            f16_scales: false,
            f16_acc_steps: None,
        }
    }

    /// MMQ over the `splits` a host may choose: fp16 shaders (`fp16`: A's scale products in
    /// f16) with f32 accumulators, or f16 ones (`f16_acc`).
    pub fn mmq(a: DType, splits: &[(usize, usize)], fp16: bool, f16_acc: bool) -> IntDotPlan {
        let depth = mmq_depth(a, splits);
        let piece = piece_depth(IntDotPath::Mmq, a);
        IntDotPlan {
            path: IntDotPath::Mmq,
            depth: if f16_acc { piece } else { depth },
            f16_scales: fp16,
            f16_acc_steps: f16_acc.then_some(depth - piece + 1.0),
        }
    }
}

/// Per dst element of a matrix product laid out as [`crate::model::tolerance::mul_mat_specials`]
/// lays it out (column c multiplies A rows `columns[c].0 ..` by B row `columns[c].1`, M
/// fastest), the integer-dot candidate (centre, bound) of [`int_dot_element`]. `a`: A (any
/// block layout; rows in [`vkdiff_reference::TensorView::rows`] order, decoded one at a time),
/// `b_rows`: B's rows of K values (f32 values, as f64).
pub fn mat_candidate(
    a: &vkdiff_reference::Tensor,
    b_rows: &[f64],
    columns: &[(usize, usize)],
    plan: IntDotPlan,
) -> vkdiff_reference::Result<Vec<(f64, f64)>> {
    use rayon::prelude::*;
    let [k, m, ne02, _] = a.ne();
    let a_type = a.dtype();
    let sum_used = uses_stored_sum(a_type);
    let b_blocks: Vec<Vec<Q8_1Block>> = b_rows
        .par_chunks(k)
        .map(|r| quantize_q8_1(&r.iter().map(|&x| x as f32).collect::<Vec<_>>()))
        .collect();
    let nb = a.nb();
    let row_bytes = a_type.row_bytes(k)?;
    // A row r serves the columns whose first row is r − r % m.
    let mut by_base: std::collections::HashMap<usize, Vec<usize>> = Default::default();
    for (c, &(first, _)) in columns.iter().enumerate() {
        by_base.entry(first).or_default().push(c);
    }
    let parts: Vec<Vec<(usize, (f64, f64))>> = (0..a.nrows())
        .into_par_iter()
        .filter(|r| by_base.contains_key(&(r - r % m)))
        .map_init(
            || vec![0.0; k],
            |row, r| {
                let (i1, i2, i3) = (r % m, r / m % ne02, r / (m * ne02));
                a.row_into(i1, i2, i3, row)?;
                let at = i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
                let bytes = &a.data()[at..at + row_bytes];
                let c = offset_coefs(a_type, bytes);
                // A scale that overflows f16 makes the body's result ±∞ or NaN (∞·0).
                let overflows = plan.f16_scales && f16_scale_overflows(a_type, bytes);
                Ok(by_base[&(r - r % m)]
                    .iter()
                    .map(|&col| {
                        let b = &b_blocks[columns[col].1];
                        let e = if overflows {
                            (f64::NAN, f64::NAN)
                        } else {
                            int_dot_element(row, &c, b, sum_used, &plan)
                        };
                        (col * m + i1, e)
                    })
                    .collect())
            },
        )
        .collect::<vkdiff_reference::Result<_>>()?;
    let mut out = vec![(f64::NAN, f64::NAN); columns.len() * m];
    for (i, e) in parts.into_iter().flatten() {
        out[i] = e;
    }
    Ok(out)
}

/// Joins the integer-dot candidate to each element's (expected, bound) by [`hull`].
pub fn join_candidate(expected: &mut [f64], bounds: &mut [f64], candidate: &[(f64, f64)]) {
    for ((w, b), &c) in expected.iter_mut().zip(bounds.iter_mut()).zip(candidate) {
        (*w, *b) = hull((*w, *b), c);
    }
}

/// Which of the two models a result fits on its own, for [`crate::model::compare::Verdict::fits`]:
/// the float path's (`expected`, `bounds`, before [`join_candidate`]), only the q8_1 one, or
/// only their join. Says which arithmetic ggml's host used where the path is not known.
pub fn fit_of(got: &[f32], expected: &[f64], bounds: &[f64], candidate: &[(f64, f64)]) -> String {
    let fits = |want: &[f64], bound: &[f64]| {
        crate::model::compare::compare(got, want, bound, |i| [i, 0, 0, 0], |_| "")
            .is_ok_and(|v| v.passed())
    };
    let (centres, widths): (Vec<f64>, Vec<f64>) = candidate.iter().copied().unzip();
    if fits(expected, bounds) {
        "float path".into()
    } else if fits(&centres, &widths) {
        "q8_1 integer dot".into()
    } else {
        "only the join of the float and q8_1 models".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_names_the_one_model_it_fits() {
        // Float path: 1.0 ± 1e-6; q8_1 path: 1.01 ± 1e-3.
        let (e, b, c) = ([1.0], [1e-6], [(1.01, 1e-3)]);
        assert_eq!(fit_of(&[1.0], &e, &b, &c), "float path");
        assert_eq!(fit_of(&[1.0105], &e, &b, &c), "q8_1 integer dot");
        assert_eq!(
            fit_of(&[1.005], &e, &b, &c),
            "only the join of the float and q8_1 models"
        );
    }

    #[test]
    fn quantizes_like_the_shader() {
        // amax 127 → d = 1, q = round(x); 2.5 is a tie, 1.25 is not.
        let mut x = [0.0f32; 32];
        x[0] = 127.0;
        x[1] = -2.5;
        x[2] = 1.25;
        x[3] = -64.0;
        let b = &quantize_q8_1(&x)[0];
        assert_eq!(b.d, 1.0);
        assert_eq!(&b.q[..4], &[127, -3, 1, -64]);
        assert_eq!(&b.latitude[..4], &[0, 1, 0, 0]);
        assert_eq!(b.sum_q, 127 - 3 + 1 - 64);
        assert_eq!(b.s, 61.0);
        assert!(b.undefined.is_none() && b.no_sum.is_none());
    }

    #[test]
    fn offset_coefficients_of_q4_0_and_q4_1() {
        // q4_0 d = 0.5: c = 4; q4_1 d = 1, m = −3: c = 3.
        let mut q40 = vec![0u8; 18];
        q40[..2].copy_from_slice(&f16::from_f32(0.5).to_le_bytes());
        assert_eq!(offset_coefs(DType::Q4_0, &q40), vec![4.0]);
        let mut q41 = vec![0u8; 20];
        q41[..2].copy_from_slice(&f16::ONE.to_le_bytes());
        q41[2..4].copy_from_slice(&f16::from_f32(-3.0).to_le_bytes());
        assert_eq!(offset_coefs(DType::Q4_1, &q41), vec![3.0]);
    }

    #[test]
    fn blocks_beyond_the_format_are_named() {
        let mut x = [1.0f32; 32];
        x[5] = f32::NAN;
        assert!(quantize_q8_1(&x)[0].undefined.is_some());
        let big = [1e7f32; 32];
        assert!(quantize_q8_1(&big)[0].undefined.is_some());
        // amax 4000 ⇒ d ≈ 31.5, Σq = 32·127: s ≈ 128,000 overflows f16.
        let wide = [4000.0f32; 32];
        let b = &quantize_q8_1(&wide)[0];
        assert!(b.undefined.is_none() && b.no_sum.is_some());
    }

    #[test]
    fn an_f16_scale_product_beyond_f16_is_seen() {
        // q6_K: d at 208; 600·128 > 65504, 500·128 < 65504.
        let mut b = vec![0u8; DType::Q6_K.block_bytes()];
        b[208..210].copy_from_slice(&f16::from_f32(600.0).to_le_bytes());
        assert!(f16_scale_overflows(DType::Q6_K, &b));
        b[208..210].copy_from_slice(&f16::from_f32(500.0).to_le_bytes());
        assert!(!f16_scale_overflows(DType::Q6_K, &b));
        // Legacy d is stored as it is.
        let mut q = vec![0u8; 18];
        q[..2].copy_from_slice(&f16::MAX.to_le_bytes());
        assert!(!f16_scale_overflows(DType::Q4_0, &q));
    }

    #[test]
    fn hull_spans_both() {
        assert_eq!(hull((0.0, 1.0), (3.0, 1.0)), (1.5, 2.5));
        assert_eq!(hull((0.0, 2.0), (0.5, 0.1)), (0.0, 2.0));
        assert!(hull((0.0, f64::NAN), (1.0, 1.0)).1.is_nan());
    }
}
