//! Error models: the one place where every per-element bound is defined and justified.
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
//! Each kernel's depth is derived below from the reduction structure its interface fixes.

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

/// γ(d) for f32 arithmetic: the relative error bound of a depth-d chain of roundings.
pub fn gamma(depth: f64) -> f64 {
    let du = depth * U32;
    du / (1.0 - du)
}

/// Floor for flushed subnormals over `terms` terms.
pub fn subnormal_floor(terms: usize) -> f64 {
    (terms as f64 + 1.0) * f32::MIN_POSITIVE as f64
}

/// Mat-vec (§5.7) with float A (see [`mul_mat_vec_depth_of`] for the block formats, whose
/// bodies take the K dimension in 8- or 16-element pieces): each of BLOCK_SIZE invocations
/// accumulates a strided share of the K terms sequentially, then the partial sums are
/// combined by a tree of depth ⌈log₂ BLOCK_SIZE⌉. The share costs ⌈K/BLOCK_SIZE⌉ roundings
/// per term with one fma per element (ours), and at most that + 3 for a body that reads A and
/// B in vec4s (upstream): a term is rounded by its product, up to three adds inside the vec4
/// dot and one add per later step, I + 3 with I = ⌈K/(4·BLOCK_SIZE)⌉ ≤ ⌈K/BLOCK_SIZE⌉ steps.
/// Formats with a minimum round d·q + m once more. Bound = γ(depth)·Σ_k|a_mk·b_nk| + floor.
pub fn mul_mat_vec_depth(k: usize, block_size: u32, has_min: bool) -> f64 {
    let per_invocation = k.div_ceil(block_size.max(1) as usize) as f64;
    let tree = (block_size.max(1) as f64).log2().ceil();
    per_invocation + tree + 3.0 + if has_min { 1.0 } else { 0.0 }
}

/// One split's partial (value, error bound) added to the running total: the first split is
/// the total; later ones cost one f32 add each, as `mul_mat_split_k_reduce.comp` sums the splits
/// in order (an f16 partial widens to f32 exactly).
fn add_split(first: bool, (total, total_err): (f64, f64), (sum, err): (f64, f64)) -> (f64, f64) {
    if first {
        return (sum, err);
    }
    let total = total + sum;
    let d = total_err + err;
    let (xlo, xhi) = ((total.abs() - d).max(0.0), total.abs() + d);
    (total, d + Fp::F32.rounding(xlo, xhi))
}

/// Bounds for mat-vec outputs from their exact magnitudes Σ|a·b|, by [`mul_mat_vec_depth`]
/// (float A; [`mul_mat_vec_bounds_of`] covers every A type).
pub fn mul_mat_vec_bounds(
    magnitudes: &[f64],
    k: usize,
    block_size: u32,
    has_min: bool,
) -> Vec<f64> {
    let g = gamma(mul_mat_vec_depth(k, block_size, has_min));
    magnitudes
        .iter()
        .map(|m| g * m + subnormal_floor(k))
        .collect()
}

/// Mat-vec depth for A type `a`, by the body that computes it (§5: the generic body of
/// `mul_mat_vec.comp` or a per-type super-block body). This refines [`mul_mat_vec_depth`], which
/// describes only float A exactly:
///
/// * **float A** (f32, f16, bf16): one element per step, [`mul_mat_vec_depth`] unchanged.
/// * **generic body, block A** (q4_0 … q8_0, iq4_nl, iq4_xs): an invocation takes 8-element
///   chunks tid, tid + BLOCK_SIZE, …, so it folds up to c = ⌈⌈K/8⌉/BLOCK_SIZE⌉ chunks of 8
///   terms into its sum: at most 8c roundings per term (8 sequential fmas per chunk would
///   reach it; our body, like ggml's, forms two 4-term dot products of q and b per chunk (4
///   roundings), rounds their sum (1) and folds it with d into the running sum in one fma (1),
///   then one rounding per later chunk: c + 5 ≤ 8c). This can exceed ⌈K/BLOCK_SIZE⌉ + 3 when K
///   is small against 8·BLOCK_SIZE (e.g. K = 32, BLOCK_SIZE = 32: 8 against 4), which is why
///   the count is by chunks. d·q is exact in f32 for every block format of this body (at most
///   23 significant bits: 11 of d, 12 of iq4_xs's kvalue·(ls − 32)); with a min, d·q + m
///   rounds once more (our body: before the dot products, c + 6 ≤ 8c + 1). Then the
///   ⌈log₂ BLOCK_SIZE⌉ tree.
/// * **K-quant bodies** (q2_K … q6_K, `mul_mat_vec_q*_k.comp`): 16 invocations per 256-element
///   super-block (§5.4); invocation tid takes the 16-element share tid mod 16 of super-blocks
///   ⌊tid/16⌋, ⌊tid/16⌋ + BLOCK_SIZE/16, …, i.e. up to S = ⌈(K/256)/(BLOCK_SIZE/16)⌉ of them.
///   A share is summed with at most 16 roundings per term (Σ q·b over 16 elements; the scale
///   products d·sc and dmin·m are exact in f32: ≤ 11 + 8 bits), then folded into the running
///   sum with one rounding per super-block, or two for the formats with a min (q2_K, q4_K,
///   q5_K), whose min part Σ b·dmin·m is folded separately. Depth 16 + S (16 + 2S with a min)
///   plus the tree. Our bodies (`mul_mat_vec_superblock.comp`) reach exactly this depth when
///   the device does not fuse fma (Vulkan allows a multiply and an add) and one less with a
///   min when it does; ggml's per-type bodies split the share into short dot products combined
///   with the scales, which stays within it.
pub fn mul_mat_vec_depth_of(a: vkdiff_reference::DType, k: usize, block_size: u32) -> f64 {
    use vkdiff_reference::DType;
    let bs = block_size.max(1) as usize;
    let tree = (bs as f64).log2().ceil();
    let per_super_block = match a {
        DType::Q2_K | DType::Q4_K | DType::Q5_K => Some(2),
        DType::Q3_K | DType::Q6_K => Some(1),
        // The lattice i-quants share the K-quant body (mul_mat_vec_iq_lattice.comp).
        t if DType::LATTICE_IQUANTS.contains(&t) => Some(1),
        _ => None,
    };
    if let Some(folds) = per_super_block {
        let lanes = (bs / 16).max(1);
        let s = (k / 256).div_ceil(lanes);
        return 16.0 + (folds * s) as f64 + tree;
    }
    if !a.is_quantized() {
        return mul_mat_vec_depth(k, block_size, false);
    }
    let chunks = k.div_ceil(8).div_ceil(bs);
    let has_min = matches!(a, DType::Q4_1 | DType::Q5_1);
    (8 * chunks) as f64 + tree + if has_min { 1.0 } else { 0.0 }
}

/// Bounds for mat-vec outputs with A of type `a` ([`mul_mat_vec_depth_of`]) from their exact
/// magnitudes Σ|a·b| (Σ(|d·sc·q| + |dmin·m|)·|b| for K-quants with a min).
///
/// The subnormal floor of the K-quant bodies is scaled by 2²³: a partial sum flushed to zero
/// loses < 2⁻¹²⁶ before it is multiplied by d·sc or dmin·m (|·| ≤ 65504·128 < 2²³), over at most
/// 3K flushable operations (a product-sum and a b-sum per element, and the folds). The generic
/// body's floor is scaled by 2¹⁶ for the same reason: a chunk's q·b sum is multiplied by d
/// (|d| ≤ 65504 < 2¹⁶) after it is formed, as in ggml's body.
pub fn mul_mat_vec_bounds_of(
    magnitudes: &[f64],
    k: usize,
    block_size: u32,
    a: vkdiff_reference::DType,
) -> Vec<f64> {
    use vkdiff_reference::DType;
    let g = gamma(mul_mat_vec_depth_of(a, k, block_size));
    let floor = match a {
        DType::Q2_K | DType::Q3_K | DType::Q4_K | DType::Q5_K | DType::Q6_K => {
            subnormal_floor(3 * k) * f64::from(1u32 << 23)
        }
        // Group scales ≤ 65504·31 < 2²³ (iq3_s; the others are smaller).
        t if DType::LATTICE_IQUANTS.contains(&t) => subnormal_floor(3 * k) * f64::from(1u32 << 23),
        t if t.is_quantized() => subnormal_floor(k) * f64::from(1u32 << 16),
        _ => subnormal_floor(k),
    };
    magnitudes.iter().map(|m| g * m + floor).collect()
}

/// Mat-vec ID (§5 with MUL_MAT_ID=1): each workgroup is a non-ID mat-vec workgroup with
/// NUM_COLS = 1 whose A matrix is the slot's expert, so every output has the mat-vec reduction
/// structure and its bound ([`mul_mat_vec_bounds_of`]) for the experts' type `a`.
pub fn mul_mat_vec_id_bounds(
    magnitudes: &[f64],
    k: usize,
    block_size: u32,
    a: vkdiff_reference::DType,
) -> Vec<f64> {
    mul_mat_vec_bounds_of(magnitudes, k, block_size, a)
}

/// RWKV-7 (§10): a running error bound on the recurrence, evaluated on the exact values. With
/// E the bound on the state's accumulated error (0 for the f32 input state), every magnitude is
/// taken of the *computed* value (exact magnitude plus its error bound), so the bound is a
/// strict upper bound, not a first-order estimate:
/// * sa_i = Σ_j a_j·St[i][j] (an S-term dot, any order):
///   e_sa = Σ|a_j|·E_ij + γ(S)·Σ|a_j|·(|St_ij| + E_ij)
/// * St'_ij = St_ij·w_j + v_i·k_j + sa_i·b_j (three products, two sums):
///   E'_ij = |w_j|·E_ij + |b_j|·e_sa + γ(3)·((|St_ij| + E_ij)·|w_j| + |v_i·k_j| + (|sa_i| + e_sa)·|b_j|)
/// * y_i = Σ_j r_j·St'_ij: e_y = Σ|r_j|·E'_ij + γ(S)·Σ|r_j|·(|St'_ij| + E'_ij)
///
/// plus a subnormal floor per result (flushing devices). The bound for each y is e_y, and for
/// the final state E. Errors carried by the state are damped or amplified exactly as the
/// recurrence does it (|w|, |b|), so long sequences get the growth they really have and no
/// more. `wkv7_bound_covers_emulated_f32` checks it against the shader's f32 arithmetic.
pub fn wkv7_bounds(s: usize, h: usize, t: usize, seqs: usize, inputs: [&[f64]; 7]) -> Vec<f64> {
    let [r, w, k, v, a, b, state] = inputs;
    let c = s * h;
    let per_seq = t / seqs;
    let (g_dot, g3) = (gamma(s as f64), gamma(3.0));
    let floor = subnormal_floor(s);
    let mut bounds = vec![0.0; c * (t + s * seqs)];
    for seq in 0..seqs {
        for head in 0..h {
            let mut st = state[seq * c * s + head * s * s..][..s * s].to_vec();
            let mut err = vec![0.0f64; s * s];
            for tt in 0..per_seq {
                let tok = seq * per_seq + tt;
                let at = tok * c + head * s;
                let [r, w, k, v, a, b] = [r, w, k, v, a, b].map(|x| &x[at..at + s]);
                for i in 0..s {
                    let (row, e) = (&mut st[i * s..(i + 1) * s], &mut err[i * s..(i + 1) * s]);
                    let sa: f64 = row.iter().zip(a).map(|(x, y)| x * y).sum();
                    let sa_mag: f64 = row
                        .iter()
                        .zip(e.iter())
                        .zip(a)
                        .map(|((x, e), y)| (x.abs() + e) * y.abs())
                        .sum();
                    let e_sa = e.iter().zip(a).map(|(e, y)| e * y.abs()).sum::<f64>()
                        + g_dot * sa_mag
                        + floor;
                    for j in 0..s {
                        let terms = (row[j].abs() + e[j]) * w[j].abs()
                            + (v[i] * k[j]).abs()
                            + (sa.abs() + e_sa) * b[j].abs();
                        e[j] = w[j].abs() * e[j] + b[j].abs() * e_sa + g3 * terms + floor;
                        row[j] = row[j] * w[j] + v[i] * k[j] + sa * b[j];
                    }
                    let y_mag: f64 = row
                        .iter()
                        .zip(e.iter())
                        .zip(r)
                        .map(|((x, e), y)| (x.abs() + e) * y.abs())
                        .sum();
                    bounds[tok * c + head * s + i] =
                        e.iter().zip(r).map(|(e, y)| e * y.abs()).sum::<f64>()
                            + g_dot * y_mag
                            + floor;
                }
            }
            bounds[t * c + seq * c * s + head * s * s..][..s * s].copy_from_slice(&err);
        }
    }
    bounds
}

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
    },
    /// `flash_attn_cm2.comp`: f16 Q·f16 scale, f16-decoded K and V, S, softmax and O in
    /// ACC_TYPE, f16 P, P·V in f16 per tile.
    Cm2 {
        /// ACC_TYPE is float16_t.
        f16acc: bool,
    },
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
/// * Sums: cm1 O chains in ACC_TYPE (γ_e(KV + tiles + 2)), L in f32 over the rounded P
///   (γ_u(KV + tiles + 2)); cm2 P·V in an f16 accumulator per tile (γ_h(Bc + 1)) then added to
///   O in ACC_TYPE (γ_e(tiles + 2) on top), L in ACC_TYPE (γ_e(KV + tiles + 2)). V's f16 decode
///   (cm2) adds Σ_j P_j e^λ_j |Δv_jd| / Σ_k P_k e^−λ_k. f16 flushes in P·V (cm2, and cm1's f16
///   O) add Σ_j min(w_j e^λ_j |v_jd|, 2⁻¹⁴) for the products and Σ_tiles min(Bc·2⁻¹⁴,
///   Σ_(j∈tile) w_j e^λ_j |v_jd|) for the adds (w_j = e^(S_j − M) ≤ 1: a product is only
///   flushed while tiny in its tile's units, which are never smaller than the final ones), plus
///   (2·tiles + 2)·2⁻¹⁴ for f16acc O, all over Σ_k w_k e^−λ_k ≤ L. The final scaling is cm1's
///   O·f16(1/L) (5u + h + e) or cm2's in ACC_TYPE (6e), and 2h more for an upstream kernel
///   whose L adds the unrounded weights (its O and L weights then differ by a factor within
///   1 ± h). With split-k, the reduce's f32 arithmetic as on the scalar path.
/// * **f16 range.** What the interface computes in f16 can overflow for inputs ggml accepts:
///   q̂ (|q|, |s'·q| > 65504), decoded K or V elements beyond 65504 (cm2 decodes blocks in f16;
///   cm1 stages K as f16; a K element of any key, masked or not, since ∞ − ∞ in S is NaN), with f16 accumulators the logits (|s'|Σ|q·k| + error > 65504) and
///   O's partial sums (Σ_j |v_jd| over the row's live keys > 65504; cm2's per-tile P·V
///   accumulator is f16 even with f32 accumulators: per tile). On cm2 a decoded V element
///   beyond 65504, or NaN, of any key, masked or not, poisons its output column: its zero
///   weight times ∞ or NaN is NaN in the tile's f16 P·V (seen on the H100; upstream's cm2
///   multiplies whole tiles the same way, while ggml's CPU path skips masked keys). Where that
///   can happen the result
///   may be ±∞ or NaN and is not judged: the bound is NaN there (the case counts and reports
///   those elements). Upstream at the pinned commit does not clamp (§12 "later changed" 7).
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
        softcap,
        alibi,
        arith,
    } = *shape;
    let (cm1, cm2, f16acc) = match arith {
        FaArith::Scalar => (false, false, false),
        FaArith::Cm1 { f16acc } => (true, false, f16acc),
        FaArith::Cm2 { f16acc } => (false, true, f16acc),
    };
    let coop = cm1 || cm2;
    // ACC_TYPE's unit roundoff, and γ for it.
    let e = if f16acc { U16 } else { U32 };
    let gamma_e = |n: f64| {
        let x = n * e;
        x / (1.0 - x)
    };
    let gamma_h = |n: f64| {
        let x = n * U16;
        x / (1.0 - x)
    };
    let d_split = d_split.max(1);
    let log_split = (d_split as f64).log2().ceil();
    let tiles = kv.div_ceil(bc.max(1) as usize) as f64;
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
        (6.0 * ex + e) * (tiles + 3.0)
    } else {
        6.0 * U32 * (tiles + 3.0)
    };
    let (g_pv, g_l) = if cm1 {
        let depth = kv as f64 + tiles + 2.0;
        (gamma_e(depth), gamma(depth))
    } else if cm2 {
        (
            (1.0 + gamma_h(bc as f64 + 1.0)) * (1.0 + gamma_e(tiles + 2.0)) - 1.0,
            gamma_e(kv as f64 + tiles + 2.0),
        )
    } else {
        let depth = kv as f64 + tiles + groups + 2.0 + split_depth;
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
    let cap = softcap as f64;
    let floor_dot = subnormal_floor(d);
    let floor_out = subnormal_floor(kv + d);
    let dv = fa.out.ne[0];
    let mut bounds = vec![0.0; fa.out.values.len()];
    for (r, (row, out)) in fa.rows.iter().zip(bounds.chunks_exact_mut(dv)).enumerate() {
        if row.fully_masked || row.non_finite {
            continue;
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
                continue;
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
        for (i, b) in out.iter_mut().enumerate() {
            let o = fa.out.values[first + i];
            let (mut a, mut s1, mut vmax) = (0.0, 0.0, 0.0f64);
            let (mut a_top, mut s1_top) = (0.0, v_values[v_at(top) + i].abs());
            let (mut vdec, mut flush_prod, mut v_sum) = (0.0, 0.0, 0.0);
            let mut tile_sums = vec![0.0; tiles as usize];
            let mut tile_abs = vec![0.0; tiles as usize];
            let mut v_over = false;
            let mut a_cap = 0.0f64;
            let mut v_err_max = 0.0f64;
            // |v_jd − O_d| as f64 numbers: the reference's O (a KV-term f64 sum) and the
            // difference carry f64 roundings, γ₆₄(KV + 3)·(|v| + max|v|). When one key
            // dominates, v_t − O is below f64's resolution and rounds to 0 while e^λ_t may be
            // 10⁵¹ (a softcap argument past 88, where tanh is only known to lie in [−1, 1]):
            // the exact product is not 0 (the emulation in tests/bounds_soundness.rs found it).
            let g64 = (kv as f64 + 3.0) * 2f64.powi(-53);
            let vmax_all = (0..kv)
                .filter(live)
                .map(|j| v_values[v_at(j) + i].abs())
                .fold(0.0, f64::max);
            for j in (0..kv).filter(live) {
                let v = v_values[v_at(j) + i];
                let p = row.weights[j];
                let diff = (v - o).abs() + g64 * (v.abs() + vmax_all);
                a_cap = a_cap.max(diff);
                a += p * lambda[j].exp_m1() * diff;
                s1 += p * lambda[j].exp() * v.abs();
                if j != top {
                    let rel = lambda[j] + l_top;
                    a_top += p * rel.exp_m1() * diff;
                    s1_top += p * rel.exp() * v.abs() / p_top;
                }
                vmax = vmax.max(v.abs());
                if coop {
                    let t = j / bc.max(1) as usize;
                    if let Some((_, v_err)) = extra {
                        vdec += p * lambda[j].exp() * v_err[v_at(j) + i];
                        v_err_max = v_err_max.max(v_err[v_at(j) + i]);
                    }
                    let w = p / p_top * lambda[j].exp() * v.abs();
                    flush_prod += w.min(F16_MIN_NORMAL);
                    tile_sums[t] += w;
                    // For the f16 range of O: P̂_j = exp(Ŝ_j − M̂) ≤ 1 + 6·ε_x (its argument
                    // is ≤ 0; exp(0) within 3 ULP), times |v̂_j| ≤ |v_jd| + its decode error.
                    let v_hat = v.abs() + extra.map_or(0.0, |(_, e)| e[v_at(j) + i]);
                    tile_abs[t] += v_hat;
                    v_sum += v_hat;
                }
            }
            // cm2 decodes every key of a tile, masked ones too, and multiplies their zero
            // weights in the f16 P·V: a decoded V element beyond f16 range (∞), or NaN, makes
            // that product 0·∞ or 0·NaN = NaN whether or not the key is masked (ggml's CPU
            // path skips masked keys, so its result is finite there).
            if cm2 {
                v_over = (0..kv).any(|j| {
                    let v = v_values[v_at(j) + i].abs();
                    v.is_nan() || v > F16_MAX
                });
            }
            if coop {
                // O's partial sums are at most (1 + 6ε_x)·Σ|v̂_j| grown by their roundings
                // (1 + g_pv); cm2's per-tile f16 P·V by γ_h(Bc + 1).
                let p_max = 1.0 + 6.0 * ex;
                let over = v_over
                    || (f16acc && p_max * v_sum * (1.0 + g_pv) > F16_MAX)
                    || (cm2
                        && tile_abs
                            .iter()
                            .any(|&t| p_max * t * (1.0 + gamma_h(bc as f64 + 1.0)) > F16_MAX));
                if over {
                    *b = f64::NAN;
                    continue;
                }
            }
            // The kernel's result is a convex combination of the v_j (non-negative weights over
            // their own sum), so it is never further than max_j |v_jd − O_d| from O (its
            // rounding aside), and its weighted |v| is at most max_j |v_jd|: caps for rows whose
            // logit errors leave the weights undetermined.
            let a = (a / den).min(a_top / p_top).min(a_cap);
            let s1 = (s1 / den).min(s1_top).min(vmax);
            let ow = o.abs() + a;
            let mut extra_abs = 0.0;
            if coop {
                // Both also capped by the convex-combination argument: at most the largest
                // decode error, and 2⁻¹⁴ per f16 rounding over an L of at least 1 (the key at
                // the kernel's maximum has weight exp(0) = 1).
                extra_abs += (vdec / den).min(v_err_max);
                if f16_o_flush {
                    let den_w = den / p_top;
                    let adds: f64 = tile_sums
                        .iter()
                        .map(|&t| t.min(bc as f64 * F16_MIN_NORMAL))
                        .sum();
                    let o16 = if f16acc {
                        (2.0 * tiles + 2.0) * F16_MIN_NORMAL
                    } else {
                        0.0
                    };
                    let cap = (2.0 * kv as f64 + 2.0) * F16_MIN_NORMAL + o16;
                    extra_abs += ((flush_prod + adds + o16) / den_w).min(cap);
                }
            }
            *b = a
                + extra_abs
                + (g_pv * s1 + g_l * ow) * (1.0 + fin) / (1.0 - g_l)
                + fin * ow
                + floor_out * (1.0 + 2.0 * vmax);
        }
    }
    bounds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gamma_is_about_d_times_u() {
        assert!((gamma(10.0) / (10.0 * U32) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn mat_vec_depth_by_body() {
        use vkdiff_reference::DType;
        // Float A: the element-wise model.
        assert_eq!(
            mul_mat_vec_depth_of(DType::F16, 256, 32),
            mul_mat_vec_depth(256, 32, false)
        );
        // Generic block body: K = 32 over 32 invocations is 4 chunks, one per invocation: 8
        // sequential fmas and a 5-level tree (the element count ⌈K/32⌉ = 1 would say 1).
        assert_eq!(mul_mat_vec_depth_of(DType::Q4_0, 32, 32), 8.0 + 5.0);
        assert_eq!(mul_mat_vec_depth_of(DType::Q4_1, 32, 32), 8.0 + 5.0 + 1.0);
        // K = 2048 over 16 invocations: 256 chunks, 16 each.
        assert_eq!(mul_mat_vec_depth_of(DType::Iq4Xs, 2048, 16), 128.0 + 4.0);
        // K-quants: K = 768 (3 super-blocks) over 16 invocations (one lane of super-blocks):
        // S = 3; over 32 invocations (two lanes): S = 2.
        assert_eq!(mul_mat_vec_depth_of(DType::Q6_K, 768, 16), 16.0 + 3.0 + 4.0);
        assert_eq!(mul_mat_vec_depth_of(DType::Q4_K, 768, 16), 16.0 + 6.0 + 4.0);
        assert_eq!(mul_mat_vec_depth_of(DType::Q2_K, 768, 32), 16.0 + 4.0 + 5.0);
    }

    #[test]
    fn mat_vec_depth_counts_chain_and_tree() {
        // K = 256 over 32 invocations: 8 sequential adds, a 5-level tree, 3 for vec4 and scale.
        assert_eq!(mul_mat_vec_depth(256, 32, false), 8.0 + 5.0 + 3.0);
        assert_eq!(mul_mat_vec_depth(1, 8, true), 1.0 + 3.0 + 3.0 + 1.0);
    }

    #[test]
    fn wkv7_bound_of_exact_single_step_is_rounding_only() {
        // S = 1, one token: sa = a·st, st' = st·w + v·k + sa·b, y = r·st'.
        let one = [1.0];
        let st = [2.0];
        let b = wkv7_bounds(1, 1, 1, 1, [&one, &one, &one, &one, &one, &one, &st]);
        let fl = subnormal_floor(1);
        let e_sa = gamma(1.0) * 2.0 + fl;
        let e_st = e_sa + gamma(3.0) * (2.0 + 1.0 + (2.0 + e_sa)) + fl;
        assert!((b[1] - e_st).abs() < 1e-20);
        assert!((b[0] - (e_st + gamma(1.0) * (5.0 + e_st) + fl)).abs() < 1e-20);
    }
}

// ---- Matrix-matrix (mul_mm.comp, MUL_MAT and MUL_MAT_ID) ----

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
    /// format: u·hi while the value is surely normal, hi when it is surely below the smallest
    /// normal (flushed, or rounded to a subnormal), the larger of both otherwise.
    pub fn rounding(self, lo: f64, hi: f64) -> f64 {
        let (u, tiny) = (self.unit(), self.min_normal());
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
    pub fn flushing(self, lo: f64, hi: f64) -> f64 {
        let tiny = self.min_normal();
        if lo >= tiny {
            0.0
        } else {
            hi.min(tiny)
        }
    }
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
                // ±65504: later upstream clamps f16 accumulators (§12 L7); recent ggml trees
                // in backend mode produce it where the pinned kernel produces ±∞.
                if ovf && (!g.is_finite() || f64::from(g.abs()) == F16_MAX) {
                    f64::NAN
                } else {
                    b
                }
            })
            .collect()
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
    (fa, fb, acc): (Fp, Fp, Fp),
    a_exact: bool,
) -> Vec<Special> {
    use rayon::prelude::*;
    columns
        .par_iter()
        .flat_map_iter(|&(a_first, b_row)| {
            let b = &b_rows[b_row * k..][..k];
            (0..m).map(move |i| {
                dot_special(&a_rows[(a_first + i) * k..][..k], b, fa, fb, acc, a_exact)
            })
        })
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
    columns
        .par_iter()
        .flat_map_iter(|&(a_first, b_row)| {
            let b = &b_rows[b_row * k..][..k];
            (0..m).map(move |i| {
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
    use rayon::prelude::*;
    let errors = |rows: &[f64], pre32: bool, fmt: Fp| -> Vec<(f64, bool)> {
        rows.par_iter()
            .map(|&x| mul_mm_operand_error(x, pre32, fmt))
            .collect()
    };
    let ea = errors(a_rows, arith.a_min_rounding, arith.a_operand);
    let eb = errors(b_rows, false, arith.b_operand);
    let acc = arith.acc;
    let exact = arith.exact_products();
    let split_k = arith.split_k.max(1);
    let k_split = if split_k > 1 { arith.k_split } else { k };
    let mut bounds = vec![0.0; m * columns.len()];
    let mut may_overflow = vec![false; m * columns.len()];
    bounds
        .par_chunks_mut(m.max(1))
        .zip(may_overflow.par_chunks_mut(m.max(1)))
        .zip(columns.par_iter())
        .for_each(|((out, ovf_out), &(a_first, b_row))| {
            let b = &b_rows[b_row * k..][..k];
            let eb = &eb[b_row * k..][..k];
            for (i, (o, ovf_o)) in out.iter_mut().zip(ovf_out.iter_mut()).enumerate() {
                let a = &a_rows[(a_first + i) * k..][..k];
                let ea = &ea[(a_first + i) * k..][..k];
                let mut ovf = false;
                let (mut total, mut total_err) = (0.0f64, 0.0f64);
                for s in 0..split_k {
                    let (from, to) = ((s * k_split).min(k), ((s + 1) * k_split).min(k));
                    let (mut sum, mut err, mut mag) = (0.0f64, 0.0f64, 0.0f64);
                    // This split's own overflow flag (the element's is the OR over splits).
                    let earlier = std::mem::take(&mut ovf);
                    for kk in from..to {
                        let (x, y, (ex, ox), (ey, oy)) = (a[kk], b[kk], ea[kk], eb[kk]);
                        let (ax, ay) = (x.abs(), y.abs());
                        ovf |= ox || oy;
                        // An operand that surely overflows makes the product undefined (∞·0
                        // is NaN, so no arithmetic on the bounds here).
                        let (e_in, hi) = if ex.is_finite() && ey.is_finite() {
                            (ax * ey + ay * ex + ex * ey, (ax + ex) * (ay + ey))
                        } else {
                            (f64::INFINITY, f64::INFINITY)
                        };
                        let lo = (ax - ex).max(0.0) * (ay - ey).max(0.0);
                        let e_p = if exact {
                            acc.flushing(lo, hi)
                        } else {
                            acc.rounding(lo, hi)
                        };
                        // The running sum as an input may be a flushed subnormal.
                        let e_sin = acc.flushing((sum.abs() - err).max(0.0), sum.abs() + err);
                        sum += x * y;
                        let d = err + e_in + e_p + e_sin;
                        let (xlo, xhi) = ((sum.abs() - d).max(0.0), sum.abs() + d);
                        if !(hi < acc.overflow() && xhi < acc.overflow()) {
                            ovf = true;
                        }
                        err = d + acc.rounding(xlo, xhi);
                        mag += hi + d;
                    }
                    // A kernel that adds the same products in another order (upstream's
                    // loaders, a compiler's reassociation) has partial sums up to Σ|a·b| plus
                    // the errors: past the largest finite value some order overflows. (Seen on
                    // the H100: upstream's f16-accumulator matmul gave ±∞ where k-ascending
                    // partial sums stay below 65504.)
                    // (NaN-safe: a NaN magnitude counts as overflow too.)
                    ovf |= mag.partial_cmp(&acc.overflow()) != Some(std::cmp::Ordering::Less);
                    if ovf && split_k > 1 {
                        // Later upstream clamps each split's accumulators to ±ACC_TYPE_MAX
                        // before the f32 reduce (§12 L7), so an overflowing split adds a finite
                        // ±65504 whatever its exact partial (|·| ≤ mag): the result stays finite,
                        // off by at most 65504 + mag for this split.
                        err += acc.overflow() + mag;
                    }
                    ovf |= earlier;
                    (total, total_err) = add_split(split_k == 1, (total, total_err), (sum, err));
                }
                let _ = total;
                *o = total_err;
                *ovf_o = ovf || !total_err.is_finite();
            }
        });
    MulMmBounds {
        bounds,
        may_overflow,
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

// ---- Matrix-matrix on NV cooperative matrix 2 (mul_mm_cm2.comp) ----

/// One quantized A element as the cm2 decode callback computes it (§3.2, shaders/
/// dequant_funcs_cm2.comp): x = P − M exactly, where P is the scale·q part and M the min part
/// (0 without a min; q4_1/q5_1 store +m, so M = −m), and the smallest nonzero magnitude
/// among the f16 intermediates the callback forms (d, d·sc, dmin, dmin·mn) — below 2⁻¹⁴ one
/// of them may be flushed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodeTerms {
    /// The scale·q part, exact.
    pub p: f64,
    /// The min part, exact (x = p − m).
    pub m: f64,
    /// Smallest nonzero |intermediate| of the f16 chain (∞ when none).
    pub tiny: f64,
    /// Largest exact |intermediate| the chain rounds to f16 before its result (0 when none):
    /// at 65520 and above that intermediate is ±∞, and the result ±∞ or NaN (∞·0, ∞ − ∞)
    /// although the exact value may be small.
    pub huge: f64,
}

fn f16_at(b: &[u8], off: usize) -> f64 {
    half::f16::from_le_bytes([b[off], b[off + 1]]).to_f64()
}

/// Scale and min of q4_K/q5_K sub-block `sb` from the 12 scale bytes (§2.4).
fn scale_min_k4(s: &[u8], sb: usize) -> (f64, f64) {
    if sb < 4 {
        ((s[sb] & 63) as f64, (s[sb + 4] & 63) as f64)
    } else {
        (
            ((s[sb + 4] & 0xF) | ((s[sb - 4] >> 6) << 4)) as f64,
            ((s[sb + 4] >> 4) | ((s[sb] >> 6) << 4)) as f64,
        )
    }
}

/// The decode terms of every element of a quantized A (`bytes` = whole blocks of `dtype`), in
/// element order; None for a type the cm2 decoders do not cover.
pub fn cm2_decode_terms(dtype: vkdiff_reference::DType, bytes: &[u8]) -> Option<Vec<DecodeTerms>> {
    use vkdiff_reference::DType as T;
    let (qk, bb) = (dtype.block_len(), dtype.block_bytes());
    let tiny = |vals: &[f64]| {
        vals.iter()
            .map(|v| v.abs())
            .filter(|&v| v > 0.0)
            .fold(f64::INFINITY, f64::min)
    };
    let mut out = Vec::with_capacity(bytes.len() / bb * qk);
    for b in bytes.chunks_exact(bb) {
        for e in 0..qk {
            let nib = |qs: usize| {
                let byte = b[qs + e % 16];
                if e < 16 {
                    byte & 0xF
                } else {
                    byte >> 4
                }
            };
            let (n, g, l) = (e / 128, (e % 128) / 32, e % 32);
            let t = match dtype {
                T::Q4_0 | T::Q5_0 | T::Q8_0 | T::Iq4Nl => {
                    let d = f16_at(b, 0);
                    let q = match dtype {
                        T::Q4_0 => nib(2) as f64 - 8.0,
                        T::Q5_0 => {
                            let h = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
                            (nib(6) as u32 | (((h >> e) & 1) << 4)) as f64 - 16.0
                        }
                        T::Q8_0 => b[2 + e] as i8 as f64,
                        _ => IQ4NL[nib(2) as usize],
                    };
                    DecodeTerms {
                        p: d * q,
                        m: 0.0,
                        tiny: tiny(&[d]),
                        huge: 0.0,
                    }
                }
                T::Q4_1 | T::Q5_1 => {
                    let (d, mn) = (f16_at(b, 0), f16_at(b, 2));
                    let q = if dtype == T::Q4_1 {
                        nib(4) as f64
                    } else {
                        let h = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
                        (nib(8) as u32 | (((h >> e) & 1) << 4)) as f64
                    };
                    DecodeTerms {
                        p: d * q,
                        m: -mn,
                        tiny: tiny(&[d, d * q, mn]),
                        huge: (d * q).abs(),
                    }
                }
                T::Iq4Xs => {
                    let d = f16_at(b, 0);
                    let ib = e / 32;
                    let lo = (b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF;
                    let hi = (u16::from_le_bytes([b[2], b[3]]) >> (2 * ib)) & 3;
                    let ls = (lo as u16 | (hi << 4)) as f64 - 32.0;
                    let j = e % 32;
                    let byte = b[8 + 16 * ib + j % 16];
                    let q = IQ4NL[if j < 16 { byte & 0xF } else { byte >> 4 } as usize];
                    DecodeTerms {
                        p: d * ls * q,
                        m: 0.0,
                        tiny: tiny(&[d, d * ls]),
                        huge: (d * ls).abs(),
                    }
                }
                T::Q2_K => {
                    let (d, dmin) = (f16_at(b, 80), f16_at(b, 82));
                    let sc = b[8 * n + 2 * g + l / 16];
                    let q = ((b[16 + 32 * n + l] >> (2 * g)) & 3) as f64;
                    let (s, mn) = ((sc & 0xF) as f64, (sc >> 4) as f64);
                    DecodeTerms {
                        p: d * s * q,
                        m: dmin * mn,
                        tiny: tiny(&[d, d * s, dmin, dmin * mn]),
                        huge: (d * s).abs().max((d * s * q).abs()).max((dmin * mn).abs()),
                    }
                }
                T::Q3_K => {
                    let d = f16_at(b, 108);
                    let is = 8 * n + 2 * g + l / 16;
                    let low = if is < 8 {
                        b[96 + is] & 0xF
                    } else {
                        b[96 + is - 8] >> 4
                    };
                    let high = (b[96 + 8 + is % 4] >> (2 * (is / 4))) & 3;
                    let s = (low | (high << 4)) as f64 - 32.0;
                    let hb = (b[l] >> (4 * n + g)) & 1;
                    let q = ((b[32 + 32 * n + l] >> (2 * g)) & 3) as f64
                        - if hb != 0 { 0.0 } else { 4.0 };
                    DecodeTerms {
                        p: d * s * q,
                        m: 0.0,
                        tiny: tiny(&[d, d * s]),
                        huge: (d * s).abs(),
                    }
                }
                T::Q4_K | T::Q5_K => {
                    let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
                    let sb = e / 32;
                    let (sc, mn) = scale_min_k4(&b[4..16], sb);
                    let qs = if dtype == T::Q4_K { 16 } else { 48 };
                    let byte = b[qs + 32 * (e / 64) + l];
                    let mut q = if sb % 2 == 0 { byte & 0xF } else { byte >> 4 } as f64;
                    if dtype == T::Q5_K {
                        q += 16.0 * ((b[16 + l] >> sb) & 1) as f64;
                    }
                    // q4_K forms its products in f32 (exact): only the result is an f16.
                    let chain = if dtype == T::Q5_K {
                        tiny(&[d, d * sc, dmin, dmin * mn])
                    } else {
                        tiny(&[d, dmin])
                    };
                    DecodeTerms {
                        p: d * sc * q,
                        m: dmin * mn,
                        tiny: chain,
                        huge: if dtype == T::Q5_K {
                            (d * sc).abs().max((dmin * mn).abs())
                        } else {
                            0.0
                        },
                    }
                }
                T::Q6_K => {
                    let d = f16_at(b, 208);
                    let lo = (b[64 * n + l + 32 * (g % 2)] >> (4 * (g / 2))) & 0xF;
                    let hi = (b[128 + 32 * n + l] >> (2 * g)) & 3;
                    let q = (lo | (hi << 4)) as f64 - 32.0;
                    let sc = b[192 + 8 * n + 2 * g + l / 16] as i8 as f64;
                    DecodeTerms {
                        p: d * sc * q,
                        m: 0.0,
                        tiny: tiny(&[d, d * sc]),
                        huge: (d * sc).abs(),
                    }
                }
                t if T::LATTICE_IQUANTS.contains(&t) => {
                    let parts = vkdiff_reference::formats::iq_grid::parts(t, b, e);
                    DecodeTerms {
                        p: parts.exact(),
                        m: 0.0,
                        tiny: tiny(&[parts.d.to_f64()]),
                        huge: 0.0,
                    }
                }
                _ => return None,
            };
            out.push(t);
        }
    }
    Some(out)
}

const IQ4NL: [f64; 16] = [
    -127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0, 38.0, 53.0, 69.0,
    89.0, 113.0,
];

/// Bound on |decoded − x| of one element by the cm2 decode callback of `dtype` (§3.2, the
/// arithmetic written out in shaders/dequant_funcs_cm2.comp), and whether the f16 result may
/// overflow. With u = 2⁻¹¹ (plus the f32 half-ulp of [`Fp::unit`]) and u₃₂ = 2⁻²⁴:
///
/// * q4_0, q5_0, q8_0, iq4_nl: d·q in f16, one rounding: u·|x|.
/// * iq1_s … iq3_s: the exact value formed in f32 (iq_decode.comp), one f16 rounding: u·|x|
///   (a subnormal d may still be flushed when read: `tiny` is d).
/// * q3_K, q6_K, iq4_xs: (d·sc)·q in f16: u·|P| for d·sc (carried through the exact ·q), then
///   u·(|x| + u·|P|).
/// * q4_1, q5_1: d·q + m in f16 (or one fma): u·|P| + u·(|x| + u·|P|).
/// * q2_K: ((d·sc)·q) − dmin·mn in f16: (2u + u²)·|P| + u·|M| + u·(|x| + those).
/// * q4_K: everything in f32 — d·sc·q and dmin·mn are exact (≤ 21 significant bits), the
///   difference rounds once (u₃₂·|x|) — then one f16 rounding.
/// * q5_K: d·sc and dmin·mn rounded to f16 (u·|P|, u·|M|), the rest as q4_K.
///
/// An f16 intermediate of 65520 or more ([`DecodeTerms::huge`]) is ±∞, so the result may be
/// ±∞ or NaN (∞·0 where q = 0, ∞ − ∞) however small x is: flagged as a possible overflow
/// (found by the emulation in tests/bounds_soundness.rs: q2_K with d·sc ≥ 65520 and q = 0).
///
/// Charging every rounding relative to the *terms* P and M (not to x) is what keeps the bound
/// honest under cancellation (d·q ≈ −m). Subnormals: an intermediate in (0, 2⁻¹⁴) may be
/// flushed, losing the whole term it feeds (|P| or |M| more), and the f16 result itself may be
/// flushed or subnormal ([`Fp::rounding`]).
pub fn cm2_decode_error(dtype: vkdiff_reference::DType, t: &DecodeTerms) -> (f64, bool) {
    use vkdiff_reference::DType as T;
    let u = Fp::F16.unit();
    let (p, m) = (t.p.abs(), t.m.abs());
    let x = (t.p - t.m).abs();
    let (rp, rm) = match dtype {
        T::Q4_0 | T::Q5_0 | T::Q8_0 | T::Iq4Nl => (0.0, 0.0),
        T::Q3_K | T::Q6_K | T::Iq4Xs | T::Q4_1 | T::Q5_1 => (u, 0.0),
        T::Q2_K => (2.0 * u + u * u, u),
        T::Q4_K => (U32, U32),
        T::Q5_K => (u + U32, u + U32),
        _ => (0.0, 0.0),
    };
    let mut pre = rp * p + rm * m;
    if t.tiny < Fp::F16.min_normal() {
        pre += p + m;
    }
    let (lo, hi) = ((x - pre).max(0.0), x + pre);
    // A second-level intermediate ((d·sc)·q) is formed from a rounded first one: (1 + u).
    let ovf = hi >= Fp::F16.overflow() || t.huge * (1.0 + u) >= Fp::F16.overflow();
    if lo >= Fp::F16.overflow() {
        return (f64::INFINITY, true);
    }
    (pre + Fp::F16.rounding(lo, hi), ovf)
}

/// The arithmetic of one cooperative-matrix dispatch: mul_mm_cm2, or mul_mm's cm1 path (whose
/// TK-deep coopMatMulAdd steps are modelled the same way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cm2Arith {
    /// ACC_TYPE: f16 or f32.
    pub acc: Fp,
    /// K per coopMatMulAdd (cm2: the BK spec constant; cm1: TK, 16).
    pub bk: usize,
    /// K splits (1: none).
    pub split_k: usize,
    /// K range of a split.
    pub k_split: usize,
}

/// Matrix-matrix bounds on the cm2 path (§7.6), and on the cm1 path (§6.6) with BK read as
/// TK (one KHR coopMatMulAdd per 16 values of K, steps from the split's start) and the
/// operand errors of [`staged_operand_errors`].
///
/// **What is computed.** The operands are FLOAT_TYPE values â, b̂ (f16 or bf16): `ea`/`eb`
/// give |â − a| and |b̂ − b| per element against the exact inputs a, b (0 for f16/bf16 data,
/// the host's f32 → f16 conversion error, or [`cm2_decode_error`] for a quantized A), with
/// `None` where an operand may overflow to ±∞. Output (m, n) of split s is the accumulator after
/// the K steps k₀, k₀ + BK, … (ascending: the shader's loop), each step acc ← acc + Σ â·b̂ over
/// its BK products (zeros past end_k) by one coopMatMulAdd.
///
/// **Why not a running sum over k.** Inside a coopMatMulAdd the order, tree shape and internal
/// precision of the additions are the implementation's (NVIDIA's tensor cores align the
/// terms to the largest exponent and truncate; Fasi, Higham, Mikaitis & Pranesh, "Numerical
/// behavior of NVIDIA tensor cores", PeerJ CS 2021). So each step is charged as an arbitrary
/// summation of BK + 1 terms (the accumulator and the products): depth ≤ BK, each rounding
/// directed rather than to nearest (unit u_w = 2u), error ≤ γ_w(BK)·(|acc| + Σ|â·b̂|) with
/// γ_w(n) = n·u_w / (1 − n·u_w), plus u_w·|â·b̂| per product when products are not exact in
/// ACC_TYPE (f16 accumulators; f16·f16 and bf16·bf16 are exact in f32). |acc| is bounded by the
/// exact partial sum plus the error so far, so the bound is a running one over the K steps:
/// an a-priori γ(K)·Σ|a·b| would be meaningless for f16 accumulators (γ₁₆(K) ≥ 1 from
/// K = 512 with u_w), while this one grows with the partial sums actually reached and stays
/// below 1 per step for BK ≤ 64 (γ_w(64) ≈ 0.067 in f16). Splits add their f32 partials in
/// order (the reduce shader).
///
/// **Subnormals and overflow.** A step whose operands or results may lie below ACC_TYPE's
/// smallest normal is charged that normal once per rounding (flush to zero); a step whose
/// intermediate sums may pass the largest finite f16 — anything up to |acc| + Σ|â·b̂|, since
/// the order is free — marks the element [`MulMmBounds::may_overflow`]. (Measured on the
/// H100: an f16 accumulator went to +∞ for an output of 5.4·10⁴ whose step held larger
/// partial sums; upstream has no clamp at this commit, §12 later-changed 7.)
#[allow(clippy::too_many_arguments)]
pub fn mul_mm_cm2_bounds(
    arith: &Cm2Arith,
    k: usize,
    m: usize,
    a_rows: &[f64],
    ea: &[Option<f64>],
    b_rows: &[f64],
    eb: &[Option<f64>],
    columns: &[(usize, usize)],
) -> MulMmBounds {
    use rayon::prelude::*;
    let acc = arith.acc;
    let uw = 2.0 * acc.unit();
    let bk = arith.bk.max(1);
    let depth = bk as f64;
    let gw = depth * uw / (1.0 - depth * uw);
    let exact = acc == Fp::F32;
    let tiny = acc.min_normal();
    let split_k = arith.split_k.max(1);
    let k_split = if split_k > 1 { arith.k_split } else { k };
    let mut bounds = vec![0.0; m * columns.len()];
    let mut may_overflow = vec![false; m * columns.len()];
    bounds
        .par_chunks_mut(m.max(1))
        .zip(may_overflow.par_chunks_mut(m.max(1)))
        .zip(columns.par_iter())
        .for_each(|((out, ovf_out), &(a_first, b_row))| {
            let b = &b_rows[b_row * k..][..k];
            let eb = &eb[b_row * k..][..k];
            for (i, (o, ovf_o)) in out.iter_mut().zip(ovf_out.iter_mut()).enumerate() {
                let a = &a_rows[(a_first + i) * k..][..k];
                let ea = &ea[(a_first + i) * k..][..k];
                let mut ovf = false;
                let (mut total, mut total_err) = (0.0f64, 0.0f64);
                for s in 0..split_k {
                    let (from, to) = ((s * k_split).min(k), ((s + 1) * k_split).min(k));
                    let (mut sum, mut err) = (0.0f64, 0.0f64);
                    let mut step = from;
                    while step < to {
                        let end = (step + bk).min(to);
                        // Σ|â·b̂| bound, operand error, product roundings, flush count.
                        let (mut mag, mut e_in, mut e_p, mut flushes) = (0.0, 0.0, 0.0, 0usize);
                        let mut exact_step = 0.0;
                        for kk in step..end {
                            let (x, y) = (a[kk], b[kk]);
                            let (ex, ey) = match (ea[kk], eb[kk]) {
                                (Some(ex), Some(ey)) if ex.is_finite() && ey.is_finite() => {
                                    (ex, ey)
                                }
                                _ => {
                                    // An operand that may be ±∞: the product is undefined
                                    // (no arithmetic on the bounds: ∞·0 is NaN).
                                    ovf = true;
                                    e_in = f64::INFINITY;
                                    mag = f64::INFINITY;
                                    exact_step += x * y;
                                    continue;
                                }
                            };
                            let (ax, ay) = (x.abs(), y.abs());
                            let hi = (ax + ex) * (ay + ey);
                            let lo = (ax - ex).max(0.0) * (ay - ey).max(0.0);
                            e_in += ax * ey + ay * ex + ex * ey;
                            if !exact {
                                e_p += uw * hi;
                            }
                            if lo < tiny {
                                // The product itself may be flushed (it is at most hi).
                                e_p += hi.min(tiny);
                            }
                            mag += hi * (1.0 + if exact { 0.0 } else { uw });
                            exact_step += x * y;
                        }
                        let acc_mag = sum.abs() + err;
                        sum += exact_step;
                        let mut d = err + e_in + e_p + gw * (acc_mag + mag);
                        if d.is_nan() {
                            d = f64::INFINITY;
                        }
                        if (sum.abs() - d) < tiny || acc_mag < tiny {
                            flushes += 1;
                        }
                        d += flushes as f64 * tiny;
                        // Any partial sum inside the step, in any order, is within
                        // |acc| + Σ|â·b̂| (+ the step's error): f16 may overflow there even
                        // when the step's result is finite.
                        let peak = acc_mag + mag + d;
                        if peak.is_nan() || peak >= acc.overflow() {
                            ovf = true;
                        }
                        err = d;
                        step = end;
                    }
                    (total, total_err) = add_split(split_k == 1, (total, total_err), (sum, err));
                }
                let _ = total;
                *o = total_err;
                *ovf_o = ovf || !total_err.is_finite();
            }
        });
    MulMmBounds {
        bounds,
        may_overflow,
    }
}

#[cfg(test)]
mod cm2_tests {
    use super::*;
    use vkdiff_reference::DType;

    #[test]
    fn decode_terms_match_the_reference_values() {
        use rand::{Rng, SeedableRng};
        let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for &dt in DType::WEIGHT_QUANTS {
            let mut bytes = vec![0u8; 3 * dt.block_bytes()];
            r.fill(&mut bytes[..]);
            for blk in bytes.chunks_exact_mut(dt.block_bytes()) {
                for i in 0..dt.f16_scales() {
                    let v = half::f16::from_f32(r.gen_range(-1.0..1.0));
                    dt.set_f16_scale(blk, i, v);
                }
            }
            let want =
                vkdiff_reference::formats::dequantize_f32(dt, &bytes, 3 * dt.block_len()).unwrap();
            let terms = cm2_decode_terms(dt, &bytes).unwrap();
            for (i, (t, w)) in terms.iter().zip(&want).enumerate() {
                let x = t.p - t.m;
                assert!(
                    (x - *w as f64).abs() <= 1e-6 * (t.p.abs() + t.m.abs()),
                    "{dt} {i}: {x} vs {w}"
                );
            }
        }
    }

    #[test]
    fn decode_error_charges_terms_not_the_cancelled_result() {
        let t = DecodeTerms {
            p: 1.0,
            m: 1.0,
            tiny: 1.0,
            huge: 0.0,
        };
        let (e, _) = cm2_decode_error(DType::Q2_K, &t);
        assert!(e >= 2.0 * 2f64.powi(-11), "{e}");
        let (e, _) = cm2_decode_error(
            DType::Q4_0,
            &DecodeTerms {
                p: 3.0,
                m: 0.0,
                tiny: 1.0,
                huge: 0.0,
            },
        );
        assert!((e - 3.0 * Fp::F16.unit()).abs() < 1e-12);
    }

    #[test]
    fn a_step_is_charged_gamma_of_bk() {
        let arith = Cm2Arith {
            acc: Fp::F32,
            bk: 2,
            split_k: 1,
            k_split: 0,
        };
        let z = [Some(0.0); 2];
        let b = mul_mm_cm2_bounds(&arith, 2, 1, &[1., 2.], &z, &[1., 1.], &z, &[(0, 0)]);
        let uw = 2.0 * U32;
        let g = 2.0 * uw / (1.0 - 2.0 * uw);
        assert!((b.bounds[0] - g * 3.0).abs() < 1e-20, "{}", b.bounds[0]);
        assert!(!b.may_overflow[0]);
    }
}
