//! What a kernel is. A kernel is one module under `src/model/cases/` that implements
//! [`KernelDef`] (its variants with its own parameter type, its case type and strategy, the
//! device features a variant needs, its bench rows) and `CaseModel` for its case type (how a
//! case is evaluated and judged, and the words its findings are described by). One line in the
//! `registry!` of `src/model/cases/mod.rs` adds it to the registry's `KERNELS`, from which
//! `vkdiff list`/`run`, the differential tests, the fuzz target, mutation testing, the bench and
//! the CLI's `--op` list are derived. This module knows no kernel and no case type: the
//! registry wraps each kernel's case type into its `Case` enum.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use proptest::strategy::BoxedStrategy;
use vkdiff_gpu::DeviceCaps;

use crate::model::work::BenchShapes;

/// What a kernel module implements (the registry turns it into a `Kernel` row).
pub trait KernelDef: 'static {
    /// What distinguishes this kernel's variants (types, path, accumulator…).
    type Params: fmt::Debug + Clone + PartialEq + Send + Sync + 'static;
    /// The kernel's case type (one variant of the registry's `Case`).
    type Case: fmt::Debug + Clone + 'static;
    /// Name used by `--op`, in reports and as the `op` tag of reproducers (the module's stem).
    const NAME: &'static str;
    /// Main shader file.
    const SHADER: &'static str;
    /// One line on what it computes.
    const SUMMARY: &'static str;
    /// One line on its error model (details beside the case model).
    const ERROR_MODEL: &'static str;
    /// Every variant upstream compiles and selects: (upstream's SPIR-V name, parameters).
    fn variants() -> Vec<(String, Self::Params)>;
    /// Case generator for a variant.
    fn strategy(params: &Self::Params) -> BoxedStrategy<Self::Case>;
    /// Why this device cannot run the variant (a missing feature), or None.
    fn requires(_params: &Self::Params, _caps: &DeviceCaps) -> Option<String> {
        None
    }
    /// Where the kernel's rows come in `vkdiff bench` (lower first).
    const BENCH_ORDER: u8 = u8::MAX;
    /// Realistic LLM-shape cases for `vkdiff bench`, each with its label (none by default: the
    /// kernel is then tested everywhere but not benched).
    fn bench_rows(_shapes: &BenchShapes) -> Vec<(String, Self::Case)> {
        Vec::new()
    }
    /// Why ggml's own host, under `config`, does not run the variant (another path), or None.
    fn ggml_skip(_params: &Self::Params, _config: crate::model::config::Config) -> Option<String> {
        None
    }
}

/// A kernel's variant parameters, type-erased (each kernel reads back its own type).
#[derive(Clone)]
pub struct Params(Arc<dyn DynParams>);

impl Params {
    /// Erases `params`' type.
    pub fn new<T: Any + fmt::Debug + PartialEq + Send + Sync>(params: T) -> Params {
        Params(Arc::new(params))
    }
}

trait DynParams: Any + fmt::Debug + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn eq_dyn(&self, other: &dyn DynParams) -> bool;
}

impl<T: Any + fmt::Debug + PartialEq + Send + Sync> DynParams for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn eq_dyn(&self, other: &dyn DynParams) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
}

impl fmt::Debug for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for Params {
    fn eq(&self, other: &Self) -> bool {
        self.0.eq_dyn(&*other.0)
    }
}

/// One compiled variant of a kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// The kernel's name.
    pub kernel: &'static str,
    /// Upstream's SPIR-V name, e.g. `mul_mat_vec_q4_0_f32_f32`.
    pub name: String,
    /// Its parameters (the kernel's [`KernelDef::Params`]).
    pub params: Params,
}

impl Variant {
    /// The parameters as `T`, when they are of that type.
    pub fn params<T: Any>(&self) -> Option<&T> {
        self.params.0.as_any().downcast_ref::<T>()
    }
}

/// Whether a variant name passes a `--variant` filter: it contains the filter, or one of its
/// comma-separated parts (no filter: every name).
pub fn name_matches(filter: Option<&str>, name: &str) -> bool {
    // A part ending in `$` must end the name: `f32_f16_f16$` picks the scalar flash-attention
    // variant and not its `_cm1` / `_cm2` siblings.
    filter.is_none_or(|f| {
        f.split(',').any(|f| match f.strip_suffix('$') {
            Some(end) => name.ends_with(end),
            None => name.contains(f),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::name_matches;

    #[test]
    fn a_variant_filter_takes_comma_separated_parts() {
        assert!(name_matches(None, "matmul_q8_0_f32"));
        assert!(name_matches(Some("q4_0,q8_0"), "matmul_q8_0_f32"));
        assert!(!name_matches(Some("q4_0,q4_1"), "matmul_q8_0_f32"));
        assert!(name_matches(Some("f16_f16$"), "flash_attn_f32_f16_f16"));
        assert!(!name_matches(
            Some("f16_f16$"),
            "flash_attn_f32_f16_f16_cm1"
        ));
    }
}
