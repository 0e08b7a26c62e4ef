//! One module per ggml op. Each takes [`Tensor`](crate::tensor::Tensor)s with ggml's semantics
//! and returns exact values (f64 accumulation) in ggml's dst layout.

pub mod flash_attn;
mod kernel;
pub mod mul_mat;
pub mod mul_mat_id;
pub mod wkv7;
#[cfg(test)]
mod naive;
#[cfg(test)]
mod tests_fast;

/// The result of an op: dst's shape (ggml ne, ne[0] fastest) and its exact values, densely
/// packed in that order.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// dst's element counts.
    pub ne: [usize; 4],
    /// dst's values, ne[0] fastest.
    pub values: Vec<f64>,
}

impl Output {
    /// The ggml index (i0, i1, i2, i3) of flat position `i`.
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
