//! The case model: one serialisable case type per kernel (shapes, types, parameters and a data
//! seed), its proptest strategy, and how a case is evaluated against the reference.
//!
//! A case holds no data, only how to make it: inputs are regenerated bit for bit from the seed,
//! so a reproducer file is a few lines of JSON. Strategies generate every input ggml accepts for
//! the op; what upstream's host rejects before dispatch is a named precondition (the case is
//! skipped with that name), never a narrowing of the strategy.

pub mod data;
pub mod intdot;
pub mod model_devices;
pub mod mxfp4;

use std::fmt;

use proptest::strategy::{BoxedStrategy, Strategy};
use serde::{Deserialize, Serialize};
use vkdiff_gpu::DeviceCaps;

use crate::model::config::Family;
use crate::model::driver::Ctx;
use crate::model::kernels::{
    check_filter, did_you_mean, name_matches, ops_scope, KernelDef, Params, Variant,
};
pub use crate::model::outcome::{CrashKind, Outcome};
use crate::model::work::BenchShapes;

/// The registry: one line per kernel, `module::Def(CaseType)`, declares the module, its variant
/// of [`Case`] (whose snake_case name is the `op` tag of reproducers and must equal
/// [`KernelDef::NAME`]: a unit test checks it) and its row in [`KERNELS`]. The module holds
/// everything else about the kernel.
macro_rules! registry {
    ($($module:ident :: $Def:ident ( $Case:ident ),)*) => {
        $(pub mod $module;)*

        /// A case of any kernel. The `op` tag names the kernel in reproducer files.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "op", rename_all = "snake_case")]
        pub enum Case {
            $(
                #[doc = concat!("A case of the `", stringify!($module), "` kernel.")]
                $Def($module::$Case),
            )*
        }

        impl Case {
            /// The kernel's case model behind the case.
            pub fn model(&self) -> &dyn CaseModel {
                match self {
                    $(Case::$Def(c) => c,)*
                }
            }

            /// The kernel's name in the [`KERNELS`](KERNELS) table.
            pub fn kernel(&self) -> &'static str {
                match self {
                    $(Case::$Def(_) => <$module::$Def as KernelDef>::NAME,)*
                }
            }
        }

        $(
            impl From<$module::$Case> for Case {
                fn from(case: $module::$Case) -> Case {
                    Case::$Def(case)
                }
            }
        )*

        /// Every kernel vkdiff tests, in `vkdiff list` order.
        pub const KERNELS: &[Kernel] = &[$(Kernel::of::<$module::$Def>(),)*];
    };
}

registry! {
    wkv7::Wkv7(Wkv7Case),
    mul_mat_vec::MulMatVec(MulMatVecCase),
    mul_mat_vec_id::MulMatVecId(MulMatVecIdCase),
    flash_attn::FlashAttn(FlashAttnCase),
    mul_mm::MulMm(MulMmCase),
    mul_mm_id::MulMmId(MulMmIdCase),
}

/// A kernel family: a [`KernelDef`] with its parameter type erased, so that one table holds
/// every kernel.
pub struct Kernel {
    /// See [`KernelDef::NAME`].
    pub name: &'static str,
    /// See [`KernelDef::SHADER`].
    pub shader: &'static str,
    /// See [`KernelDef::SUMMARY`].
    pub summary: &'static str,
    /// See [`KernelDef::ERROR_MODEL`].
    pub error_model: &'static str,
    /// Every variant upstream compiles and selects.
    pub variants: fn() -> Vec<Variant>,
    /// Case generator for a variant.
    pub strategy: fn(&Variant) -> BoxedStrategy<Case>,
    /// Why this device cannot run the variant (a missing feature), or None.
    pub requires: fn(&Variant, &DeviceCaps) -> Option<String>,
    /// Why ggml's host running a shader family does not run the variant, or None.
    pub ggml_skip: fn(&Variant, Family) -> Option<String>,
    /// See [`KernelDef::BENCH_ORDER`].
    pub bench_order: u8,
    /// See [`KernelDef::bench_rows`].
    pub bench_rows: fn(&BenchShapes) -> Vec<(String, Case)>,
}

impl Kernel {
    /// The row of kernel `K`.
    pub const fn of<K: KernelDef>() -> Kernel
    where
        Case: From<K::Case>,
    {
        Kernel {
            name: K::NAME,
            shader: K::SHADER,
            summary: K::SUMMARY,
            error_model: K::ERROR_MODEL,
            variants: variants_of::<K>,
            strategy: strategy_of::<K>,
            requires: requires_of::<K>,
            ggml_skip: ggml_skip_of::<K>,
            bench_order: K::BENCH_ORDER,
            bench_rows: bench_rows_of::<K>,
        }
    }
}

fn variants_of<K: KernelDef>() -> Vec<Variant> {
    K::variants()
        .into_iter()
        .map(|(name, params)| Variant {
            kernel: K::NAME,
            name,
            params: Params::new(params),
        })
        .collect()
}

/// `K`'s parameters of a variant. A row only ever receives the variants its own `variants`
/// made (the registry pairs them), so another kernel's variant is a bug in the caller.
fn params_of<K: KernelDef>(v: &Variant) -> &K::Params {
    v.params::<K::Params>().unwrap_or_else(|| {
        panic!(
            "kernel {} was given variant {} of kernel {}",
            K::NAME,
            v.name,
            v.kernel
        )
    })
}

fn strategy_of<K: KernelDef>(v: &Variant) -> BoxedStrategy<Case>
where
    Case: From<K::Case>,
{
    K::strategy(params_of::<K>(v)).prop_map(Case::from).boxed()
}

fn bench_rows_of<K: KernelDef>(shapes: &BenchShapes) -> Vec<(String, Case)>
where
    Case: From<K::Case>,
{
    K::bench_rows(shapes)
        .into_iter()
        .map(|(label, case)| (label, Case::from(case)))
        .collect()
}

fn requires_of<K: KernelDef>(v: &Variant, caps: &DeviceCaps) -> Option<String> {
    K::requires(params_of::<K>(v), caps)
}

fn ggml_skip_of<K: KernelDef>(v: &Variant, family: Family) -> Option<String> {
    K::ggml_skip(params_of::<K>(v), family)
}

/// The kernel named `name`.
pub fn kernel(name: &str) -> Option<&'static Kernel> {
    KERNELS.iter().find(|k| k.name == name)
}

/// Every (kernel, variant) pair selected by `ops` (kernel names; empty = all) and `filter` (a
/// substring of the variant name). A selection that matches nothing is an error naming what did
/// not match and the closest names: a mistyped filter must not pass as a run that tested nothing.
pub fn select(
    ops: &[String],
    filter: Option<&str>,
) -> Result<Vec<(&'static Kernel, Variant)>, String> {
    let kernel_names: Vec<&str> = KERNELS.iter().map(|k| k.name).collect();
    for op in ops {
        if kernel(op).is_none() {
            return Err(format!(
                "unknown op {op:?}{}; kernels are: {}",
                did_you_mean(op, kernel_names.iter().copied()),
                kernel_names.join(", ")
            ));
        }
    }
    let of_ops: Vec<(&'static Kernel, Variant)> = KERNELS
        .iter()
        .filter(|k| ops.is_empty() || ops.iter().any(|o| o == k.name))
        .flat_map(|k| (k.variants)().into_iter().map(move |v| (k, v)))
        .collect();
    let names: Vec<&str> = of_ops.iter().map(|(_, v)| v.name.as_str()).collect();
    check_filter("--variant", filter, &names, &ops_scope(ops))?;
    Ok(of_ops
        .into_iter()
        .filter(|(_, v)| name_matches(filter, &v.name))
        .collect())
}

/// What a kernel's case type implements: evaluation against the reference with its error
/// model, and the words the campaign's findings describe its failures with (the defaults suit a
/// kernel with one path and nothing forced).
pub trait CaseModel: fmt::Display {
    /// The upstream variant name the case runs.
    fn variant(&self) -> String;
    /// See [`Case::validate`].
    fn validate(&self) -> Result<(), String>;
    /// Runs the case through `ctx`'s driver and judges it.
    fn evaluate(&self, ctx: &mut Ctx) -> Outcome;
    /// Why the configuration is one the modelled host never produces for a real graph on
    /// `caps` (empty: reachable). See [`crate::model::facts::reach_of`].
    fn forced(&self, _caps: &DeviceCaps) -> Vec<String> {
        Vec::new()
    }
    /// Why the case's inputs are ones no real graph produces, whichever host runs them (empty:
    /// real inputs), e.g. a token that routes several slots to one expert, which a top-k router
    /// never does. Unlike [`CaseModel::forced`] this holds in backend mode too, where ggml's own
    /// host chose the path. See [`crate::model::facts::input_reach`].
    fn unreal_inputs(&self) -> Vec<String> {
        Vec::new()
    }
    /// The path within the kernel (`scalar`, `cm1`, `cm2`), empty for a one-path kernel.
    fn path(&self) -> String {
        String::new()
    }
    /// The names of dst's ggml axes.
    fn axes(&self) -> [&'static str; 4] {
        ["i0", "i1", "i2", "i3"]
    }
    /// The facts that mark a different failure mode, kept while shrinking
    /// (the campaign groups a variant's failures by them).
    fn triggers(&self) -> Vec<String> {
        Vec::new()
    }
    /// The shape facts, types left out (a finding's shape words).
    fn facts(&self) -> Vec<String>;
    /// Adjusts the cause facts taken from the triggers (which name a distinct finding).
    fn cause(&self, _facts: &mut Vec<String>) {}
    /// The sizes of the case, named, for the evidence ranges of a finding.
    fn dims(&self) -> Vec<(&'static str, usize)>;
    /// The optional device extensions the case's kernel uses (a worker opens its device with
    /// just these, so a kernel that needs none never runs on a device with coopmat enabled).
    fn extensions(&self) -> vkdiff_gpu::device::Extensions {
        vkdiff_gpu::device::Extensions::NONE
    }
    /// The least bytes and flops the kernel must move and do, where defined (`vkdiff bench`).
    fn work(&self) -> Option<crate::model::work::Work> {
        None
    }
}

/// The most elements one generated tensor may have (1 GiB of f32): beyond this a case is
/// rejected as invalid rather than allowed to exhaust host memory.
pub const MAX_ELEMENTS: usize = 1 << 28;

/// The skip of an A type newer than the pinned July 2025 host, so absent from vkdiff's own
/// runners and shader tree (`vkdiff_gpu::runners::NOT_IN_OWN_TREE`: mxfp4, nvfp4, q1_0, q2_0,
/// tq1_0, tq2_0), taken before any input or reference is computed; None through a later host
/// (backend mode), which runs it. A named precondition: outside the pinned host's domain.
pub fn later_type_skip(ctx: &Ctx, a: vkdiff_reference::DType) -> Option<Outcome> {
    (!ctx.latitude().later_host && vkdiff_gpu::runners::NOT_IN_OWN_TREE.contains(&a)).then(|| {
        Outcome::Skip(format!(
            "precondition: {a} is a later ggml type than the pinned July 2025 host that vkdiff's own runners and shaders follow; run it in backend mode (--ggml)"
        ))
    })
}

/// Checks that every named size is at least 1 and their product at most [`MAX_ELEMENTS`].
pub fn check_sizes(what: &str, sizes: &[(&str, usize)]) -> Result<(), String> {
    if let Some((name, _)) = sizes.iter().find(|(_, v)| *v == 0) {
        return Err(format!("{what}: {name} must be at least 1"));
    }
    match sizes
        .iter()
        .try_fold(1usize, |acc, (_, v)| acc.checked_mul(*v))
    {
        Some(total) if total <= MAX_ELEMENTS => Ok(()),
        _ => {
            let dims: Vec<String> = sizes.iter().map(|(n, v)| format!("{n}={v}")).collect();
            Err(format!(
                "{what}: {} elements exceed vkdiff's limit of {MAX_ELEMENTS}",
                dims.join("·")
            ))
        }
    }
}

impl Case {
    /// The upstream variant name the case runs.
    pub fn variant(&self) -> String {
        self.model().variant()
    }

    /// Checks that the case describes inputs ggml could hold and vkdiff can generate; the
    /// error names the field and the rule (a hand-edited or fuzzed reproducer can break them).
    pub fn validate(&self) -> Result<(), String> {
        self.model().validate()
    }

    /// Runs the case on the device and judges it.
    pub fn evaluate(&self, ctx: &mut Ctx) -> Outcome {
        let _span = vkdiff_gpu::profile::span("case (everything)");
        if let Err(e) = self.validate() {
            return Outcome::Error(format!("invalid case: {e}"));
        }
        self.model().evaluate(ctx)
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.model().fmt(f)
    }
}

/// The extensions of a kernel on the cm1 (`cm1`) or cm2 (`cm2`) path whose matrix is of type
/// `matrix`: cooperative matrices, and bf16 ones for a bf16 matrix (scalar kernels, bf16
/// mat-vec included, convert by hand and need none).
pub fn coopmat_extensions(
    cm1: bool,
    cm2: bool,
    matrix: vkdiff_reference::DType,
) -> vkdiff_gpu::device::Extensions {
    vkdiff_gpu::device::Extensions {
        coopmat: cm1 || cm2,
        coopmat2: cm2,
        bf16: (cm1 || cm2) && matrix == vkdiff_reference::DType::Bf16,
    }
}

/// The (A row offset, B row) of every dst column of a batched MUL_MAT with `n` columns per
/// matrix: column c is (n, i2, i3), which multiplies A matrix (i3, i2 / r2) (first row at
/// that matrix's index times `m`) by B row c. Shared by the mat-vec and mul_mm error models.
pub fn batched_columns(
    n: usize,
    ne02: usize,
    r2: usize,
    ne03: usize,
    m: usize,
) -> Vec<(usize, usize)> {
    let ne12 = ne02 * r2;
    (0..n * ne12 * ne03)
        .map(|c| {
            let (i2, i3) = ((c / n) % ne12, c / (n * ne12));
            ((i3 * ne02 + i2 / r2) * m, c)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::TestRunner;

    use super::{select, KERNELS};
    use crate::model::kernels::closest_names;

    #[test]
    fn every_registry_row_s_cases_carry_its_name_as_their_op_tag() {
        let mut runner = TestRunner::deterministic();
        for k in KERNELS {
            let variants = (k.variants)();
            assert!(!variants.is_empty(), "{} has variants", k.name);
            for v in &variants {
                assert_eq!(v.kernel, k.name);
                let case = (k.strategy)(v).new_tree(&mut runner).unwrap().current();
                assert_eq!(case.kernel(), k.name);
                let json = serde_json::to_value(&case).unwrap();
                assert_eq!(json["op"], k.name);
                assert_eq!(serde_json::from_value::<super::Case>(json).unwrap(), case);
            }
        }
    }

    #[test]
    fn a_selection_that_matches_nothing_is_an_error_with_the_closest_names() {
        let e = select(&[], Some("zzz")).err().expect("an error");
        assert!(e.contains("--variant \"zzz\" selects nothing"), "{e}");
        assert!(e.contains("no name is close"), "{e}");
        let e = select(&[], Some("rwkv_wvk7")).err().expect("an error");
        assert!(e.contains("closest: rwkv_wkv7"), "{e}");
        let e = select(&["wkv8".into()], None).err().expect("an error");
        assert!(
            e.contains("unknown op \"wkv8\" (did you mean wkv7?)"),
            "{e}"
        );
        // Valid on its own, nothing in that kernel.
        let e = select(&["wkv7".into()], Some("q4_0"))
            .err()
            .expect("an error");
        assert!(e.contains("of kernel wkv7"), "{e}");
        assert!(!select(&["wkv7".into()], Some("wkv7")).unwrap().is_empty());
        assert_eq!(
            closest_names("q4_0", ["x_q4_0", "q4_0"]),
            [(0, "q4_0"), (0, "x_q4_0")]
        );
    }
}
