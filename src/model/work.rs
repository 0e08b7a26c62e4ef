//! What `vkdiff bench` asks of the case model: the least work a case's kernel must do (which
//! GB/s and GFLOP/s divide), and the shapes each kernel's bench rows are drawn at.

/// Bytes a kernel must move and flops it must do at the least: what GB/s and GFLOP/s divide.
#[derive(Debug, Clone, Copy)]
pub struct Work {
    /// Bytes read and written (inputs once, outputs once).
    pub bytes: f64,
    /// Floating-point operations (a multiply-add counts 2).
    pub flops: f64,
}

/// How a kernel draws its bench rows ([`crate::model::kernels::KernelDef::bench_rows`]).
#[derive(Debug, Clone, Copy)]
pub struct BenchShapes {
    /// Shrink large dimensions ([`quick_dim`]): every row, in minutes on lavapipe.
    pub quick: bool,
    /// Every variant of a sweep, not only the common ones.
    pub all: bool,
    /// The shader core count upstream's host knows for the device
    /// ([`crate::model::facts::host_cores`]): with it a decode row splits as that host does
    /// (split_k = 2·cores / KV-head groups, interface.md §9.6); without it the host does not split either.
    pub host_cores: Option<u32>,
}

impl BenchShapes {
    /// `x`, or its `--quick` cut.
    pub fn dim(&self, x: usize) -> usize {
        if self.quick {
            quick_dim(x)
        } else {
            x
        }
    }
}

/// A large dimension of a bench shape cut for `--quick`: 4096 → 256, 14336 → 768, 32768 → 2048;
/// a multiple of 256 (every block length) and at least 256.
pub fn quick_dim(x: usize) -> usize {
    256 * (x / 4096).max(1)
}

/// How a bench row names the cm2 path.
pub fn cm2_label(cm2: bool) -> &'static str {
    if cm2 {
        " cm2"
    } else {
        ""
    }
}
