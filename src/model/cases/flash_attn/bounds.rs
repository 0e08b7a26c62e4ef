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
    /// The op has sinks (later ggml): each row's sink joins as one more key whose value is 0
    /// (see [`flash_attn_bounds`]), and every term is rescaled once more. Set by
    /// [`flash_attn_bounds`] from the rows.
    pub sinks: bool,
    /// f32 roundings of one decoded K element and one V element on the scalar path: 1 for
    /// q4_1 and q5_1, whose d·q + m rounds once (d·q, an f16 times a 4- or 5-bit integer, is
    /// exact in f32), 0 for the rest (f32, f16 and bf16 widen exactly; d·q and iq4_nl's d·table
    /// value are exact). A K element k(1 + δ) is one more factor in each product of the dot
    /// product (one more in its γ), a V element one more in each term of P·V. The coopmat and
    /// f16 paths count the decode in [`f16_decode_units`] instead.
    pub decode_roundings: [u32; 2],
}

/// The scalar path's extra f32 roundings of a decoded element of type `t`
/// ([`FlashAttnShape::decode_roundings`]).
pub fn f32_decode_roundings(t: vkdiff_reference::DType) -> u32 {
    use vkdiff_reference::DType;
    u32::from(matches!(t, DType::Q4_1 | DType::Q5_1))
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
///
/// **Sinks.** A sink σ_h is a key whose value is 0 and whose logit is σ_h itself (read as f32,
/// then ACC_TYPE): the kernel folds it in after the last tile, as one more rescale
/// (O·e^(M − M'), L·e^(M − M') + e^(σ − M')), or in the split-k reduce. So the rows are judged
/// with that key appended (KV + 1 keys, V row 0, the reference's sink weight), one more tile
/// of rescales, and for the split-k reduce two more roundings. The sink's logit error is at
/// most e·|σ| (its rounding to ACC_TYPE; 0 in f32) plus 2⁻¹⁴ for an f16 flush: the key is
/// given dot magnitude |σ|·max(1, 1/|c|) (c the softcap, which the generic term multiplies by
/// and the sink does not take) and, with row data, Σ|k| = 1, so that the generic logit term
/// g_dot·|σ| (g_dot ≥ e) and the flush term cover it.
pub fn flash_attn_bounds(
    shape: &FlashAttnShape,
    fa: &vkdiff_reference::ops::flash_attn::FlashAttn,
    v_values: &[f64],
    v_ne: [usize; 4],
    extra: Option<(&[FaRowData], &[f64])>,
) -> Vec<f64> {
    if !fa.rows.iter().any(|r| r.sink.is_some()) {
        let shape = FlashAttnShape {
            sinks: false,
            ..*shape
        };
        return bounds_of(&shape, fa, v_values, v_ne, extra);
    }
    let cap = (shape.softcap as f64).abs();
    let widen = if cap != 0.0 { (1.0 / cap).max(1.0) } else { 1.0 };
    let mut with_sink = fa.clone();
    for row in &mut with_sink.rows {
        let s = row.sink.unwrap_or(f64::NEG_INFINITY);
        row.x.push(0.0);
        row.dot_magnitude.push(s.abs() * widen);
        row.mask.push(0.0);
        row.logits.push(s);
        row.weights.push(row.sink_weight);
    }
    // V (and its decode errors) with a zero key after the last one of each head.
    let [dv, kv, heads, batches] = v_ne;
    let append = |x: &[f64]| -> Vec<f64> {
        let mut out = Vec::with_capacity(dv * (kv + 1) * heads * batches);
        for head in x.chunks_exact(dv * kv) {
            out.extend_from_slice(head);
            out.extend(std::iter::repeat_n(0.0, dv));
        }
        out
    };
    let v_sink = append(v_values);
    let extra_sink = extra.map(|(rows, v_err)| {
        let rows: Vec<FaRowData> = rows
            .iter()
            .map(|x| {
                let mut x = x.clone();
                x.k_abs.push(1.0);
                x.k_err.push(0.0);
                x.k_max.push(0.0);
                x
            })
            .collect();
        (rows, append(v_err))
    });
    let shape = FlashAttnShape {
        kv: shape.kv + 1,
        sinks: true,
        ..*shape
    };
    bounds_of(
        &shape,
        &with_sink,
        &v_sink,
        [dv, kv + 1, heads, batches],
        extra_sink.as_ref().map(|(r, e)| (r.as_slice(), e.as_slice())),
    )
}

/// [`flash_attn_bounds`] for rows without sinks (or with their sink key appended).
fn bounds_of(
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
        sinks,
        decode_roundings: [k_round, v_round],
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
    // A sink rescales every term once more, as one more tile would.
    let sink_tile = if sinks { 1.0 } else { 0.0 };
    let tiles = kv.div_ceil(bc.max(1) as usize) as f64 + sink_tile;
    // One workgroup's keys and tiles: the depth of a key's chains before the split-k reduce.
    let chain_keys = if split_k > 1 { split_kv.min(kv) } else { kv };
    let chain_tiles = chain_keys.div_ceil(bc.max(1) as usize) as f64 + sink_tile;
    let groups = (wg / d_split).max(1) as f64;
    // With split-k the reduce applies the sink: L·ms + vs and O·ms, two more roundings.
    let split_depth = if split_k > 1 {
        split_k as f64 + 1.0 + 2.0 * sink_tile
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
        gamma((d / d_split as usize) as f64 + log_split + 5.0 + k_round as f64)
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
        (gamma(depth + v_round as f64), gamma(depth))
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
    let c = Consts {
        d,
        kv,
        bc,
        cm2,
        coop,
        f16acc,
        e,
        ex,
        g_dot,
        rescale,
        g_pv,
        g_l,
        fin,
        f16_o_flush,
        o16,
        cap,
        floor_dot: subnormal_floor(d),
        floor_out: subnormal_floor(kv + d),
        alibi,
        dv: fa.out.ne[0],
        v_range: cm2
            || arith == FaArith::ScalarF16
            || matches!(arith, FaArith::Cm1 { v_decoded: true, .. }),
        p_max: 1.0 + 6.0 * ex,
        // cm2's per-tile f16 P·V grows by its roundings, γ_h(Bc + 1).
        tile_growth: 1.0 + gamma_h(bc as f64 + 1.0),
        g64: (kv as f64 + 3.0) * 2f64.powi(-53),
    };
    let dv = c.dv;
    let mut bounds = vec![0.0; fa.out.values.len()];
    if dv == 0 || fa.rows.is_empty() {
        return bounds;
    }
    // Rows that read the same V (head and batch) go together, ROW_BLOCK at a time: each key's
    // V row is then read once for all of them. A row's own arithmetic is untouched by the
    // grouping (see `bound_block`), so every bound is the number a row alone would give.
    let mut order: Vec<usize> = (0..fa.rows.len()).collect();
    order.sort_by_key(|&r| (fa.rows[r].v_index.1, fa.rows[r].v_index.0));
    let blocks: Vec<&[usize]> = order
        .chunk_by(|&x, &y| fa.rows[x].v_index == fa.rows[y].v_index)
        .flat_map(|g| g.chunks(ROW_BLOCK))
        .collect();
    use rayon::prelude::*;
    // Each V head (and its decode errors) once in panels: keys contiguous per chunk of W
    // elements (see `panels`).
    let mut heads: Vec<(usize, usize)> = fa.rows.iter().map(|r| r.v_index).collect();
    heads.sort_unstable();
    heads.dedup();
    let v_err = extra.map(|(_, e)| e);
    let head_panels: Vec<(Vec<f64>, Option<Vec<f64>>)> = heads
        .par_iter()
        .map(|&(iv2, iv3)| {
            let base = (iv3 * v_ne[2] + iv2) * v_ne[1] * v_ne[0];
            (
                panels(v_values, base, v_ne[0], kv, dv),
                v_err.map(|e| panels(e, base, v_ne[0], kv, dv)),
            )
        })
        .collect();
    let done: Vec<Vec<(usize, Vec<f64>)>> = blocks
        .par_iter()
        .map(|rows| {
            let h = heads.binary_search(&fa.rows[rows[0]].v_index).expect("a V head");
            let (vp, ep) = &head_panels[h];
            bound_block(&c, fa, rows, v_values, v_ne, extra, (vp, ep.as_deref()))
        })
        .collect();
    for (r, b) in done.into_iter().flatten() {
        bounds[r * dv..(r + 1) * dv].copy_from_slice(&b);
    }
    bounds
}

/// V's elements (or their decode errors) for one head, `dv` per key from `base` on, `stride`
/// apart, rearranged so that each chunk of [`pass_keys`] reads its keys contiguously: the chunk
/// of elements i0 .. i0 + N (N = [`W`], or 1 for the elements past the last whole W) starts at
/// i0·KV and holds key j's N elements at j·N. (Read in place, key j's elements lie a V row
/// apart: at DV = 128, 1 KiB, so a chunk's 4,096 keys fell into 128 cache sets and missed.)
fn panels(values: &[f64], base: usize, stride: usize, kv: usize, dv: usize) -> Vec<f64> {
    let mut out = vec![0.0; kv * dv];
    let full = dv / W * W;
    for j in 0..kv {
        let row = &values[base + j * stride..][..dv];
        for (i, &x) in row.iter().enumerate() {
            let (start, n, l) = if i < full {
                (i / W * W, W, i % W)
            } else {
                (i, 1, 0)
            };
            out[start * kv + j * n + l] = x;
        }
    }
    out
}

/// Rows of one V whose bounds [`flash_attn_bounds`] computes together (their accumulators,
/// about 14 vectors of DV f64 each, stay in L2 while every key's V row passes once).
const ROW_BLOCK: usize = 8;

/// The constants of [`flash_attn_bounds`]' derivation for one dispatch (see its notes).
struct Consts {
    d: usize,
    kv: usize,
    bc: u32,
    cm2: bool,
    coop: bool,
    f16acc: bool,
    e: f64,
    ex: f64,
    g_dot: f64,
    rescale: f64,
    g_pv: f64,
    g_l: f64,
    fin: f64,
    f16_o_flush: bool,
    o16: f64,
    cap: f64,
    floor_dot: f64,
    floor_out: f64,
    alibi: vkdiff_reference::ops::flash_attn::Alibi,
    dv: usize,
    v_range: bool,
    p_max: f64,
    tile_growth: f64,
    g64: f64,
}

/// One live row's state while the keys pass: its weight terms and, per output element, the
/// sums and maxima the bound is made of.
struct RowAcc {
    /// dst row.
    r: usize,
    /// λ_j per key.
    lambda: Vec<f64>,
    /// Σ_k P_k e^(−λ_k) over the live keys.
    den: f64,
    /// The key at the maximum logit, its weight and λ.
    top: usize,
    p_top: f64,
    l_top: f64,
    vmax: Vec<f64>,
    a: Vec<f64>,
    s1: Vec<f64>,
    a_top: Vec<f64>,
    s1_top: Vec<f64>,
    a_cap: Vec<f64>,
    vdec: Vec<f64>,
    v_err_max: Vec<f64>,
    flush_prod: Vec<f64>,
    v_sum: Vec<f64>,
    adds: Vec<f64>,
    tile_over: Vec<bool>,
}

/// What a row needs before its keys pass.
enum Prep {
    /// Fully masked or a non-finite logit: bound 0 (its exact value is NaN).
    Zero,
    /// Beyond f16 range somewhere the path converts: NaN (not judged).
    Nan,
    /// Judged: its weight terms.
    Live(Box<RowAcc>),
}

/// σ_j, λ_j, the denominator and the top key of row `r`, or why it has none.
fn prep_row(
    c: &Consts,
    fa: &vkdiff_reference::ops::flash_attn::FlashAttn,
    r: usize,
    extra: Option<(&[FaRowData], &[f64])>,
) -> Prep {
    let Consts {
        d,
        kv,
        cm2,
        coop,
        f16acc,
        e,
        ex,
        g_dot,
        rescale,
        cap,
        floor_dot,
        alibi,
        ..
    } = *c;
    let row = &fa.rows[r];
    if row.fully_masked || row.non_finite {
        return Prep::Zero;
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
                (row.dot_magnitude[j] + x.k_err[j]) * (1.0 + g_dot) + row.logits[j].abs() > F16_MAX
            });
        if q_over || k_over || s_over {
            return Prep::Nan;
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
    let zeros = vec![0.0f64; c.dv];
    Prep::Live(Box::new(RowAcc {
        r,
        lambda,
        den,
        top,
        p_top,
        l_top,
        vmax: zeros.clone(),
        a: zeros.clone(),
        s1: zeros.clone(),
        a_top: zeros.clone(),
        s1_top: zeros.clone(),
        a_cap: zeros.clone(),
        vdec: zeros.clone(),
        v_err_max: zeros.clone(),
        flush_prod: zeros.clone(),
        v_sum: zeros.clone(),
        adds: zeros,
        tile_over: vec![false; c.dv],
    }))
}

/// The bounds of a block of rows that read the same V: (dst row, its DV bounds) for every row
/// whose bound is not 0.
///
/// Keys outer, rows and then elements inner: each key's V row is read once for the block, and
/// its weight factors (exp of λ) are taken once per row and key, not once per element. Every
/// element's sums still add the keys in ascending order with the same products, rounded the
/// same way, so the bounds are the same numbers as an element-by-element walk (the test
/// module compares them with the first implementation, bit for bit).
fn bound_block(
    c: &Consts,
    fa: &vkdiff_reference::ops::flash_attn::FlashAttn,
    rows: &[usize],
    v_values: &[f64],
    v_ne: [usize; 4],
    extra: Option<(&[FaRowData], &[f64])>,
    (vp, ep): (&[f64], Option<&[f64]>),
) -> Vec<(usize, Vec<f64>)> {
    let dv = c.dv;
    let mut out = Vec::new();
    let mut accs = Vec::new();
    let mut zero = Vec::new();
    for &r in rows {
        match prep_row(c, fa, r, extra) {
            Prep::Zero => zero.push(r),
            Prep::Nan => out.push((r, vec![f64::NAN; dv])),
            Prep::Live(acc) => accs.push(*acc),
        }
    }
    let (iv2, iv3) = fa.rows[rows[0]].v_index;
    // Key j's V row starts at base + j·stride.
    let (base, stride) = ((iv3 * v_ne[2] + iv2) * v_ne[1] * v_ne[0], v_ne[0]);
    // A fully masked row is exactly 0 (ggml's CPU skips masked keys), but cm2 multiplies the
    // zero weights of masked keys by their decoded V too (as in finish_row): an element beyond
    // f16 range or NaN in any key makes that output element NaN, so it is not judged.
    if c.coop && c.v_range && !zero.is_empty() {
        let over: Vec<bool> = (0..dv)
            .map(|i| {
                (0..c.kv).any(|j| {
                    let v = v_values[base + j * stride + i];
                    v.is_nan() || v.abs() > F16_MAX
                })
            })
            .collect();
        if over.contains(&true) {
            let b: Vec<f64> = over
                .iter()
                .map(|&o| if o { f64::NAN } else { 0.0 })
                .collect();
            out.extend(zero.iter().map(|&r| (r, b.clone())));
        }
    }
    if accs.is_empty() {
        return out;
    }
    // The top key's own |v| starts its S1 candidate (see the notes).
    for acc in accs.iter_mut() {
        let vt = &v_values[base + acc.top * stride..][..dv];
        for (s, v) in acc.s1_top.iter_mut().zip(vt) {
            *s = v.abs();
        }
    }
    let mut v_over = vec![false; dv];
    pass_keys(c, fa, &mut accs, &mut v_over, vp, ep);
    for acc in &accs {
        out.push((acc.r, finish_row(c, fa, acc, &v_over)));
    }
    out
}

/// Both passes over the keys for a block: the largest |v_jd| over each row's live keys (which
/// |v_jd − O_d|'s f64 rounding term needs) and f16-range overflow of decoded V (any key, masked
/// or not: the same for every row of the block), then every row's sums. Compiled for
/// AVX-512 and AVX2 too (picked at run time; the same operations in the same order, so the
/// same bits).
#[allow(clippy::too_many_arguments)]
fn pass_keys(
    c: &Consts,
    fa: &vkdiff_reference::ops::flash_attn::FlashAttn,
    accs: &mut [RowAcc],
    v_over: &mut [bool],
    vp: &[f64],
    ep: Option<&[f64]>,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked just above).
            return unsafe { pass_keys_avx512(c, fa, accs, v_over, vp, ep) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { pass_keys_avx2(c, fa, accs, v_over, vp, ep) };
        }
    }
    pass_keys_body(c, fa, accs, v_over, vp, ep)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn pass_keys_avx512(
    c: &Consts,
    fa: &vkdiff_reference::ops::flash_attn::FlashAttn,
    accs: &mut [RowAcc],
    v_over: &mut [bool],
    vp: &[f64],
    ep: Option<&[f64]>,
) {
    pass_keys_body(c, fa, accs, v_over, vp, ep)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
unsafe fn pass_keys_avx2(
    c: &Consts,
    fa: &vkdiff_reference::ops::flash_attn::FlashAttn,
    accs: &mut [RowAcc],
    v_over: &mut [bool],
    vp: &[f64],
    ep: Option<&[f64]>,
) {
    pass_keys_body(c, fa, accs, v_over, vp, ep)
}

/// [`pass_keys`]' work. The per-key factors are taken once per row and key; then the elements
/// go [`W`] at a time, each chunk's sums held in registers while all of a row's keys pass (the
/// chunk's V column, a few hundred KiB, stays in L2 for the block's rows).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn pass_keys_body(
    c: &Consts,
    fa: &vkdiff_reference::ops::flash_attn::FlashAttn,
    accs: &mut [RowAcc],
    v_over: &mut [bool],
    vp: &[f64],
    ep: Option<&[f64]>,
) {
    let (dv, kv) = (c.dv, c.kv);
    // Every row's live keys, ascending, with their factors.
    let keys: Vec<Vec<KeyTerms>> = accs
        .iter()
        .map(|acc| {
            let row = &fa.rows[acc.r];
            (0..kv)
                .filter(|&j| row.logits[j] != f64::NEG_INFINITY)
                .map(|j| {
                    let p = row.weights[j];
                    let lambda = acc.lambda[j];
                    let grow = lambda.exp();
                    let rel = lambda + acc.l_top;
                    KeyTerms {
                        j,
                        p_em1: p * lambda.exp_m1(),
                        p_e: p * grow,
                        p_em1_top: p * rel.exp_m1(),
                        p_e_top: p * rel.exp(),
                        w_rel: p / acc.p_top * grow,
                    }
                })
                .collect()
        })
        .collect();
    let mut i0 = 0;
    while i0 + W <= dv {
        chunk::<W>(c, fa, accs, &keys, v_over, vp, ep, Layout { base: i0 * kv, i0 });
        i0 += W;
    }
    while i0 < dv {
        chunk::<1>(c, fa, accs, &keys, v_over, vp, ep, Layout { base: i0 * kv, i0 });
        i0 += 1;
    }
}

/// Output elements a chunk of [`pass_keys`] keeps in registers (one AVX-512 vector).
const W: usize = 8;

/// One live key of a row: its index and the factors its sums take (see the notes).
#[derive(Clone, Copy)]
struct KeyTerms {
    j: usize,
    p_em1: f64,
    p_e: f64,
    p_em1_top: f64,
    p_e_top: f64,
    w_rel: f64,
}

/// A chunk: its first element i0, and where its panel starts (see [`panels`]).
#[derive(Clone, Copy)]
struct Layout {
    base: usize,
    i0: usize,
}

impl Layout {
    /// Key j's N elements of the chunk.
    #[inline(always)]
    fn load<const N: usize>(self, panel: &[f64], j: usize) -> [f64; N] {
        let mut x = [0.0; N];
        x.copy_from_slice(&panel[self.base + j * N..][..N]);
        x
    }
}

/// Elements i0 .. i0 + N of every row of a block: V's f16 range (any key), each row's largest
/// |v| over its live keys, then each row's sums.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn chunk<const N: usize>(
    c: &Consts,
    fa: &vkdiff_reference::ops::flash_attn::FlashAttn,
    accs: &mut [RowAcc],
    keys: &[Vec<KeyTerms>],
    v_over: &mut [bool],
    vp: &[f64],
    ep: Option<&[f64]>,
    at: Layout,
) {
    let i0 = at.i0;
    if c.v_range {
        let mut over = [false; N];
        for j in 0..c.kv {
            let v = at.load::<N>(vp, j);
            for l in 0..N {
                over[l] |= v[l].is_nan() || v[l].abs() > F16_MAX;
            }
        }
        for l in 0..N {
            v_over[i0 + l] |= over[l];
        }
    }
    for (acc, keys) in accs.iter_mut().zip(keys) {
        // The largest |v| over the live keys, in four independent maxima (f64::max ignores a
        // NaN and every |v| is ≥ +0, so the result is the largest non-NaN |v| or 0 in any
        // order: the same bits as one running maximum).
        let mut m4 = [[0.0f64; N]; 4];
        let mut quads = keys.chunks_exact(4);
        for ks in &mut quads {
            for (m, k) in m4.iter_mut().zip(ks) {
                let v = at.load::<N>(vp, k.j);
                for l in 0..N {
                    m[l] = m[l].max(v[l].abs());
                }
            }
        }
        for k in quads.remainder() {
            let v = at.load::<N>(vp, k.j);
            for l in 0..N {
                m4[0][l] = m4[0][l].max(v[l].abs());
            }
        }
        let mut vmax = [0.0f64; N];
        for l in 0..N {
            vmax[l] = m4[0][l].max(m4[1][l]).max(m4[2][l].max(m4[3][l]));
        }
        acc.vmax[i0..i0 + N].copy_from_slice(&vmax);
        let mut out = [0.0; N];
        out.copy_from_slice(&fa.out.values[acc.r * c.dv + i0..][..N]);
        match (c.coop, ep) {
            (false, _) => row_sums::<N, false, false>(c, acc, keys, vp, vp, at, out),
            (true, None) => row_sums::<N, true, false>(c, acc, keys, vp, vp, at, out),
            (true, Some(e)) => row_sums::<N, true, true>(c, acc, keys, vp, e, at, out),
        }
    }
}

/// A row's sums over its live keys for one chunk of elements, in key order, each element
/// exactly as an element-by-element walk adds it (`vp`: V's panels; `COOP`: the coopmat paths'
/// sums too; `DEC`: `ep` holds the panels of V's f16 decode errors, otherwise the decode error is 0 and its own sums are
/// not touched).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn row_sums<const N: usize, const COOP: bool, const DEC: bool>(
    c: &Consts,
    acc: &mut RowAcc,
    keys: &[KeyTerms],
    vp: &[f64],
    ep: &[f64],
    at: Layout,
    out: [f64; N],
) {
    let i0 = at.i0;
    let mut vmax = [0.0; N];
    vmax.copy_from_slice(&acc.vmax[i0..i0 + N]);
    let mut s1_top = [0.0; N];
    s1_top.copy_from_slice(&acc.s1_top[i0..i0 + N]);
    let z = [0.0f64; N];
    let (mut a, mut s1, mut a_top, mut a_cap) = (z, z, z, z);
    let (mut vdec, mut v_err_max, mut flush_prod) = (z, z, z);
    let (mut v_sum, mut tile_sum, mut tile_abs) = (z, z, z);
    let (mut adds, mut tile_over) = (z, [false; N]);
    let (top, p_top, g64) = (acc.top, acc.p_top, c.g64);
    let bc_keys = c.bc.max(1) as usize;
    let flush_cap = c.bc as f64 * F16_MIN_NORMAL;
    let mut tile = 0;
    for k in keys {
        let j = k.j;
        if COOP && j / bc_keys != tile {
            // The row's previous tile ends: f16 flushes of O's adds, cm2's per-tile range.
            for l in 0..N {
                adds[l] += tile_sum[l].min(flush_cap);
                tile_over[l] |= c.cm2 && c.p_max * tile_abs[l] * c.tile_growth > F16_MAX;
            }
            tile_sum = z;
            tile_abs = z;
            tile = j / bc_keys;
        }
        let v = at.load::<N>(vp, j);
        if j != top {
            for l in 0..N {
                let diff = (v[l] - out[l]).abs() + g64 * (v[l].abs() + vmax[l]);
                a_cap[l] = a_cap[l].max(diff);
                a[l] += k.p_em1 * diff;
                s1[l] += k.p_e * v[l].abs();
                a_top[l] += k.p_em1_top * diff;
                s1_top[l] += k.p_e_top * v[l].abs() / p_top;
            }
        } else {
            for l in 0..N {
                let diff = (v[l] - out[l]).abs() + g64 * (v[l].abs() + vmax[l]);
                a_cap[l] = a_cap[l].max(diff);
                a[l] += k.p_em1 * diff;
                s1[l] += k.p_e * v[l].abs();
            }
        }
        if COOP {
            let e = if DEC { at.load::<N>(ep, j) } else { [0.0; N] };
            for l in 0..N {
                let dec = e[l];
                if DEC {
                    vdec[l] += k.p_e * dec;
                    v_err_max[l] = v_err_max[l].max(dec);
                }
                let w = k.w_rel * v[l].abs();
                flush_prod[l] += w.min(F16_MIN_NORMAL);
                tile_sum[l] += w;
                // For the f16 range of O: P̂_j = exp(Ŝ_j − M̂) ≤ 1 + 6·ε_x (its argument is
                // ≤ 0; exp(0) within 3 ULP), times |v̂_j| ≤ |v_jd| + its decode error.
                let v_hat = v[l].abs() + dec;
                tile_abs[l] += v_hat;
                v_sum[l] += v_hat;
            }
        }
    }
    if COOP {
        for l in 0..N {
            adds[l] += tile_sum[l].min(flush_cap);
            tile_over[l] |= c.cm2 && c.p_max * tile_abs[l] * c.tile_growth > F16_MAX;
        }
    }
    let r = i0..i0 + N;
    acc.a[r.clone()].copy_from_slice(&a);
    acc.s1[r.clone()].copy_from_slice(&s1);
    acc.a_top[r.clone()].copy_from_slice(&a_top);
    acc.s1_top[r.clone()].copy_from_slice(&s1_top);
    acc.a_cap[r.clone()].copy_from_slice(&a_cap);
    acc.vdec[r.clone()].copy_from_slice(&vdec);
    acc.v_err_max[r.clone()].copy_from_slice(&v_err_max);
    acc.flush_prod[r.clone()].copy_from_slice(&flush_prod);
    acc.v_sum[r.clone()].copy_from_slice(&v_sum);
    acc.adds[r.clone()].copy_from_slice(&adds);
    acc.tile_over[r].copy_from_slice(&tile_over);
}

/// A row's bounds from its finished sums.
fn finish_row(
    c: &Consts,
    fa: &vkdiff_reference::ops::flash_attn::FlashAttn,
    acc: &RowAcc,
    v_over: &[bool],
) -> Vec<f64> {
    let dv = c.dv;
    let out_row = &fa.out.values[acc.r * dv..][..dv];
    let (den, p_top) = (acc.den, acc.p_top);
    let (g_pv, g_l, fin) = (c.g_pv, c.g_l, c.fin);
    let kv = c.kv;
    (0..dv)
        .map(|i| {
            let o = out_row[i];
            // cm2 decodes every key of a tile, masked ones too, and multiplies their zero
            // weights in the f16 P·V: a decoded V element beyond f16 range (∞), or NaN, makes
            // that product 0·∞ or 0·NaN = NaN whether or not the key is masked (ggml's CPU
            // path skips masked keys, so its result is finite there).
            // O's partial sums are at most (1 + 6ε_x)·Σ|v̂_j| grown by their roundings
            // (1 + g_pv); cm2's per-tile f16 P·V by γ_h(Bc + 1).
            if c.coop
                && (v_over[i]
                    || (c.f16acc && c.p_max * acc.v_sum[i] * (1.0 + g_pv) > F16_MAX)
                    || acc.tile_over[i])
            {
                return f64::NAN;
            }
            // The kernel's result is a convex combination of the v_j (non-negative weights over
            // their own sum), so it is never further than max_j |v_jd − O_d| from O (its
            // rounding aside), and its weighted |v| is at most max_j |v_jd|: caps for rows whose
            // logit errors leave the weights undetermined.
            let a = (acc.a[i] / den).min(acc.a_top[i] / p_top).min(acc.a_cap[i]);
            let s1 = (acc.s1[i] / den).min(acc.s1_top[i]).min(acc.vmax[i]);
            let ow = o.abs() + a;
            let mut extra_abs = 0.0;
            if c.coop {
                // Both also capped by the convex-combination argument: at most the largest
                // decode error, and 2⁻¹⁴ per f16 rounding over an L of at least 1 (the key at
                // the kernel's maximum has weight exp(0) = 1).
                extra_abs += (acc.vdec[i] / den).min(acc.v_err_max[i]);
                if c.f16_o_flush {
                    let den_w = den / p_top;
                    let cap = (2.0 * kv as f64 + 2.0) * F16_MIN_NORMAL + c.o16;
                    extra_abs += ((acc.flush_prod[i] + acc.adds[i] + c.o16) / den_w).min(cap);
                }
            }
            let bound = a
                + extra_abs
                + (g_pv * s1 + g_l * ow) * (1.0 + fin) / (1.0 - g_l)
                + fin * ow
                + c.floor_out * (1.0 + 2.0 * acc.vmax[i]);
            // Not finite only through an infinite γ (an f16 chain whose worst case bounds
            // nothing): not judged, and counted, rather than passed by an infinite bound.
            if bound.is_finite() {
                bound
            } else {
                f64::NAN
            }
        })
        .collect()
}

#[cfg(test)]
mod naive;

#[cfg(test)]
mod tests {
    use super::naive::flash_attn_bounds_plain;
    use super::*;
    use vkdiff_reference::ops::flash_attn::{
        flash_attn_ext, Alibi, FlashAttnInputs, FlashAttnParams,
    };
    use vkdiff_reference::tensor::Tensor;
    use vkdiff_reference::DType;

    /// splitmix64 (no dependency).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f32 {
            (self.unit() * 2.0 - 1.0 + self.unit() * 2.0 - 1.0) as f32
        }
    }

    /// The fast bounds equal the first implementation's, bit for bit, on random small shapes:
    /// masks with fully masked rows, ALiBi, softcap, V beyond f16 range or NaN, every path's
    /// arithmetic with and without split-k, coopmat row data that overflows f16 now and then.
    #[test]
    fn fast_bounds_equal_the_plain_ones() {
        let mut rng = Rng(7);
        let mut compared = 0usize;
        for case in 0..300 {
            let d = [4, 8, 16][rng.below(3)];
            let dv = if rng.below(4) == 0 { 8 } else { d };
            let kv = 1 + rng.below(150);
            let n = 1 + rng.below(4);
            let (kv_heads, gqa, ne3) = (1 + rng.below(2), 1 + rng.below(3), 1 + rng.below(2));
            let h = kv_heads * gqa;
            let big = case % 7 == 3;
            let values = |rng: &mut Rng, len: usize, spread: f32| -> Vec<f32> {
                (0..len)
                    .map(|_| {
                        let x = rng.normal() * spread;
                        match rng.below(400) {
                            0 if big => f32::NAN,
                            1 if big => 70000.0,
                            _ => x,
                        }
                    })
                    .collect()
            };
            let q = Tensor::from_f32(DType::F32, [d, n, h, ne3], &values(&mut rng, d * n * h * ne3, 1.0)).unwrap();
            let k = Tensor::from_f32(DType::F16, [d, kv, kv_heads, ne3], &values(&mut rng, d * kv * kv_heads * ne3, 1.0)).unwrap();
            let v_spread = [1.0, 8.0][rng.below(2)];
            let v = Tensor::from_f32(DType::F16, [dv, kv, kv_heads, ne3], &values(&mut rng, dv * kv * kv_heads * ne3, v_spread)).unwrap();
            let mask_kind = rng.below(4);
            let max_bias = if mask_kind > 0 && rng.below(3) == 0 { 2.0 } else { 0.0 };
            let mask = (mask_kind > 0).then(|| {
                let vals: Vec<f32> = (0..kv * n)
                    .map(|i| match mask_kind {
                        1 => -((i % kv) as f32 - (i / kv) as f32).abs(),
                        2 if rng.below(4) == 0 => f32::NEG_INFINITY,
                        3 if (i / kv) == 0 || rng.below(3) == 0 => f32::NEG_INFINITY,
                        _ => rng.normal(),
                    })
                    .collect();
                Tensor::from_f32(DType::F16, [kv, n, 1, 1], &vals).unwrap()
            });
            let softcap = if rng.below(4) == 0 { 3.0 } else { 0.0 };
            let params = FlashAttnParams {
                scale: 1.0 / (d as f32).sqrt(),
                max_bias,
                logit_softcap: softcap,
            };
            let inputs = FlashAttnInputs { q: &q, k: &k, v: &v, mask: mask.as_ref(), sinks: None, params };
            let Ok(want) = flash_attn_ext(&inputs) else { continue };
            let v_values = v.rows().unwrap();
            let arith = match rng.below(6) {
                0 | 1 => FaArith::Scalar,
                2 => FaArith::Cm1 { f16acc: rng.below(2) == 0, v_decoded: rng.below(2) == 0 },
                3 | 4 => FaArith::Cm2 { f16acc: rng.below(2) == 0 },
                _ => FaArith::ScalarF16,
            };
            let bc = [16, 32, 64][rng.below(3)];
            let split_k = if rng.below(3) == 0 { 2 } else { 1 };
            let shape = FlashAttnShape {
                d,
                kv,
                bc,
                wg: 128,
                d_split: [1, 4][rng.below(2)],
                split_k,
                split_kv: kv.div_ceil(2).next_multiple_of(bc as usize),
                softcap,
                alibi: Alibi::new(max_bias, h),
                arith,
                sinks: false,
                decode_roundings: [rng.below(2) as u32, rng.below(2) as u32],
            };
            let extra = (arith != FaArith::Scalar).then(|| {
                let rows: Vec<FaRowData> = want
                    .rows
                    .iter()
                    .map(|_| {
                        let r = rng.below(60) != 0;
                        FaRowData {
                            s_abs: rng.unit(),
                            q_abs: rng.unit() * 4.0,
                            q_max: if r { rng.unit() } else { 1e5 },
                            k_abs: (0..kv).map(|_| rng.unit() * 4.0).collect(),
                            k_err: (0..kv).map(|_| rng.unit() * 1e-3).collect(),
                            k_max: (0..kv)
                                .map(|_| if rng.below(2000) == 0 { 1e5 } else { rng.unit() })
                                .collect(),
                        }
                    })
                    .collect();
                let errs: Vec<f64> = (0..v_values.len()).map(|_| rng.unit() * 1e-3).collect();
                (rows, errs)
            });
            let extra = extra.as_ref().map(|(r, e)| (r.as_slice(), e.as_slice()));
            let fast = flash_attn_bounds(&shape, &want, &v_values, v.ne(), extra);
            let plain = flash_attn_bounds_plain(&shape, &want, &v_values, v.ne(), extra);
            assert_eq!(fast.len(), plain.len());
            for (i, (x, y)) in fast.iter().zip(&plain).enumerate() {
                assert!(
                    x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
                    "case {case} element {i}: fast {x:e}, plain {y:e} ({shape:?})"
                );
            }
            compared += fast.len();
        }
        assert!(compared > 10_000, "only {compared} bounds compared");
    }
}
