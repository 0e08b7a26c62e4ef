//! The case model: one serialisable case type per kernel (shapes, types, parameters and a data
//! seed), its proptest strategy, and how a case is evaluated against the reference.
//!
//! A case holds no data, only how to make it: inputs are regenerated bit for bit from the seed,
//! so a reproducer file is a few lines of JSON. Strategies generate every input ggml accepts for
//! the op; what upstream's host rejects before dispatch is a named precondition (the case is
//! skipped with that name), never a narrowing of the strategy.

pub mod data;
#[cfg(test)]
pub(crate) mod test_devices;

use std::fmt;

use serde::{Deserialize, Serialize};
use vkdiff_gpu::runners::KernelRun;
use vkdiff_gpu::{DeviceCaps, Gpu, GpuError, ShaderTree};
use vkdiff_reference::tensor::Tensor;

use crate::compare::Verdict;
use crate::kernels::{Kernel, KernelDef};

/// The registry: one line per kernel, `module::Def(CaseType)`, declares the module, its variant
/// of [`Case`] (whose snake_case name is the `op` tag of reproducers and must equal
/// [`KernelDef::NAME`]: a unit test checks it) and its row in [`REGISTRY`]. The module holds
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

            /// The kernel's name in the [`KERNELS`](crate::kernels::KERNELS) table.
            pub fn kernel(&self) -> &'static str {
                match self {
                    $(Case::$Def(_) => <$module::$Def as KernelDef>::NAME,)*
                }
            }
        }

        /// Every kernel, in `vkdiff list` order.
        pub const REGISTRY: &[Kernel] = &[$(Kernel::of::<$module::$Def>(),)*];
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

/// What a kernel's case type implements: evaluation against the reference with its error
/// model, and the words [`crate::findings`] describes its failures with (the defaults suit a
/// kernel with one path and nothing forced).
pub trait CaseModel: fmt::Display {
    /// The upstream variant name the case runs.
    fn variant(&self) -> String;
    /// See [`Case::validate`].
    fn validate(&self) -> Result<(), String>;
    /// Runs the case on the device (or through `ctx`'s graph executor) and judges it.
    fn evaluate(&self, ctx: &mut Ctx) -> Outcome;
    /// Why the configuration is one the modelled host never produces for a real graph on
    /// `caps` (empty: reachable). See [`crate::findings::reach_of`].
    fn forced(&self, _caps: &DeviceCaps) -> Vec<String> {
        Vec::new()
    }
    /// Why the case's inputs are ones no real graph produces, whichever host runs them (empty:
    /// real inputs), e.g. a token that routes several slots to one expert, which a top-k router
    /// never does. Unlike [`CaseModel::forced`] this holds in backend mode too, where ggml's own
    /// host chose the path. See [`crate::findings::input_reach`].
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
    /// ([`crate::findings::triggers`]).
    fn triggers(&self) -> Vec<String> {
        Vec::new()
    }
    /// The shape facts, types left out ([`crate::findings::facts`]).
    fn facts(&self) -> Vec<String>;
    /// Adjusts the cause facts that [`crate::findings::cause`] took from the triggers.
    fn cause(&self, _facts: &mut Vec<String>) {}
    /// The sizes of the case, named, for the evidence ranges of a finding.
    fn dims(&self) -> Vec<(&'static str, usize)>;
    /// The least bytes and flops the kernel must move and do, where defined (`vkdiff bench`).
    fn work(&self) -> Option<crate::bench::Work> {
        None
    }
}

/// The most elements one generated tensor may have (1 GiB of f32): beyond this a case is
/// rejected as invalid rather than allowed to exhaust host memory.
pub const MAX_ELEMENTS: usize = 1 << 28;

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

/// What a case evaluates on: a device and a shader tree.
pub struct Ctx<'a> {
    /// The device (in graph mode: opened for its capabilities, which the error models read).
    pub gpu: &'a mut Gpu,
    /// Where the shaders come from.
    pub tree: &'a mut ShaderTree,
    /// Run each kernel twice and require bitwise-identical results (catches races).
    pub repeat: bool,
    /// Run the op through this graph executor (ggml's own host) instead of vkdiff's runners.
    pub graph: Option<&'a mut dyn GraphExec>,
}

/// One ggml op as a case describes it, independent of who executes it: the tensors (types,
/// shapes, strides: a strided tensor's data holds its backing bytes) and the op's parameters.
/// Central on purpose: this is the vocabulary of ggml ops that the ggml backend driver
/// (`crate::ggml`) knows how to build through ggml's C API; a kernel for an op not listed here
/// runs through vkdiff's own runner only, until the driver learns the op.
pub enum GraphOp<'a> {
    /// `ggml_mul_mat(a, b)`.
    MulMat {
        /// src0.
        a: &'a Tensor,
        /// src1.
        b: &'a Tensor,
        /// `ggml_mul_mat_set_prec(GGML_PREC_F32)`.
        prec_f32: bool,
    },
    /// `ggml_mul_mat_id(as, b, ids)`.
    MulMatId {
        /// The experts.
        a: &'a Tensor,
        /// src1.
        b: &'a Tensor,
        /// I32 expert ids.
        ids: &'a Tensor,
        /// GGML_PREC_F32 in op_params[0].
        prec_f32: bool,
    },
    /// `ggml_flash_attn_ext(q, k, v, mask, scale, max_bias, softcap)`.
    FlashAttn {
        /// Queries.
        q: &'a Tensor,
        /// Keys.
        k: &'a Tensor,
        /// Values.
        v: &'a Tensor,
        /// F16 mask.
        mask: Option<&'a Tensor>,
        /// Scale.
        scale: f32,
        /// ALiBi max bias.
        max_bias: f32,
        /// Logit softcap.
        softcap: f32,
        /// `ggml_flash_attn_ext_set_prec(GGML_PREC_F32)`.
        prec_f32: bool,
    },
    /// `ggml_rwkv_wkv7(r, w, k, v, a, b, state)`.
    Wkv7([&'a Tensor; 7]),
}

impl GraphOp<'_> {
    /// ggml's name for the op.
    pub fn name(&self) -> &'static str {
        match self {
            GraphOp::MulMat { .. } => "MUL_MAT",
            GraphOp::MulMatId { .. } => "MUL_MAT_ID",
            GraphOp::FlashAttn { .. } => "FLASH_ATTN_EXT",
            GraphOp::Wkv7(_) => "RWKV_WKV7",
        }
    }
}

/// Something that runs a [`GraphOp`] (the ggml backend driver).
pub trait GraphExec {
    /// Runs the op once; an `Err` is the case's outcome (a skip for unsupported ops).
    #[allow(clippy::result_large_err)]
    fn run(&mut self, op: &GraphOp) -> Result<KernelRun, Outcome>;
}

impl Ctx<'_> {
    /// Runs a kernel through `run` (twice when `repeat` is set) and returns its output, or the
    /// outcome that ends the case: a GPU error, or two runs that disagree (`dst_ne` names the
    /// differing elements by their ggml index).
    #[allow(clippy::result_large_err)] // one outcome per case: its size does not matter
    pub fn run(
        &mut self,
        dst_ne: [usize; 4],
        mut run: impl FnMut(&mut Gpu, &mut ShaderTree) -> vkdiff_gpu::Result<KernelRun>,
    ) -> Result<KernelRun, Outcome> {
        let _span = vkdiff_gpu::profile::span("kernel runs (+ repeat)");
        let first = run(self.gpu, self.tree).map_err(Outcome::from_gpu_error)?;
        if !first.validation.is_empty() {
            return Err(Outcome::from_validation(first.validation));
        }
        if self.repeat {
            let _span = vkdiff_gpu::profile::span("race repeat");
            let second = run(self.gpu, self.tree).map_err(Outcome::from_gpu_error)?;
            same_bits(&first, &second, dst_ne)?;
        }
        Ok(first)
    }

    /// True when a graph executor (ggml's host) runs the ops: the case cannot force a
    /// pipeline, split or tile, and judges with the host's own choice.
    pub fn is_graph(&self) -> bool {
        self.graph.is_some()
    }

    /// Runs the op: through the graph executor when there is one (`op`), else through vkdiff's
    /// runner (`run`), twice when `repeat` is set.
    #[allow(clippy::result_large_err)]
    pub fn run_op(
        &mut self,
        dst_ne: [usize; 4],
        op: &GraphOp,
        run: impl FnMut(&mut Gpu, &mut ShaderTree) -> vkdiff_gpu::Result<KernelRun>,
    ) -> Result<KernelRun, Outcome> {
        let Some(graph) = self.graph.as_deref_mut() else {
            return self.run(dst_ne, run);
        };
        let first = graph.run(op)?;
        if self.repeat {
            let second = graph.run(op)?;
            same_bits(&first, &second, dst_ne)?;
        }
        Ok(first)
    }
}

/// Two runs of the same inputs must give the same bits (a difference is a race or an
/// uninitialised read); `dst_ne` names the first differing element by its ggml index.
#[allow(clippy::result_large_err)]
fn same_bits(first: &KernelRun, second: &KernelRun, dst_ne: [usize; 4]) -> Result<(), Outcome> {
    let differ: Vec<usize> = (0..first.values.len())
        .filter(|&i| first.values[i].to_bits() != second.values[i].to_bits())
        .collect();
    if let Some(&i) = differ.first() {
        let [n0, n1, n2, _] = dst_ne;
        let idx = [
            i % n0,
            (i / n0) % n1,
            (i / (n0 * n1)) % n2,
            i / (n0 * n1 * n2),
        ];
        return Err(Outcome::Nondeterministic(format!(
                    "{} of {} elements differ between two runs of the same inputs; first dst{idx:?}: {:e} then {:e}",
                    differ.len(),
                    first.values.len(),
                    first.values[i],
                    second.values[i]
                )));
    }
    Ok(())
}

/// The result of one case.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Outcome {
    /// Every element within its bound.
    Pass {
        /// Headroom figures.
        verdict: Verdict,
        /// GPU time of the kernel.
        gpu_ns: Option<f64>,
    },
    /// At least one element out of bound, unwritten or non-finite, or a write past the end.
    Fail {
        /// Which elements and by how much.
        verdict: Verdict,
    },
    /// Not run, with the named reason (a host precondition or a missing device feature).
    Skip(String),
    /// The shader tree lacks the variant's file.
    Missing(String),
    /// The case could not be run: compile error, Vulkan error, invalid case.
    Error(String),
    /// The device was lost while running the case; it must be recreated.
    DeviceLost(String),
    /// The process evaluating the case died (a driver crash inside the shader, say).
    Crash(String),
    /// The validation layer reported these messages while the case ran.
    Validation(Vec<String>),
    /// Two runs of the same inputs gave different bits: a race or uninitialised read.
    Nondeterministic(String),
}

impl Outcome {
    /// True for findings about the shader: wrong elements, a crash, nondeterminism. These are
    /// shrunk and written as reproducers.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            Outcome::Fail { .. }
                | Outcome::Crash(_)
                | Outcome::Nondeterministic(_)
                | Outcome::Validation(_)
        )
    }

    /// What a failure found, in words (the verdict's elements, or the crash or race message).
    pub fn explain(&self) -> String {
        match self {
            Outcome::Fail { verdict } => verdict.explain(),
            Outcome::Crash(m) => format!("crash: {m}\n"),
            Outcome::Nondeterministic(m) => format!("nondeterministic: {m}\n"),
            Outcome::Validation(m) => format!("validation layer: {}\n", m.join("\n  ")),
            Outcome::Pass { .. } => "passed\n".into(),
            Outcome::Skip(m) => format!("skipped: {m}\n"),
            Outcome::Missing(m) => format!("missing: {m}\n"),
            Outcome::Error(m) => format!("error: {m}\n"),
            Outcome::DeviceLost(m) => format!("{m}\n"),
        }
    }

    /// Turns a GPU error into the outcome it stands for.
    pub fn from_gpu_error(e: GpuError) -> Outcome {
        match e {
            GpuError::MissingShader { .. } => Outcome::Missing(e.to_string()),
            GpuError::Unsupported(reason) => Outcome::Skip(reason),
            GpuError::OutOfMemory { what } => {
                Outcome::Skip(format!("too large for this device: {what}"))
            }
            GpuError::DeviceLost { .. } => Outcome::DeviceLost(e.to_string()),
            GpuError::Validation(messages) => Outcome::from_validation(messages),
            e => Outcome::Error(e.to_string()),
        }
    }

    /// Layer messages: a finding, unless each only says the layer predates something the
    /// variant uses; then the case is unvalidated, a skip that names why (never a pass, never
    /// a failure).
    pub fn from_validation(messages: Vec<String>) -> Outcome {
        let messages = vkdiff_gpu::layer_messages::explain_consequences(messages);
        if vkdiff_gpu::layer_messages::only_unvalidated(&messages) {
            let mut m = messages;
            m.dedup();
            Outcome::Skip(m.join("; "))
        } else {
            Outcome::Validation(messages)
        }
    }

    /// Judges a verdict.
    pub fn from_verdict(verdict: Verdict, gpu_ns: Option<f64>) -> Outcome {
        if verdict.passed() {
            Outcome::Pass { verdict, gpu_ns }
        } else {
            Outcome::Fail { verdict }
        }
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

    use crate::kernels::KERNELS;

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
}
