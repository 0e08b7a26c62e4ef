//! One runner per kernel family, named after its shader file. A runner reproduces what
//! upstream's host does for that kernel (variant and define choice, specialization constants,
//! push constants, dispatch size, host-side staging copies), so the same code drives our shaders
//! and a user's upstream tree.

pub mod flash_attn;
pub mod mul_mat_vec;
pub mod mul_mat_vec_id;
pub mod mul_mm;
pub mod wkv7;

/// What one kernel run produced.
#[derive(Debug, Clone)]
pub struct KernelRun {
    /// dst as the kernel wrote it, ggml order (ne[0] fastest).
    pub values: Vec<f32>,
    /// The kernel wrote past the end of dst (into the guard bytes).
    pub overrun: bool,
    /// GPU time of the dispatches in ns, when the device has timestamps.
    pub gpu_ns: Option<f64>,
    /// Upstream-style name of the variant that ran.
    pub variant: String,
    /// Validation-layer messages raised while it ran.
    pub validation: Vec<String>,
}

/// The host's `elements`/`wg_denoms` rule (interface.md §1.3): workgroups = ⌈elements / denoms⌉ per
/// axis.
pub fn workgroups(elements: [u32; 3], denoms: [u32; 3]) -> [u32; 3] {
    [0, 1, 2].map(|i| elements[i].div_ceil(denoms[i]))
}
