//! The mat-vec error model (mul_mat_vec.comp and its per-type bodies; MUL_MAT_ID through the
//! mat-vec kernel uses it per expert slot). Shared arithmetic: [`crate::model::tolerance`].
//!
//! § numbers: sections of docs/interface.md.

#[allow(unused_imports)]
use crate::model::tolerance::*;

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
/// * **generic body, block A** (q4_0 … q8_0, iq4_nl, iq4_xs, mxfp4): an invocation takes 8-element
///   chunks tid, tid + BLOCK_SIZE, …, so it folds up to c = ⌈⌈K/8⌉/BLOCK_SIZE⌉ chunks of 8
///   terms into its sum: at most 8c roundings per term (8 sequential fmas per chunk would
///   reach it; our body, like ggml's, forms two 4-term dot products of q and b per chunk (4
///   roundings), rounds their sum (1) and folds it with d into the running sum in one fma (1),
///   then one rounding per later chunk: c + 5 ≤ 8c). This can exceed ⌈K/BLOCK_SIZE⌉ + 3 when K
///   is small against 8·BLOCK_SIZE (e.g. K = 32, BLOCK_SIZE = 32: 8 against 4), which is why
///   the count is by chunks. q8_0's body, and q4_0's with 8 columns, go by 4-element quads
///   instead (tid, tid + BLOCK_SIZE, …: at most 2c of them), each a 4-term dot product
///   folded with d in one fma: 4 + 1 + (2c − 1) = 2c + 4 ≤ 8c roundings, inside the same
///   count. d·q is exact in f32 for every block format of this body (at most 23 significant
///   bits: 11 of d, 12 of iq4_xs's kvalue·(ls − 32); mxfp4's kvalue/2 and power-of-two
///   scale are exact inside f32's normal range, its ends are `cases/mxfp4.rs`'s); with a min, d·q + m
///   rounds once more (our body: before the dot products, c + 6 ≤ 8c + 1). Then the
///   ⌈log₂ BLOCK_SIZE⌉ tree.
/// * **K-quant bodies** (q2_K … q6_K, `mul_mat_vec_q*_k.comp`): 16 invocations per 256-element
///   super-block (§5.4); invocation tid takes a 16-element share of super-blocks ⌊tid/16⌋,
///   ⌊tid/16⌋ + BLOCK_SIZE/16, …, i.e. up to S = ⌈(K/256)/(BLOCK_SIZE/16)⌉ of them. A share
///   is summed with at most 16 roundings per term (Σ q·b over 16 elements; the scale products
///   d·sc and dmin·m are exact in f32: ≤ 11 + 8 bits), then folded into the running sum with
///   one rounding per super-block, or two for the formats with a min (q2_K, q4_K, q5_K), whose
///   min part Σ b·dmin·m is folded separately. Depth 16 + S (16 + 2S with a min) plus the
///   tree. Our body (`mul_mat_vec_superblock.comp`: four 4-element dot products, combined
///   with their groups' scales in a chain) stays below it, at 8 roundings inside a share
///   (7 + 2S in all with a min, 8 + S without); ggml's per-type bodies, whose min part is one
///   16-term chain, need the 16.
/// * **tq2_0** (`mul_mat_vec_tq2_0.comp`): the K-quant share layout with one f16 d a
///   super-block; a share forms Σ b·q and Σ b (16-term chains, q the stored code 0 … 3), their
///   difference (1 rounding) and folds d·(difference) into the running sum (1): the K-quant
///   depth with two folds. Its magnitudes count |d·q| + |d| ([`vkdiff_reference::formats`]'s
///   `magnitude_into`), as the two sums cancel where q = 1.
/// * **tq1_0** (`mul_mat_vec_tq1_0.comp`): 8 invocations per 256-element block, each adding
///   its 34 terms (d·(trit − 1), exact, times b) one by one to its running sum, over blocks
///   ⌊tid/8⌋, ⌊tid/8⌋ + BLOCK_SIZE/8, …: 34 roundings per block it takes, then the tree.
pub fn mul_mat_vec_depth_of(a: vkdiff_reference::DType, k: usize, block_size: u32) -> f64 {
    use vkdiff_reference::DType;
    let bs = block_size.max(1) as usize;
    let tree = (bs as f64).log2().ceil();
    let per_super_block = match a {
        DType::Q2_K | DType::Q4_K | DType::Q5_K | DType::Tq2_0 => Some(2),
        DType::Q3_K | DType::Q6_K => Some(1),
        // The lattice i-quants share the K-quant body (mul_mat_vec_iq_lattice.comp).
        t if DType::LATTICE_IQUANTS.contains(&t) => Some(1),
        _ => None,
    };
    if a == DType::Tq1_0 {
        let s = (k / 256).div_ceil((bs / 8).max(1));
        return (34 * s) as f64 + tree;
    }
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
/// (|d| ≤ 65504 < 2¹⁶) after it is formed, as in ggml's body. MXFP4's E8M0 scales reach 2¹²⁷:
/// its floor is scaled per row by `cases::mxfp4::add_mat_vec_terms`, on top of this one.
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
        // Σ b·q and Σ b, then times d (< 2¹⁶).
        DType::Tq2_0 => subnormal_floor(3 * k) * f64::from(1u32 << 16),
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
