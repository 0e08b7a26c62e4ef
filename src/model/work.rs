//! The least work a case's kernel must do, which the bench divides by (GB/s, GFLOP/s).

/// Bytes a kernel must move and flops it must do at the least: what GB/s and GFLOP/s divide.
#[derive(Debug, Clone, Copy)]
pub struct Work {
    /// Bytes read and written (inputs once, outputs once).
    pub bytes: f64,
    /// Floating-point operations (a multiply-add counts 2).
    pub flops: f64,
}
