//! One module per ggml op. Each takes tensors ([`Tensor`](crate::tensor::Tensor) or borrowed
//! [`TensorView`](crate::tensor::TensorView)) with ggml's semantics and returns exact values
//! (f64 accumulation, sequential in index order) in ggml's dst layout.

pub mod flash_attn;
mod kernel;
pub mod mul_mat;
pub mod mul_mat_id;
#[cfg(test)]
mod naive;
mod prim;
#[cfg(test)]
mod tests_fast;
mod transpose;
pub mod wkv7;

/// The result of an op: dst's shape (ggml ne, `ne[0]` fastest) and its exact values, densely
/// packed in that order.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// dst's element counts.
    pub ne: [usize; 4],
    /// dst's values, `ne[0]` fastest.
    pub values: Vec<f64>,
}

impl Output {
    /// The ggml index (i0, i1, i2, i3) of flat position `i`.
    ///
    /// # Panics
    /// If `ne[0]`, `ne[1]` or `ne[2]` is 0 (no op returns such a shape).
    pub fn index_of(&self, i: usize) -> [usize; 4] {
        let [n0, n1, n2, _] = self.ne;
        [
            i % n0,
            (i / n0) % n1,
            (i / (n0 * n1)) % n2,
            i / (n0 * n1 * n2),
        ]
    }
}
