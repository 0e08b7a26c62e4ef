//! The kernel table: the single list every front end reads. `vkdiff list`, `vkdiff run`, the
//! test suite and the fuzz targets all iterate [`KERNELS`]; adding a kernel means one row here
//! plus one file per layer (reference op, shader, runner, case module) with the same stem.

use proptest::strategy::BoxedStrategy;
use vkdiff_gpu::DeviceCaps;
use vkdiff_reference::DType;

use crate::cases::{self, Case};

/// A kernel family.
pub struct Kernel {
    /// Name used by `--op` and in reports (the case module's stem).
    pub name: &'static str,
    /// Main shader file.
    pub shader: &'static str,
    /// One line on what it computes.
    pub summary: &'static str,
    /// One line on its error model (details in [`crate::tolerance`]).
    pub error_model: &'static str,
    /// Every variant upstream compiles and selects.
    pub variants: fn() -> Vec<Variant>,
    /// Case generator for a variant.
    pub strategy: fn(&Variant) -> BoxedStrategy<Case>,
    /// Why this device cannot run the variant (a missing feature), or None.
    pub requires: fn(&Variant, &DeviceCaps) -> Option<String>,
}

/// What distinguishes the variants of a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VariantParams {
    /// The one wkv7 variant.
    Wkv7,
    /// Flash attention on `path` with K and V of type `kv` (the row covers both accumulator
    /// precisions, which each case draws, and the aligned/unaligned, small/large pipelines).
    FlashAttn {
        /// The device path (scalar, cm1, cm2).
        path: vkdiff_gpu::runners::flash_attn::Path,
        /// K and V's type.
        kv: DType,
    },
    /// Mat-vec over A type `a` and B type `b`.
    MulMatVec {
        /// A's type.
        a: DType,
        /// B's type.
        b: DType,
    },
    /// Single-token MUL_MAT_ID through the mat-vec kernel, experts of type `a`, B f32.
    MulMatVecId {
        /// The experts' type.
        a: DType,
    },
    /// MUL_MAT through the matrix-matrix kernel: the pipeline family's kernel A and B types
    /// and accumulator (the row also covers the aligned twin).
    MulMm {
        /// A's type as the kernel reads it.
        a: DType,
        /// B's type as the kernel reads it.
        b: DType,
        /// f16 accumulators.
        acc16: bool,
        /// The path: scalar fp16, cm1 (`mul_mm.comp` with COOPMAT) or cm2 (`mul_mm_cm2.comp`).
        mode: vkdiff_gpu::runners::mul_mm::Mode,
    },
    /// MUL_MAT_ID through the matrix-matrix kernel (as [`VariantParams::MulMm`]).
    MulMmId {
        /// The experts' type.
        a: DType,
        /// B's type as the kernel reads it.
        b: DType,
        /// f16 accumulators.
        acc16: bool,
        /// The path.
        mode: vkdiff_gpu::runners::mul_mm::Mode,
    },
}

/// One compiled variant of a kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// The kernel's name.
    pub kernel: &'static str,
    /// Upstream's SPIR-V name, e.g. `mul_mat_vec_q4_0_f32_f32`.
    pub name: String,
    /// Its parameters.
    pub params: VariantParams,
}

impl Variant {
    /// A variant of `kernel` named `name`.
    pub fn new(kernel: &'static str, name: &str, params: VariantParams) -> Self {
        Variant {
            kernel,
            name: name.to_string(),
            params,
        }
    }
}

/// Every kernel vkdiff tests.
pub const KERNELS: &[Kernel] = &[
    cases::wkv7::KERNEL,
    cases::mul_mat_vec::KERNEL,
    cases::mul_mat_vec_id::KERNEL,
    cases::flash_attn::KERNEL,
    cases::mul_mm::KERNEL,
    cases::mul_mm_id::KERNEL,
];

/// The kernel named `name`.
pub fn kernel(name: &str) -> Option<&'static Kernel> {
    KERNELS.iter().find(|k| k.name == name)
}

/// Every (kernel, variant) pair selected by `ops` (kernel names; empty = all) and `filter` (a
/// substring of the variant name).
pub fn select(
    ops: &[String],
    filter: Option<&str>,
) -> Result<Vec<(&'static Kernel, Variant)>, String> {
    for op in ops {
        if kernel(op).is_none() {
            let names: Vec<_> = KERNELS.iter().map(|k| k.name).collect();
            return Err(format!(
                "unknown op {op:?}; kernels are: {}",
                names.join(", ")
            ));
        }
    }
    Ok(KERNELS
        .iter()
        .filter(|k| ops.is_empty() || ops.iter().any(|o| o == k.name))
        .flat_map(|k| (k.variants)().into_iter().map(move |v| (k, v)))
        .filter(|(_, v)| filter.is_none_or(|f| f.split(',').any(|f| v.name.contains(f))))
        .collect())
}
