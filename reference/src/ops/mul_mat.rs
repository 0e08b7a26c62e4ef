//! GGML_OP_MUL_MAT: dst[i3][i2][n][m] = Σ_k a[i3/r3][i2/r2][m][k] · b[i3][i2][n][k], with
//! broadcast factors r2 = ne12/ne02 and r3 = ne13/ne03 (ggml_mul_mat semantics).

use rayon::prelude::*;

use super::Output;
use crate::tensor::Tensor;
use crate::{DType, Error, Result};

const OP: &str = "mul_mat";

/// Checks ggml's `ggml_can_mul_mat` rules and returns dst's shape (M, N, ne12, ne13).
pub fn check(a: &Tensor, b: &Tensor) -> Result<[usize; 4]> {
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
    for (what, t) in [("b", b)] {
        if t.dtype().is_quantized() || t.dtype() == DType::I32 {
            return Err(Error::Type {
                op: OP,
                what,
                dtype: t.dtype(),
            });
        }
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

/// The exact product.
pub fn mul_mat(a: &Tensor, b: &Tensor) -> Result<Output> {
    check(a, b)?;
    product(a, b, a.rows()?, b.rows()?)
}

/// Σ_k mag(a_mk)·|b_nk| for every output, with mag from [`Tensor::magnitudes`]: what an error
/// bound scales with (a sum whose terms each carry relative error ≤ δ is off by ≤ δ times this).
pub fn mul_mat_magnitude(a: &Tensor, b: &Tensor) -> Result<Output> {
    check(a, b)?;
    product(a, b, a.magnitudes()?, b.magnitudes()?)
}

/// dst from the decoded rows `av` of a and `bv` of b.
fn product(a: &Tensor, b: &Tensor, av: Vec<f64>, bv: Vec<f64>) -> Result<Output> {
    let ne = check(a, b)?;
    let k = a.ne()[0];
    let [_, m_rows, ne02, _] = a.ne();
    let [_, n_rows, ne12, _] = b.ne();
    let (r2, r3) = (ne12 / ne02, b.ne()[3] / a.ne()[3]);
    let mut values = vec![0.0; ne.iter().product()];
    // One dst row (fixed n, i2, i3) per task: M dot products against one row of b.
    values
        .par_chunks_mut(m_rows)
        .enumerate()
        .for_each(|(row, out)| {
            let (i2, i3) = ((row / n_rows) % ne12, row / (n_rows * ne12));
            let b_row = &bv[row * k..(row + 1) * k];
            let a_mat = ((i3 / r3) * ne02 + i2 / r2) * m_rows;
            for (m, o) in out.iter_mut().enumerate() {
                let a_row = &av[(a_mat + m) * k..(a_mat + m + 1) * k];
                *o = a_row.iter().zip(b_row).map(|(x, y)| x * y).sum();
            }
        });
    Ok(Output { ne, values })
}

#[cfg(test)]
mod tests {
    use super::*;

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
