//! The flash-attention error model (scalar, cm1 and cm2 paths). Shared arithmetic:
//! [`crate::model::tolerance`].
//!
//! § numbers: sections of docs/interface.md.

#[allow(unused_imports)]
use crate::model::tolerance::*;

/// What the flash-attention error model needs to know about one dispatch (§9.5–9.8): the
/// reduction structure the interface fixes, the path's arithmetic and the op's parameters.
#[derive(Debug, Clone, Copy)]
pub struct FlashAttnShape {
    /// Head size D.
    pub d: usize,
    /// Keys KV.
    pub kv: usize,
    /// Keys per tile (Bc).
    pub bc: u32,
    /// Workgroup size.
    pub wg: u32,
    /// Invocations per key's dot product (D_split; scalar path).
    pub d_split: u32,
    /// KV splits (1: none).
    pub split_k: u32,
    /// Keys per split (a multiple of Bc; unused without a split): a workgroup's chains run
    /// over at most this many keys, the split-k reduce's on top.
    pub split_kv: usize,
    /// logit_softcap (0: none).
    pub softcap: f32,
    /// The ALiBi constants (slopes are exactly 1 when max_bias ≤ 0).
    pub alibi: vkdiff_reference::ops::flash_attn::Alibi,
    /// The arithmetic of the pipeline that ran.
    pub arith: FaArith,
}

/// The arithmetic of a flash-attention pipeline (§9.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaArith {
    /// `flash_attn.comp`: f32 throughout.
    Scalar,
    /// `flash_attn_cm1.comp`: f16 Q·scale and K, S in ACC_TYPE, f32 softmax, f16 P, O in
    /// ACC_TYPE, final O·f16(1/L).
    Cm1 {
        /// ACC_TYPE is float16_t.
        f16acc: bool,
        /// V is a block format: P·V may take V's d·q rounded to f16 (ours stages V as f16 for
        /// the cooperative matrices, as it does K), so V's f16 decode and its range count, as
        /// on cm2. Upstream's pinned cm1 reads V in f32; the looser bound covers both.
        v_decoded: bool,
    },
    /// `flash_attn_cm2.comp`: f16 Q·f16 scale, f16-decoded K and V, S, softmax and O in
    /// ACC_TYPE, f16 P, P·V in f16 per tile.
    Cm2 {
        /// ACC_TYPE is float16_t.
        f16acc: bool,
    },
    /// Recent ggml's (0.1.161) scalar `flash_attn.comp` with FLOAT_TYPE float16_t, at
    /// GGML_PREC_DEFAULT on an fp16 device (not the pinned interface): f32 Q·scale rounded to
    /// f16, K and V read or decoded as f16, S summed in f16, f32 softmax with P rounded to f16,
    /// O rescaled and accumulated in f16, L in f32, O·f16(1/L). Judged as cm1 with f16
    /// accumulators, plus V's f16 decode and its range (as on cm2: a V element beyond f16
    /// range meets the zero weight of a masked key).
    ScalarF16,
}

/// Per-row data terms the coopmat error models need beyond the reference's [`RowTerms`]
/// (`vkdiff_reference::ops::flash_attn::RowTerms`), computed from the inputs by the case:
/// what f16 rounding of Q and of decoded K scales with, and f16 range checks.
#[derive(Debug, Clone, Default)]
pub struct FaRowData {
    /// |s'|, the scale the dot product is multiplied by.
    pub s_abs: f64,
    /// |s'|·Σ_d |q_d|.
    pub q_abs: f64,
    /// max_d |q_d|.
    pub q_max: f64,
    /// Per key: Σ_d |k_jd|.
    pub k_abs: Vec<f64>,
    /// Per key: the logit error from K's f16 decode, units·h·|s'|·Σ_d |q_d|·mag(k_jd) with
    /// mag = |d·q| + |m| (= |k| without a minimum) and units from [`f16_decode_units`].
    pub k_err: Vec<f64>,
    /// Per key: max_d |k_jd|.
    pub k_max: Vec<f64>,
}

/// How a K/V block format decodes to f16 on the coopmat paths: the relative error bound of the
/// decoded element in units of U16 times its magnitude (|d·q| + |m|): 0 for f16 data (exact);
/// 1 for d·q rounded once (both cm1's f32 d·q rounded to f16 and cm2's f16 product); 2 + U16
/// for cm2's d·q + m with two roundings (|fl(fl(d·q) + m) − (d·q + m)| ≤ u|d·q|(1 + u) + u·|k̂|
/// ≤ (2 + u)u·mag with u = U16).
pub fn f16_decode_units(t: vkdiff_reference::DType) -> f64 {
    use vkdiff_reference::DType;
    match t {
        DType::F16 => 0.0,
        DType::Q4_1 | DType::Q5_1 => 2.0 + U16,
        _ => 1.0,
    }
}

/// Relative error bound of the shader's ALiBi slope `pow(base, e)`. Vulkan's precision rules
/// (SPIR-V Vulkan environment, GLSL.std.450 table) give pow no bound of its own: it is
/// *inherited from exp2(y·log2(x))*, with log2 within 2⁻²¹ absolute on [0.5, 2] and 3 ULP
/// outside, the product y·log2(x) correctly rounded, and exp2(z) within 3 + 2|z| ULP (one ULP
/// of a normal value is at most 2u relative). An error Δz in z becomes a factor 2^Δz.
pub fn alibi_slope_error(base: f32, e: u32) -> f64 {
    let (b, y) = (base as f64, e as f64);
    let l = b.log2();
    let z = y * l;
    let e_log2 = if (0.5..=2.0).contains(&b) {
        2f64.powi(-21)
    } else {
        3.0 * 2.0 * U32 * l.abs()
    };
    let dz = y * e_log2 + z.abs() * U32;
    let exp2 = (3.0 + 2.0 * (z.abs() + dz)) * 2.0 * U32;
    (1.0 + exp2) * (std::f64::consts::LN_2 * dz).exp() - 1.0
}

/// Absolute error bound of the shader's tanh(x̂) for |x̂| ≤ `ax`. tanh is inherited from
/// sinh/cosh, themselves from (exp(x) ∓ exp(−x))/2: each exp within ε = (3 + 2|x|)·2u
/// relative, the sum and difference rounded (u), the quotient 2.5 ULP (5u). With a = e^|x|,
/// b = e^−|x| and |tanh| ≤ 1 that gives |Δ| ≤ 2ε + 7u. Past |x| ≈ 88 exp overflows f32 and
/// the rules bound nothing: the error is then only known to be at most 2 (any value in
/// [−1, 1]); cases keep softcap arguments below that.
pub fn tanh_error(ax: f64) -> f64 {
    if ax > 88.0 {
        2.0
    } else {
        (19.0 + 8.0 * ax) * U32
    }
}

/// Flash attention (§9.8, scalar path: everything in f32), per output element, from the exact
/// terms of its row (see `vkdiff_reference::ops::flash_attn::RowTerms`) and V's exact values.
///
/// **Logits.** S_j = s'·(q·k_j) is a D-term dot product of exact inputs (f16 K widens exactly;
/// q4_0/q8_0 d·q is exact in f32) after one rounding of q·s'. The interface splits it over
/// D_split invocations, each summing D/D_split terms (ours: sequential fma; upstream: vec4
/// `dot`s, ≤ 4 roundings each, then an add), combined in a tree of depth log₂ D_split, so
/// |ΔS_j| ≤ γ(D/D_split + log₂ D_split + 5)·|s'|·Σ_d|q_d·k_jd| + (D + 1)·2⁻¹²⁶ =: σ_dot.
/// A softcap c adds c·(σ_dot + [`tanh_error`]) (tanh is 1-Lipschitz) and u·|c·tanh| for the
/// product; a mask adds |slope·m_j|·([`alibi_slope_error`] + u) for the bias product and
/// u·|S_j| for the sum. Call the total σ_j and σ = max σ_j. Masked keys (−∞) have weight
/// exactly 0 on both sides (exp(−∞) = +0).
///
/// **Weights.** The kernel's weight of key j is w_j·(1 + ρ_j) with w_j = e^(S_j − M). Its
/// logarithmic error λ_j bounds: the logit error σ_j; exp(Ŝ_j − M̂) with an argument of size
/// ≤ d_j + 2σ (d_j = M − S_j) rounded (u·|x|) and exp's 3 + 2|x| ULP: 6u + 5u·|x|; and every
/// rescaling α = exp(M_old − M_new) applied to it later (per tile, per invocation's partial
/// result in upstream's layout, per split: ⌈KV/Bc⌉ + 2 of them), each 6u + 5u·|Δ|, where the
/// Δ along one term's path telescope to at most d_j + 2σ. So
/// λ_j = σ_j + 6u·(⌈KV/Bc⌉ + 3) + 10u·(d_j + 2σ), and |ρ_j| ≤ e^λ_j − 1. Exactly (no first
/// order): Σ w_j(1+ρ_j)(v_j − O)/Σ w_k(1+ρ_k) = Ô_w − O, so with P the exact softmax
/// A_d = Σ_j P_j (e^λ_j − 1)|v_jd − O_d| / Σ_k P_k e^(−λ_k). Only ratios of weights matter,
/// so the same identity with every weight taken relative to the largest one, key t (its own
/// relative error is then 0, the others' at most e^(λ_j + λ_t) − 1, and the denominator at
/// least P_t), gives A'_d = Σ_(j≠t) P_j (e^(λ_j + λ_t) − 1)|v_jd − O_d| / P_t, which is the
/// smaller one when one key dominates (huge logits, whose own errors then do not matter);
/// A_d is the minimum of the two, and of max_j |v_jd − O_d| (the kernel's result is a convex
/// combination of the v_j, whatever its weights).
///
/// **Sums.** Σ_j p_j v_jd and L = Σ_j p_j are f32 chains of depth at most
/// KV + ⌈KV/Bc⌉ + KV-groups + 2 (each term: the later fmas of its own tile or invocation, one
/// rescale multiply per later tile, the combination of the WorkGroupSize/D_split column
/// groups upstream keeps apart, an unfused product), plus k_num + 1 for the split-k reduce.
/// The final O·(1/L) is 2.5 + 0.5 ULP (6u). With Ow = |O_d| + A_d and S1 the larger of the
/// kernel's normalised weights times |v| (the minimum of Σ_j P_j e^λ_j |v_jd| / Σ_k P_k e^(−λ_k)
/// and |v_td| + Σ_(j≠t) P_j e^(λ_j + λ_t)|v_jd| / P_t, as above):
/// bound = A_d + (γ(d_pv)·S1 + γ(d_L)·Ow)·(1 + 6u)/(1 − γ(d_L)) + 6u·Ow
///         + (KV + D + 1)·2⁻¹²⁶·(1 + 2 max_j|v_jd|)  (flushed subnormal weights and products).
///
/// Fully masked rows and rows with a non-finite logit get bound 0: their exact value is NaN.
/// Where a chain's γ is infinite (its depth times the unit roundoff reaches 1: f16
/// accumulators over 2,048 or more keys on cm1's O), the worst case bounds nothing and the
/// element's bound is NaN, not judged ([`gamma_of`]).
///
/// **Coopmat paths** ([`FaArith::Cm1`], [`FaArith::Cm2`]; `extra` carries their per-row data
/// [`FaRowData`] and, per V element, the absolute error of its f16 decode). The same
/// derivation with the arithmetic §9.8 prescribes; e is ACC_TYPE's unit roundoff (u, or
/// h = 2⁻¹¹ for the f16acc variants), and every f16 value may be flushed when below 2⁻¹⁴
/// (no denorm mode is requested), an absolute error of 2⁻¹⁴ per rounding:
/// * Logits: q̂ = fl16(fl32(q·s')) (cm1: relative (1+u)(1+h) − 1) or fl16(fl16(q)·fl16(s'))
///   (cm2: (1+h)³ − 1); K as f16 (exact for f16 data, else relative `f16_decode_units`·h of
///   its magnitude, see [`f16_decode_units`]); S = Σ_d q̂·k̂ in ACC_TYPE, any order of at most
///   D + 1 roundings per term (f16: every product and add rounds): γ_e(D + 1). So
///   σ_dot,j = [(1+ρq)(1+γ_e(D+1)) − 1]·|s'|Σ|q·k| + (1+ρq)(1+γ_e(D+1))·units·h·|s'|Σ|q|·mag(k)
///   plus 1.01·2⁻¹⁴·(c_q·Σ_d|k_jd| + |s'|Σ|q|) (flushed q̂ and k̂; c_q = 1 on cm1, 1 + |s'| on
///   cm2) plus, for f16 accumulators, (D + 1)·2⁻¹⁴. Softcap: tanh's bound in units of e, and
///   the rounding of c·tanh to ACC_TYPE (u + e); mask: bias·(slope error + 3e) + 2e·|S_j|
///   (slope, product and sum in ACC_TYPE).
/// * Weights: as above with exp's unit ε_x (u on cm1, whose softmax is f32; e on cm2), the
///   rescale products in ACC_TYPE ((6ε_x + e) per rescale), plus h for P's rounding to f16,
///   plus ln 2 for a key that may fall below 2⁻¹⁴ in f16 (d_j + 2σ ≥ 9.6, as e^−9.7 = 2⁻¹⁴):
///   flushing it or rounding it as a subnormal is a relative change in [−1, 1].
/// * Sums: cm1 O chains in ACC_TYPE (γ_e(KV + tiles + groups + 2): the keys of a tile may be
///   summed in up to groups = WorkGroupSize/D_split partial sums per element, added at the
///   end: upstream keeps 32/D_split, ours one per subgroup, 4, each with its own maximum
///   like upstream's; upstream adds each key's P·V by one fma, ours adds a subgroup's
///   share of a tile, sg_keys = Bc·32/WorkGroupSize keys, and O·α by one coopMatMulAdd, whose
///   adds are in any order and may truncate (2e each, as in the matrix-matrix model) after a
///   product rounded to ACC_TYPE (2e): KV is then max(KV, 2·(min(KV, sg_keys·tiles) + 1)),
///   which exceeds KV only for KV ≤ 33 and KV = 65 at Bc = 64 and 128 invocations),
///   L in f32 over the rounded P (γ_u(KV + tiles + groups + 2));
///   cm2 P·V in an f16 accumulator per tile (γ_h(Bc + 1)) then added to
///   O in ACC_TYPE (γ_e(tiles + 2) on top), L in ACC_TYPE as a tile's row sum (any order, at
///   most Bc − 1 additions; ours and upstream's at 0.1.109: P times a matrix of ones on the
///   tensor cores, whose adds may truncate: each within 2e) added to L·α, then one rescale
///   per later tile (γ_e(2Bc + tiles + 2)). V's f16 decode
///   (cm2, and cm1 with block V, [`FaArith::Cm1`]) adds Σ_j P_j e^λ_j |Δv_jd| / Σ_k P_k e^−λ_k. f16 flushes in P·V (cm2, and cm1's f16
///   O) add Σ_j min(w_j e^λ_j |v_jd|, 2⁻¹⁴) for the products and Σ_tiles min(Bc·2⁻¹⁴,
///   Σ_(j∈tile) w_j e^λ_j |v_jd|) for the adds (w_j = e^(S_j − M) ≤ 1: a product is only
///   flushed while tiny in its tile's units, which are never smaller than the final ones), plus
///   (2·tiles + 2)·2⁻¹⁴ per partial sum for f16acc O (cm1: groups of them, and groups − 1
///   additions), all over Σ_k w_k e^−λ_k ≤ L. The final scaling is cm1's
///   O·f16(1/L) (5u + h + e) or cm2's in ACC_TYPE (6e), and 2h more for an upstream kernel
///   whose L adds the unrounded weights (its O and L weights then differ by a factor within
///   1 ± h). With split-k, the reduce's f32 arithmetic as on the scalar path.
/// * **f16 range.** What the interface computes in f16 can overflow for inputs ggml accepts:
///   q̂ (|q|, |s'·q| > 65504), decoded K or V elements beyond 65504 (cm2 decodes blocks in f16;
///   cm1 stages K as f16; a K element of any key, masked or not, since ∞ − ∞ in S is NaN), with f16
///   accumulators the logits (|s'|Σ|q·k| + error > 65504) and O's partial sums (Σ_j |v_jd| over the
///   row's live keys > 65504; cm2's per-tile P·V accumulator is f16 even with f32 accumulators: per
///   tile). On cm2 a decoded V element beyond 65504, or NaN, of any key, masked or not, poisons its
///   output column: its zero weight times ∞ or NaN is NaN in the tile's f16 P·V (seen on the H100;
///   upstream's cm2 multiplies whole tiles the same way, while ggml's CPU path skips masked keys).
///   Where that can happen the result may be ±∞ or NaN and is not judged: the bound is NaN there
///   (the case counts and reports those elements). Upstream at the pinned commit does not clamp
///   (§12 later-changed 7).
pub fn flash_attn_bounds(
    shape: &FlashAttnShape,
    fa: &vkdiff_reference::ops::flash_attn::FlashAttn,
    v_values: &[f64],
    v_ne: [usize; 4],
    extra: Option<(&[FaRowData], &[f64])>,
) -> Vec<f64> {
    let FlashAttnShape {
        d,
        kv,
        bc,
        wg,
        d_split,
        split_k,
        split_kv,
        softcap,
        alibi,
        arith,
    } = *shape;
    let (cm1, cm2, f16acc) = match arith {
        FaArith::Scalar => (false, false, false),
        FaArith::Cm1 { f16acc, .. } => (true, false, f16acc),
        FaArith::Cm2 { f16acc } => (false, true, f16acc),
        FaArith::ScalarF16 => (true, false, true),
    };
    let coop = cm1 || cm2;
    // ACC_TYPE's unit roundoff, and γ for it.
    let e = if f16acc { U16 } else { U32 };
    let gamma_e = |n: f64| gamma_of(e, n);
    let gamma_h = |n: f64| gamma_of(U16, n);
    let d_split = d_split.max(1);
    let log_split = (d_split as f64).log2().ceil();
    let tiles = kv.div_ceil(bc.max(1) as usize) as f64;
    // One workgroup's keys and tiles: the depth of a key's chains before the split-k reduce.
    let chain_keys = if split_k > 1 { split_kv.min(kv) } else { kv };
    let chain_tiles = chain_keys.div_ceil(bc.max(1) as usize) as f64;
    let groups = (wg / d_split).max(1) as f64;
    let split_depth = if split_k > 1 {
        split_k as f64 + 1.0
    } else {
        0.0
    };
    // Logit: relative factor on |s'|Σ|q·k| (scalar: the f32 split dot product).
    let rho_q = if cm1 {
        (1.0 + U32) * (1.0 + U16) - 1.0
    } else {
        (1.0 + U16).powi(3) - 1.0
    };
    let acc_dot = gamma_e(d as f64 + 1.0);
    let g_dot = if coop {
        (1.0 + rho_q) * (1.0 + acc_dot) - 1.0
    } else {
        gamma((d / d_split as usize) as f64 + log_split + 5.0)
    };
    // exp's unit and the per-rescale error.
    let ex = if cm1 { U32 } else { e };
    let rescale = if coop {
        (6.0 * ex + e) * (chain_tiles + 3.0)
    } else {
        6.0 * U32 * (chain_tiles + 3.0)
    };
    let (g_pv, g_l) = if cm1 {
        // The partial sums of an element's key groups are added at the end (`groups`: at
        // most WorkGroupSize/D_split of them, see the Sums paragraph). O's keys: one rounding
        // each in upstream's chain; ours sums a subgroup's share of every tile on the tensor
        // cores, 2 (directed) a key plus 2 for the product, over at most sg_keys a tile.
        let depth = chain_keys as f64 + chain_tiles + groups + 2.0;
        let sg_keys = bc.max(1) as usize * 32 / (wg as usize).max(32);
        let tensor_keys = 2.0 * (chain_keys.min(sg_keys * chain_tiles as usize) + 1) as f64;
        let pv_depth = depth - chain_keys as f64 + tensor_keys.max(chain_keys as f64);
        (gamma_e(pv_depth), gamma(depth))
    } else if cm2 {
        (
            (1.0 + gamma_h(bc as f64 + 1.0)) * (1.0 + gamma_e(chain_tiles + 2.0)) - 1.0,
            // A tile's row sum as P times ones on the tensor cores: truncating adds, each
            // within 2e (see the Sums paragraph).
            gamma_e(2.0 * bc as f64 + chain_tiles + 2.0),
        )
    } else {
        let depth = chain_keys as f64 + chain_tiles + groups + 2.0 + split_depth;
        (gamma(depth), gamma(depth))
    };
    // The split-k reduce's f32 chain on top (the scalar depth already has it).
    let (g_pv, g_l) = if coop && split_k > 1 {
        let r = gamma(split_depth);
        (
            (1.0 + g_pv) * (1.0 + r) - 1.0,
            (1.0 + g_l) * (1.0 + r) - 1.0,
        )
    } else {
        (g_pv, g_l)
    };
    let fin = if !coop {
        6.0 * U32
    } else if split_k > 1 {
        6.0 * U32 + 2.0 * U16
    } else if cm1 {
        5.0 * U32 + U16 + e + 2.0 * U16
    } else {
        6.0 * e + 2.0 * U16
    };
    let f16_o_flush = cm2 || (cm1 && f16acc);
    // Flushes of an f16 O's rescales and adds: per partial sum (cm1 keeps up to `groups` of
    // them per element), and one for each addition of two.
    let partials = if cm1 { groups } else { 1.0 };
    let o16 = if f16acc {
        ((2.0 * tiles + 2.0) * partials + partials - 1.0) * F16_MIN_NORMAL
    } else {
        0.0
    };
    let cap = softcap as f64;
    let floor_dot = subnormal_floor(d);
    let floor_out = subnormal_floor(kv + d);
    let dv = fa.out.ne[0];
    let mut bounds = vec![0.0; fa.out.values.len()];
    // Rows are independent: one rayon task each.
    use rayon::prelude::*;
    bounds.par_chunks_exact_mut(dv).zip(&fa.rows).enumerate().for_each(|(r, (out, row))| {
        if row.fully_masked || row.non_finite {
            return;
        }
        let live = |j: &usize| row.logits[*j] != f64::NEG_INFINITY;
        let data = extra.map(|(rows, _)| &rows[r]);
        let s_abs = data.map_or(0.0, |x| x.s_abs);
        // f16 range of the inputs the coopmat paths convert.
        if let Some(x) = data {
            let q_over = if cm2 {
                x.q_max > F16_MAX || x.q_max * s_abs > F16_MAX
            } else {
                x.q_max * s_abs > F16_MAX
            };
            // Masked keys too: the coopmat S = Q·Kᵀ covers whole tiles, and an ∞ in k̂ makes
            // S_j ±∞ or NaN, which the −∞ mask turns into NaN (∞ − ∞), not −∞ (0.1.161's cm1
            // on the H100 clamped that NaN row to −65504).
            let k_over = (0..kv).any(|j| x.k_max[j] > F16_MAX);
            // Every partial sum of the f16 logit is at most its terms' Σ|q̂·k̂| grown by the
            // roundings on its way, (1 + g_dot)·(|s'|Σ|q·k| + K's decode error), and the
            // bias sum adds at most |S_j|.
            let s_over = f16acc
                && (0..kv).filter(live).any(|j| {
                    (row.dot_magnitude[j] + x.k_err[j]) * (1.0 + g_dot) + row.logits[j].abs()
                        > F16_MAX
                });
            if q_over || k_over || s_over {
                out.fill(f64::NAN);
                return;
            }
        }
        let slope_err = if alibi.max_bias > 0.0 {
            let (base, e) = alibi.slope_parts(row.h);
            alibi_slope_error(base, e)
        } else {
            0.0
        };
        let sigma: Vec<f64> = (0..kv)
            .map(|j| {
                if row.logits[j] == f64::NEG_INFINITY {
                    return 0.0;
                }
                let s_dot = match data {
                    Some(x) => {
                        let c_q = if cm2 { 1.0 + s_abs } else { 1.0 };
                        g_dot * row.dot_magnitude[j]
                            + (1.0 + g_dot) * x.k_err[j]
                            // A flushed q̂ or k̂ (< 2⁻¹⁴) drops its product with a partner
                            // that is rounded ((1 + ρq)) and then carried through the
                            // sum's roundings: (1 + g_dot) in all.
                            + (1.0 + g_dot) * F16_MIN_NORMAL * (c_q * x.k_abs[j] + x.q_abs)
                            + if f16acc {
                                (d as f64 + 1.0) * F16_MIN_NORMAL
                            } else {
                                0.0
                            }
                    }
                    None => g_dot * row.dot_magnitude[j] + floor_dot,
                };
                let mut s = if cap != 0.0 {
                    let t = row.x[j].tanh();
                    let (t_err, round) = if coop {
                        (tanh_error(row.x[j].abs() + s_dot) * e / U32, U32 + e)
                    } else {
                        (tanh_error(row.x[j].abs() + s_dot), U32)
                    };
                    cap.abs() * (s_dot + t_err) + round * (cap * t).abs()
                } else {
                    s_dot
                };
                if row.mask[j] != 0.0 {
                    let bias = (row.slope * row.mask[j]).abs();
                    s += if coop {
                        bias * (slope_err + 3.0 * e) + 2.0 * e * row.logits[j].abs()
                    } else {
                        bias * (slope_err + U32) + U32 * row.logits[j].abs()
                    };
                }
                s
            })
            .collect();
        let max = (0..kv)
            .filter(live)
            .map(|j| row.logits[j])
            .fold(f64::NEG_INFINITY, f64::max);
        let sigma_max = (0..kv).filter(live).map(|j| sigma[j]).fold(0.0, f64::max);
        let lambda: Vec<f64> = (0..kv)
            .map(|j| {
                let dj = max - row.logits[j] + 2.0 * sigma_max;
                let mut l = sigma[j] + rescale + 10.0 * ex * dj;
                if coop {
                    l += U16;
                    // P_j ≥ e^(S_j − M)·e^(−l) (the running maximum is never above M): it
                    // can fall below 2⁻¹⁴ only if M − S_j + l ≥ 14·ln 2 (= 9.704).
                    if max - row.logits[j] + l >= 14.0 * std::f64::consts::LN_2 {
                        l += std::f64::consts::LN_2;
                    }
                }
                // Unclamped: e^λ may be ∞ below. A candidate that becomes ∞ loses every
                // `min`, and one that becomes NaN (0·∞: a weight that underflowed f64) is
                // dropped by f64::min, so the caps decide; clamping λ would shrink a
                // candidate below what the derivation gives.
                l
            })
            .collect();
        let den: f64 = (0..kv)
            .filter(live)
            .map(|j| row.weights[j] * (-lambda[j]).exp())
            .sum();
        let top = (0..kv)
            .filter(live)
            .find(|&j| row.logits[j] == max)
            .expect("a live key");
        let (p_top, l_top) = (row.weights[top], lambda[top]);
        let (iv2, iv3) = row.v_index;
        let v_at = |j: usize| ((iv3 * v_ne[2] + iv2) * v_ne[1] + j) * v_ne[0];
        let first = r * dv;
        let v_err = extra.map(|(_, e)| e);
        // Keys outer, elements inner: each key's V row is contiguous over the elements, and
        // its weight factors (exp of λ) are taken once per key, not once per element. Every
        // element's sums still add the keys in ascending order with the same products, so
        // the bounds are the same numbers as an element-by-element walk.
        //
        // First pass: the largest |v_jd| over the live keys, which |v_jd − O_d|'s f64
        // rounding term needs, and f16-range overflow of decoded V (any key, masked or not).
        let mut vmax = vec![0.0f64; dv];
        let mut v_over = vec![false; dv];
        let v_range = cm2
            || arith == FaArith::ScalarF16
            || matches!(arith, FaArith::Cm1 { v_decoded: true, .. });
        for j in 0..kv {
            let vrow = &v_values[v_at(j)..v_at(j) + dv];
            if live(&j) {
                for (m, v) in vmax.iter_mut().zip(vrow) {
                    *m = m.max(v.abs());
                }
            }
            if v_range {
                for (o, v) in v_over.iter_mut().zip(vrow) {
                    *o |= v.is_nan() || v.abs() > F16_MAX;
                }
            }
        }
        // |v_jd − O_d| as f64 numbers: the reference's O (a KV-term f64 sum) and the
        // difference carry f64 roundings, γ₆₄(KV + 3)·(|v| + max|v|). When one key
        // dominates, v_t − O is below f64's resolution and rounds to 0 while e^λ_t may be
        // 10⁵¹ (a softcap argument past 88, where tanh is only known to lie in [−1, 1]):
        // the exact product is not 0 (the emulation in tests/bounds_soundness.rs found it).
        let g64 = (kv as f64 + 3.0) * 2f64.powi(-53);
        let out_row = &fa.out.values[first..first + dv];
        let zeros = vec![0.0f64; dv];
        let mut a = zeros.clone();
        let mut s1 = zeros.clone();
        let mut a_top = zeros.clone();
        let mut s1_top: Vec<f64> = v_values[v_at(top)..v_at(top) + dv]
            .iter()
            .map(|v| v.abs())
            .collect();
        let (mut vdec, mut flush_prod, mut v_sum) = (zeros.clone(), zeros.clone(), zeros.clone());
        let (mut a_cap, mut v_err_max) = (zeros.clone(), zeros.clone());
        // Per tile: Σ of the normalised weighted |v| (f16 flushes of O's adds) and Σ|v̂| (the
        // range of cm2's per-tile f16 P·V), folded into `adds` and `tile_over` as each tile
        // ends.
        let (mut tile_sum, mut tile_abs) = (zeros.clone(), zeros.clone());
        let mut adds = zeros.clone();
        let mut tile_over = vec![false; dv];
        let bc_keys = bc.max(1) as usize;
        let p_max = 1.0 + 6.0 * ex;
        // cm2's per-tile f16 P·V grows by its roundings, γ_h(Bc + 1).
        let tile_growth = 1.0 + gamma_h(bc as f64 + 1.0);
        let close_tile = |tile_sum: &mut [f64], tile_abs: &mut [f64], adds: &mut [f64], over: &mut [bool]| {
            for i in 0..dv {
                adds[i] += tile_sum[i].min(bc as f64 * F16_MIN_NORMAL);
                over[i] |= cm2 && p_max * tile_abs[i] * tile_growth > F16_MAX;
            }
            tile_sum.fill(0.0);
            tile_abs.fill(0.0);
        };
        let mut tile = 0;
        for j in (0..kv).filter(live) {
            if coop && j / bc_keys != tile {
                close_tile(&mut tile_sum, &mut tile_abs, &mut adds, &mut tile_over);
                tile = j / bc_keys;
            }
            let p = row.weights[j];
            let grow = lambda[j].exp();
            let (p_em1, p_e) = (p * lambda[j].exp_m1(), p * grow);
            let rel = lambda[j] + l_top;
            let (p_em1_top, p_e_top) = (p * rel.exp_m1(), p * rel.exp());
            let w_rel = p / p_top * grow;
            let vrow = &v_values[v_at(j)..v_at(j) + dv];
            let erow = v_err.map(|e| &e[v_at(j)..v_at(j) + dv]);
            for i in 0..dv {
                let v = vrow[i];
                let diff = (v - out_row[i]).abs() + g64 * (v.abs() + vmax[i]);
                a_cap[i] = a_cap[i].max(diff);
                a[i] += p_em1 * diff;
                s1[i] += p_e * v.abs();
                if j != top {
                    a_top[i] += p_em1_top * diff;
                    s1_top[i] += p_e_top * v.abs() / p_top;
                }
                if coop {
                    let dec = erow.map_or(0.0, |e| e[i]);
                    if erow.is_some() {
                        vdec[i] += p_e * dec;
                        v_err_max[i] = v_err_max[i].max(dec);
                    }
                    let w = w_rel * v.abs();
                    flush_prod[i] += w.min(F16_MIN_NORMAL);
                    tile_sum[i] += w;
                    // For the f16 range of O: P̂_j = exp(Ŝ_j − M̂) ≤ 1 + 6·ε_x (its argument
                    // is ≤ 0; exp(0) within 3 ULP), times |v̂_j| ≤ |v_jd| + its decode error.
                    let v_hat = v.abs() + dec;
                    tile_abs[i] += v_hat;
                    v_sum[i] += v_hat;
                }
            }
        }
        if coop {
            close_tile(&mut tile_sum, &mut tile_abs, &mut adds, &mut tile_over);
        }
        for (i, b) in out.iter_mut().enumerate() {
            let o = out_row[i];
            // cm2 decodes every key of a tile, masked ones too, and multiplies their zero
            // weights in the f16 P·V: a decoded V element beyond f16 range (∞), or NaN, makes
            // that product 0·∞ or 0·NaN = NaN whether or not the key is masked (ggml's CPU
            // path skips masked keys, so its result is finite there).
            // O's partial sums are at most (1 + 6ε_x)·Σ|v̂_j| grown by their roundings
            // (1 + g_pv); cm2's per-tile f16 P·V by γ_h(Bc + 1).
            if coop
                && (v_over[i] || (f16acc && p_max * v_sum[i] * (1.0 + g_pv) > F16_MAX) || tile_over[i])
            {
                *b = f64::NAN;
                continue;
            }
            // The kernel's result is a convex combination of the v_j (non-negative weights over
            // their own sum), so it is never further than max_j |v_jd − O_d| from O (its
            // rounding aside), and its weighted |v| is at most max_j |v_jd|: caps for rows whose
            // logit errors leave the weights undetermined.
            let a = (a[i] / den).min(a_top[i] / p_top).min(a_cap[i]);
            let s1 = (s1[i] / den).min(s1_top[i]).min(vmax[i]);
            let ow = o.abs() + a;
            let mut extra_abs = 0.0;
            if coop {
                // Both also capped by the convex-combination argument: at most the largest
                // decode error, and 2⁻¹⁴ per f16 rounding over an L of at least 1 (the key at
                // the kernel's maximum has weight exp(0) = 1).
                extra_abs += (vdec[i] / den).min(v_err_max[i]);
                if f16_o_flush {
                    let den_w = den / p_top;
                    let cap = (2.0 * kv as f64 + 2.0) * F16_MIN_NORMAL + o16;
                    extra_abs += ((flush_prod[i] + adds[i] + o16) / den_w).min(cap);
                }
            }
            let bound = a
                + extra_abs
                + (g_pv * s1 + g_l * ow) * (1.0 + fin) / (1.0 - g_l)
                + fin * ow
                + floor_out * (1.0 + 2.0 * vmax[i]);
            // Not finite only through an infinite γ (an f16 chain whose worst case bounds
            // nothing): not judged, and counted, rather than passed by an infinite bound.
            *b = if bound.is_finite() { bound } else { f64::NAN };
        }
    });
    bounds
}
