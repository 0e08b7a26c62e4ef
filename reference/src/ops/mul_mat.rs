//! GGML_OP_MUL_MAT: `dst[i3][i2][n][m] = Σ_k a[i3/r3][i2/r2][m][k] · b[i3][i2][n][k]`, with
//! broadcast factors r2 = ne12/ne02 and r3 = ne13/ne03 (ggml_mul_mat semantics).
//!
//! | operand | shape (ne0, ne1, ne2, ne3) | type |
//! |---|---|---|
//! | a | (K, M, ne02, ne03) | any type but i32 and q8_1; any strides (block rows whole) |
//! | b | (K, N, ne12, ne13), ne12 % ne02 = ne13 % ne03 = 0 | f32, f16 or bf16; any strides |
//! | dst | (M, N, ne12, ne13) | exact values (f64) |
//!
//! Each output is the dot product of the exact element values, summed in f64 in k order:
//! `((s₀ + a₀b₀) + a₁b₁) + …` with s₀ the value of an empty `Iterator::sum`, every product and
//! every sum rounded once. The work is tiled, vectorized and spread over all cores without
//! changing that order (README "Speed"); a is decoded on the fly, 16 rows × a k block at a
//! time, never as a whole; b is decoded once (the small operand of an LLM layer).
//!
//! ```
//! use vkdiff_reference::ops::mul_mat::mul_mat;
//! use vkdiff_reference::tensor::Tensor;
//! use vkdiff_reference::DType;
//!
//! // a: M = 2 rows of K = 32 in q8_0. Integers whose largest magnitude is 127 quantize
//! // exactly (the block scale is 1).
//! let a_vals: Vec<f32> = (0..64)
//!     .map(|i| if i % 32 == 0 { 127.0 } else { (i % 7) as f32 - 3.0 })
//!     .collect();
//! let a = Tensor::from_f32(DType::Q8_0, [32, 2, 1, 1], &a_vals)?;
//! // b: N = 1 row of f32.
//! let b_vals: Vec<f32> = (0..32).map(|k| 0.5 * k as f32).collect();
//! let b = Tensor::from_f32(DType::F32, [32, 1, 1, 1], &b_vals)?;
//! let dst = mul_mat(&a, &b)?;
//! assert_eq!(dst.ne, [2, 1, 1, 1]); // (M, N, ne12, ne13)
//! for m in 0..2 {
//!     let want: f64 = (0..32).map(|k| f64::from(a_vals[32 * m + k]) * f64::from(b_vals[k])).sum();
//!     assert_eq!(dst.values[m], want);
//! }
//! # Ok::<(), vkdiff_reference::Error>(())
//! ```

use super::kernel::{gemm, zeroed, Job, Values};
use super::prim::sum_init;
use super::Output;
use crate::tensor::TensorView;
use crate::{DType, Error, Result};

const OP: &str = "mul_mat";

/// Checks ggml's `ggml_can_mul_mat` rules and the operand types, and returns dst's shape
/// (M, N, ne12, ne13). [`Error::Shape`] or [`Error::Type`] names what is wrong.
pub fn check<'a, 'b>(
    a: impl Into<TensorView<'a>>,
    b: impl Into<TensorView<'b>>,
) -> Result<[usize; 4]> {
    let (a, b) = (a.into(), b.into());
    let (na, nb) = (a.ne(), b.ne());
    if na[0] != nb[0] {
        return Err(Error::Shape {
            op: OP,
            reason: format!("a has {} columns but b has {}", na[0], nb[0]),
        });
    }
    if nb[2] % na[2] != 0 || nb[3] % na[3] != 0 {
        return Err(Error::Shape {
            op: OP,
            reason: format!(
                "b's batch dims {:?} are not multiples of a's {:?}",
                &nb[2..],
                &na[2..]
            ),
        });
    }
    if b.dtype().is_quantized() || b.dtype() == DType::I32 {
        return Err(Error::Type {
            op: OP,
            what: "b",
            dtype: b.dtype(),
        });
    }
    if a.dtype() == DType::I32 || a.dtype() == DType::Q8_1 {
        return Err(Error::Type {
            op: OP,
            what: "a",
            dtype: a.dtype(),
        });
    }
    Ok([na[1], nb[1], nb[2], nb[3]])
}

/// The exact product: `dst[i3][i2][n][m] = Σ_k a[i3/r3][i2/r2][m][k] · b[i3][i2][n][k]`, each
/// output summed in f64 in k order. Takes `&Tensor` or `&TensorView` (or a `TensorView`).
pub fn mul_mat<'a, 'b>(
    a: impl Into<TensorView<'a>>,
    b: impl Into<TensorView<'b>>,
) -> Result<Output> {
    product(&a.into(), &b.into(), Values::Exact)
}

/// Σ_k mag(a_mk)·|b_nk| for every output, with mag from [`TensorView::magnitudes`]: what an
/// error bound scales with (a sum whose terms each carry relative error ≤ δ is off by ≤ δ times
/// this).
pub fn mul_mat_magnitude<'a, 'b>(
    a: impl Into<TensorView<'a>>,
    b: impl Into<TensorView<'b>>,
) -> Result<Output> {
    product(&a.into(), &b.into(), Values::Magnitude)
}

/// dst with a's and b's elements decoded as `kind` (exact values or magnitudes).
fn product(a: &TensorView, b: &TensorView, kind: Values) -> Result<Output> {
    let ne = check(a, b)?;
    let [_, _, ne02, ne03] = a.ne();
    let [_, n_rows, ne12, ne13] = b.ne();
    let (r2, r3) = (ne12 / ne02, ne13 / ne03);
    let bv = b.decode_all(kind.decoder())?;
    let mut values = zeroed(OP, ne.iter().try_fold(1usize, |x, &y| x.checked_mul(y)))?;
    // One job per matrix of a: the b rows of every dst batch that broadcasts it, so that each
    // of its panels is decoded once for all of them (each output is still its own sum in k
    // order, whichever rows share a panel).
    let mut jobs: Vec<Job> = (0..ne02 * ne03)
        .map(|mat| Job {
            a_mat: (mat % ne02, mat / ne02),
            b_rows: Vec::new(),
            dst_rows: Vec::new(),
        })
        .collect();
    for batch in 0..ne12 * ne13 {
        let (i2, i3) = (batch % ne12, batch / ne12);
        let job = &mut jobs[i3 / r3 * ne02 + i2 / r2];
        job.b_rows.extend(batch * n_rows..(batch + 1) * n_rows);
        job.dst_rows.extend(batch * n_rows..(batch + 1) * n_rows);
    }
    gemm(a, kind, (&jobs, b.dtype()), &bv, sum_init(), &mut values)?;
    Ok(Output { ne, values })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Tensor;

    fn f32_tensor(ne: [usize; 4], v: &[f32]) -> Tensor {
        Tensor::from_f32(DType::F32, ne, v).unwrap()
    }

    #[test]
    fn known_product_with_broadcast() {
        // a: two 2x2 matrices (K = 2, M = 2, ne02 = 2); b: 4 batches of one row, r2 = 2.
        let a = f32_tensor(
            [2, 2, 2, 1],
            &[1., 2., 3., 4., /* second matrix */ 0., 1., 1., 0.],
        );
        let b = f32_tensor([2, 1, 4, 1], &[1., 1., 2., 0., 0., 3., 5., 7.]);
        let out = mul_mat(&a, &b).unwrap();
        assert_eq!(out.ne, [2, 1, 4, 1]);
        // batches 0,1 use a's first matrix, 2,3 the second (i2 / r2).
        assert_eq!(out.values, vec![3., 7., 2., 6., 3., 0., 7., 5.]);
    }

    #[test]
    fn magnitude_ignores_cancellation() {
        let a = f32_tensor([2, 1, 1, 1], &[1., -1.]);
        let b = f32_tensor([2, 1, 1, 1], &[3., 3.]);
        assert_eq!(mul_mat(&a, &b).unwrap().values, vec![0.]);
        assert_eq!(mul_mat_magnitude(&a, &b).unwrap().values, vec![6.]);
    }

    #[test]
    fn shape_errors_name_the_problem() {
        let a = f32_tensor([3, 1, 1, 1], &[0.; 3]);
        let b = f32_tensor([2, 1, 1, 1], &[0.; 2]);
        assert!(mul_mat(&a, &b)
            .unwrap_err()
            .to_string()
            .contains("3 columns but b has 2"));
        let a = f32_tensor([2, 1, 3, 1], &[0.; 6]);
        let b = f32_tensor([2, 1, 4, 1], &[0.; 8]);
        assert!(matches!(mul_mat(&a, &b), Err(Error::Shape { .. })));
    }
}
