//! GGML_OP_MUL_MAT_ID (ggml_mul_mat_id(ctx, as, b, ids)), the mixture-of-experts product: for
//! token t < n_tokens and expert slot e < n_used, with x = `ids[t][e]`,
//! `dst[t][e][m] = Σ_k as[x][m][k] · b[t][e mod ne11][k]`.
//!
//! | operand | shape (ne0, ne1, ne2, ne3) | type |
//! |---|---|---|
//! | as | (K, M, n_as, 1): one matrix per expert | any A type |
//! | b | (K, ne11, n_tokens, 1), n_used mod ne11 == 0 | a float type |
//! | ids | (n_used, n_tokens, 1, 1) | i32 |
//! | dst | (M, n_used, n_tokens, 1) | f32 |
//!
//! ne11 is 1 (every slot of a token reads the same b row) or n_used (one b row per slot) in
//! practice; ggml accepts any divisor of n_used and the slot reads row e mod ne11.
//!
//! **Ids outside [0, n_as)**: ggml builds the graph without looking at ids (they are data); the
//! CPU backend asserts on them and the Vulkan kernels read whatever memory the id points at
//! (mat-vec) or leave the dst rows unwritten (matrix-matrix, interface.md §8.5). There is no
//! defined result, so the reference returns [`Error::Value`] naming the first bad id instead of a
//! number.

use super::kernel::{gemm, zeroed, Job, Values};
use super::prim::sum_init;
use super::Output;
use crate::tensor::TensorView;
use crate::{DType, Error, Result};

const OP: &str = "mul_mat_id";

/// Checks ggml's `ggml_mul_mat_id` shape and type rules and returns dst's shape
/// (M, n_used, n_tokens, 1). The id values are checked by [`expert_ids`].
pub fn check<'a, 'b, 'c>(
    as_: impl Into<TensorView<'a>>,
    b: impl Into<TensorView<'b>>,
    ids: impl Into<TensorView<'c>>,
) -> Result<[usize; 4]> {
    let (as_, b, ids) = (as_.into(), b.into(), ids.into());
    let (na, nb, ni) = (as_.ne(), b.ne(), ids.ne());
    let shape = |reason: String| Err(Error::Shape { op: OP, reason });
    if ids.dtype() != DType::I32 {
        return Err(Error::Type {
            op: OP,
            what: "ids",
            dtype: ids.dtype(),
        });
    }
    if matches!(as_.dtype(), DType::I32 | DType::Q8_1) {
        return Err(Error::Type {
            op: OP,
            what: "as",
            dtype: as_.dtype(),
        });
    }
    if b.dtype().is_quantized() || b.dtype() == DType::I32 {
        return Err(Error::Type {
            op: OP,
            what: "b",
            dtype: b.dtype(),
        });
    }
    if na[0] != nb[0] {
        return shape(format!(
            "the experts have {} columns but b has {}",
            na[0], nb[0]
        ));
    }
    if na[3] != 1 || nb[3] != 1 || ni[2] != 1 || ni[3] != 1 {
        return shape(format!(
            "as {na:?}, b {nb:?} and ids {ni:?} must be 3-, 3- and 2-dimensional"
        ));
    }
    if ni[1] != nb[2] {
        return shape(format!(
            "ids has {} tokens (ne1) but b has {} (ne2)",
            ni[1], nb[2]
        ));
    }
    if ni[0] % nb[1] != 0 {
        return shape(format!(
            "{} expert slots (ids.ne0) are not a multiple of b's {} rows per token (ne1)",
            ni[0], nb[1]
        ));
    }
    Ok([na[1], ni[0], ni[1], 1])
}

/// The expert ids, token-major (`ids[t·n_used + e]`), each checked to lie in [0, n_as).
pub fn expert_ids<'a, 'c>(
    as_: impl Into<TensorView<'a>>,
    ids: impl Into<TensorView<'c>>,
) -> Result<Vec<usize>> {
    let (as_, ids) = (as_.into(), ids.into());
    if ids.dtype() != DType::I32 {
        return Err(Error::Type {
            op: OP,
            what: "ids",
            dtype: ids.dtype(),
        });
    }
    let n_as = as_.ne()[2];
    let [n_used, ..] = ids.ne();
    ids.rows()?
        .into_iter()
        .enumerate()
        .map(|(i, x)| {
            // i32 decodes exactly into f64.
            if x >= 0.0 && x < n_as as f64 {
                Ok(x as usize)
            } else {
                Err(Error::Value {
                    op: OP,
                    reason: format!(
                        "ids[token {}][slot {}] = {x} is not an expert: n_as = {n_as}, ids must lie in [0, {n_as})",
                        i / n_used,
                        i % n_used
                    ),
                })
            }
        })
        .collect()
}

/// The exact product: `dst[t][e][m] = Σ_k as[ids[t][e]][m][k] · b[t][e mod ne11][k]`, each
/// output summed in f64 in k order. [`Error::Value`] for an id outside [0, n_as).
///
/// ```
/// use vkdiff_reference::ops::mul_mat_id::mul_mat_id;
/// use vkdiff_reference::{DType, Tensor};
///
/// // Two 2×2 experts (K = 2, M = 2): E0 = identity, E1 = [[1, 1], [1, −1]].
/// let experts = Tensor::from_f32(DType::F32, [2, 2, 2, 1], &[1., 0., 0., 1., 1., 1., 1., -1.])?;
/// // One token routed to both experts (n_used = 2), one b row per token (ne11 = 1).
/// let b = Tensor::from_f32(DType::F32, [2, 1, 1, 1], &[3., 4.])?;
/// let ids = Tensor::from_bytes(DType::I32, [2, 1, 1, 1], [1i32, 0].iter().flat_map(|x| x.to_le_bytes()).collect())?;
/// let dst = mul_mat_id(&experts, &b, &ids)?;
/// assert_eq!(dst.ne, [2, 2, 1, 1]); // (M, n_used, n_tokens, 1)
/// assert_eq!(dst.values, vec![7., -1., 3., 4.]); // slot 0: E1·b, slot 1: E0·b
/// # Ok::<(), vkdiff_reference::Error>(())
/// ```
pub fn mul_mat_id<'a, 'b, 'c>(
    as_: impl Into<TensorView<'a>>,
    b: impl Into<TensorView<'b>>,
    ids: impl Into<TensorView<'c>>,
) -> Result<Output> {
    product(&as_.into(), &b.into(), &ids.into(), Values::Exact)
}

/// Σ_k mag(as_x,mk)·|b_k| for every output, with mag from [`TensorView::magnitudes`]: what an
/// error bound scales with (as [`super::mul_mat::mul_mat_magnitude`]).
pub fn mul_mat_id_magnitude<'a, 'b, 'c>(
    as_: impl Into<TensorView<'a>>,
    b: impl Into<TensorView<'b>>,
    ids: impl Into<TensorView<'c>>,
) -> Result<Output> {
    product(&as_.into(), &b.into(), &ids.into(), Values::Magnitude)
}

/// dst with the experts' and b's elements decoded as `kind` (exact values or magnitudes).
fn product(as_: &TensorView, b: &TensorView, ids: &TensorView, kind: Values) -> Result<Output> {
    let ne = check(as_, b, ids)?;
    let experts = expert_ids(as_, ids)?;
    let [_, ne11, ..] = b.ne();
    let n_used = ne[1];
    let bv = b.decode_all(kind.decoder())?;
    let mut values = zeroed(OP, ne.iter().try_fold(1usize, |x, &y| x.checked_mul(y)))?;
    // One job per expert: every (token, slot) routed to it, as a product of that expert's matrix
    // with the b rows of those slots.
    let mut jobs: Vec<Job> = (0..as_.ne()[2])
        .map(|x| Job {
            a_mat: (x, 0),
            b_rows: Vec::new(),
            dst_rows: Vec::new(),
        })
        .collect();
    for (row, &x) in experts.iter().enumerate() {
        let (t, e) = (row / n_used, row % n_used);
        jobs[x].b_rows.push(t * ne11 + e % ne11);
        jobs[x].dst_rows.push(row);
    }
    gemm(as_, kind, (&jobs, b.dtype()), &bv, sum_init(), &mut values)?;
    Ok(Output { ne, values })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Tensor;

    fn f32_tensor(ne: [usize; 4], v: &[f32]) -> Tensor {
        Tensor::from_f32(DType::F32, ne, v).unwrap()
    }

    fn ids(n_used: usize, n_tokens: usize, v: &[i32]) -> Tensor {
        let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        Tensor::from_bytes(DType::I32, [n_used, n_tokens, 1, 1], bytes).unwrap()
    }

    /// Three 2×2 experts (K = 2, M = 2): E0 = [[1, 0], [0, 1]] (identity),
    /// E1 = [[1, 1], [1, -1]], E2 = [[2, 0], [0, 3]].
    fn experts() -> Tensor {
        f32_tensor(
            [2, 2, 3, 1],
            &[
                1., 0., 0., 1., /* E1 */ 1., 1., 1., -1., /* E2 */ 2., 0., 0., 3.,
            ],
        )
    }

    #[test]
    fn one_b_row_per_slot_with_repeated_ids_and_an_unused_expert() {
        // One token, 3 slots routed to E1, E1, E2 (E0 unused); b rows (1,2), (3,4), (5,6).
        let b = f32_tensor([2, 3, 1, 1], &[1., 2., 3., 4., 5., 6.]);
        let out = mul_mat_id(&experts(), &b, &ids(3, 1, &[1, 1, 2])).unwrap();
        assert_eq!(out.ne, [2, 3, 1, 1]);
        // E1·(1,2) = (3, −1); E1·(3,4) = (7, −1); E2·(5,6) = (10, 18).
        assert_eq!(out.values, vec![3., -1., 7., -1., 10., 18.]);
    }

    #[test]
    fn ne11_1_broadcasts_the_token_row_to_every_slot() {
        // Two tokens, two slots each, one b row per token: (1, 2) and (−1, 1).
        let b = f32_tensor([2, 1, 2, 1], &[1., 2., -1., 1.]);
        let out = mul_mat_id(&experts(), &b, &ids(2, 2, &[0, 2, 1, 0])).unwrap();
        assert_eq!(out.ne, [2, 2, 2, 1]);
        // token 0: E0·(1,2) = (1,2), E2·(1,2) = (2,6); token 1: E1·(−1,1) = (0,−2), E0 = (−1,1).
        assert_eq!(out.values, vec![1., 2., 2., 6., 0., -2., -1., 1.]);
    }

    #[test]
    fn all_tokens_to_one_expert_is_a_plain_product_with_that_expert() {
        let b = f32_tensor([2, 1, 3, 1], &[1., 0., 0., 1., 2., 2.]);
        let out = mul_mat_id(&experts(), &b, &ids(1, 3, &[2, 2, 2])).unwrap();
        assert_eq!(out.ne, [2, 1, 3, 1]);
        assert_eq!(out.values, vec![2., 0., 0., 3., 4., 6.]);
        // The same as MUL_MAT with E2 alone.
        let e2 = f32_tensor([2, 2, 1, 1], &[2., 0., 0., 3.]);
        let plain = super::super::mul_mat::mul_mat(&e2, &b).unwrap();
        assert_eq!(plain.values, out.values);
    }

    #[test]
    fn a_divisor_ne11_reads_row_e_mod_ne11() {
        // Four slots, two b rows: slots 0, 2 read row 0 = (1, 0), slots 1, 3 read row 1 = (0, 1).
        let b = f32_tensor([2, 2, 1, 1], &[1., 0., 0., 1.]);
        let out = mul_mat_id(&experts(), &b, &ids(4, 1, &[2, 2, 1, 1])).unwrap();
        assert_eq!(out.values, vec![2., 0., 0., 3., 1., 1., 1., -1.]);
    }

    #[test]
    fn quantized_experts_and_f16_b_decode_exactly() {
        // q8_0 experts holding small integers decode exactly (each row's 127 at k = 16 makes
        // d = 1, and b[16] = 0 hides it); b in f16.
        let mut v = vec![0f32; 32 * 2 * 2];
        for row in 0..4 {
            v[row * 32 + 16] = 127.;
        }
        v[0] = 3.; // expert 0, row 0, k 0
        v[32 + 1] = -2.; // expert 0, row 1, k 1
        v[64] = 1.; // expert 1, row 0, k 0
        v[96 + 31] = 4.; // expert 1, row 1, k 31
        let as_ = Tensor::from_f32(DType::Q8_0, [32, 2, 2, 1], &v).unwrap();
        let mut bv = vec![0f32; 32];
        (bv[0], bv[1], bv[31]) = (1., 1., 0.5);
        let b = Tensor::from_f32(DType::F16, [32, 1, 1, 1], &bv).unwrap();
        let out = mul_mat_id(&as_, &b, &ids(2, 1, &[1, 0])).unwrap();
        assert_eq!(out.values, vec![1., 2., 3., -2.]);
    }

    #[test]
    fn magnitude_ignores_cancellation() {
        let as_ = f32_tensor([2, 1, 2, 1], &[1., -1., 5., 5.]);
        let b = f32_tensor([2, 1, 1, 1], &[3., 3.]);
        let i = ids(1, 1, &[0]);
        assert_eq!(mul_mat_id(&as_, &b, &i).unwrap().values, vec![0.]);
        assert_eq!(mul_mat_id_magnitude(&as_, &b, &i).unwrap().values, vec![6.]);
    }

    #[test]
    fn an_id_outside_the_experts_is_an_error_naming_it() {
        let b = f32_tensor([2, 1, 1, 1], &[1., 1.]);
        for bad in [3, -1] {
            let err = mul_mat_id(&experts(), &b, &ids(2, 1, &[0, bad])).unwrap_err();
            assert!(matches!(err, Error::Value { .. }), "{err}");
            let msg = err.to_string();
            assert!(
                msg.contains(&format!("[slot 1] = {bad}")) && msg.contains("n_as = 3"),
                "{msg}"
            );
        }
    }

    #[test]
    fn shape_and_type_errors_name_the_problem() {
        let b = f32_tensor([2, 3, 1, 1], &[0.; 6]);
        // 2 slots are not a multiple of 3 b rows.
        let err = mul_mat_id(&experts(), &b, &ids(2, 1, &[0, 0])).unwrap_err();
        assert!(err.to_string().contains("not a multiple"), "{err}");
        // ids must be i32.
        let f = f32_tensor([1, 1, 1, 1], &[0.]);
        let b1 = f32_tensor([2, 1, 1, 1], &[0.; 2]);
        assert!(matches!(
            mul_mat_id(&experts(), &b1, &f),
            Err(Error::Type { what: "ids", .. })
        ));
        // token counts must agree.
        let err = mul_mat_id(&experts(), &b1, &ids(1, 2, &[0, 0])).unwrap_err();
        assert!(err.to_string().contains("2 tokens"), "{err}");
        // K must agree.
        let b3 = f32_tensor([3, 1, 1, 1], &[0.; 3]);
        let err = mul_mat_id(&experts(), &b3, &ids(1, 1, &[0])).unwrap_err();
        assert!(err.to_string().contains("2 columns but b has 3"), "{err}");
    }
}
