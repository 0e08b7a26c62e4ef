//! One runner per kernel family, named after its shader file. A runner reproduces what
//! upstream's host does for that kernel (variant and define choice, specialization constants,
//! push constants, dispatch size, host-side staging copies), so the same code drives our shaders
//! and a user's upstream tree.

use vkdiff_reference::DType;

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

/// The A types vkdiff's own shader tree (`shaders/`) has no decoder for: their cases run in
/// backend mode only (`vkdiff run --ggml`). MXFP4 (ggml's type 39, added upstream after the
/// July 2025 interface the tree follows) would need its own 17-byte block path: the tree's
/// legacy-block decoders read 16-bit words, which a 17-byte stride does not align. The same holds
/// for the still later nvfp4, q1_0, q2_0, tq1_0 and tq2_0.
pub const NOT_IN_OWN_TREE: &[DType] = &[
    DType::Mxfp4,
    DType::Nvfp4,
    DType::Q1_0,
    DType::Q2_0,
    DType::Tq1_0,
    DType::Tq2_0,
];

/// Ok when the own shader tree decodes A type `a`; else the reason, as
/// [`GpuError::Unsupported`](crate::GpuError::Unsupported) (a visible skip).
pub fn own_tree_decodes(a: DType) -> crate::Result<()> {
    if NOT_IN_OWN_TREE.contains(&a) {
        return Err(crate::GpuError::Unsupported(format!(
            "vkdiff's own shader tree has no {a} decoder (a later upstream type than its July 2025 interface); run it in backend mode (--ggml)"
        )));
    }
    Ok(())
}

/// The host's `elements`/`wg_denoms` rule (interface.md §1.3): workgroups = ⌈elements / denoms⌉ per
/// axis.
pub fn workgroups(elements: [u32; 3], denoms: [u32; 3]) -> [u32; 3] {
    [0, 1, 2].map(|i| elements[i].div_ceil(denoms[i]))
}
