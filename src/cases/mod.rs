//! The case model: one serialisable case type per kernel (shapes, types, parameters and a data
//! seed), its proptest strategy, and how a case is evaluated against the reference.
//!
//! A case holds no data, only how to make it: inputs are regenerated bit for bit from the seed,
//! so a reproducer file is a few lines of JSON. Strategies generate every input ggml accepts for
//! the op; what upstream's host rejects before dispatch is a named precondition (the case is
//! skipped with that name), never a narrowing of the strategy.

pub mod data;
pub mod flash_attn;
pub mod mul_mat_vec;
pub mod mul_mat_vec_id;
pub mod mul_mm;
pub mod mul_mm_id;
pub mod wkv7;

use std::fmt;

use serde::{Deserialize, Serialize};
use vkdiff_gpu::runners::KernelRun;
use vkdiff_gpu::{Gpu, GpuError, ShaderTree};
use vkdiff_reference::tensor::Tensor;

use crate::compare::Verdict;

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

/// A case of any kernel. The `op` tag names the kernel in reproducer files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Case {
    /// RWKV_WKV7.
    Wkv7(wkv7::Wkv7Case),
    /// MUL_MAT through the matrix-vector kernel.
    MulMatVec(mul_mat_vec::MulMatVecCase),
    /// FLASH_ATTN_EXT through the scalar flash-attention kernel.
    FlashAttn(flash_attn::FlashAttnCase),
    /// Single-token MUL_MAT_ID through the matrix-vector ID kernel.
    MulMatVecId(mul_mat_vec_id::MulMatVecIdCase),
    /// MUL_MAT through the matrix-matrix kernel.
    MulMm(mul_mm::MulMmCase),
    /// MUL_MAT_ID through the matrix-matrix ID kernel.
    MulMmId(mul_mm_id::MulMmIdCase),
}

impl Case {
    /// The kernel's name in the [`KERNELS`](crate::kernels::KERNELS) table.
    pub fn kernel(&self) -> &'static str {
        match self {
            Case::Wkv7(_) => "wkv7",
            Case::MulMatVec(_) => "mul_mat_vec",
            Case::FlashAttn(_) => "flash_attn",
            Case::MulMatVecId(_) => "mul_mat_vec_id",
            Case::MulMm(_) => "mul_mm",
            Case::MulMmId(_) => "mul_mm_id",
        }
    }

    /// The upstream variant name the case runs.
    pub fn variant(&self) -> String {
        match self {
            Case::Wkv7(c) => c.variant(),
            Case::MulMatVec(c) => c.variant(),
            Case::FlashAttn(c) => c.variant(),
            Case::MulMatVecId(c) => c.variant(),
            Case::MulMm(c) => c.variant(),
            Case::MulMmId(c) => c.variant(),
        }
    }

    /// Checks that the case describes inputs ggml could hold and vkdiff can generate; the
    /// error names the field and the rule (a hand-edited or fuzzed reproducer can break them).
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Case::Wkv7(c) => c.validate(),
            Case::MulMatVec(c) => c.validate(),
            Case::FlashAttn(c) => c.validate(),
            Case::MulMatVecId(c) => c.validate(),
            Case::MulMm(c) => c.validate(),
            Case::MulMmId(c) => c.validate(),
        }
    }

    /// Runs the case on the device and judges it.
    pub fn evaluate(&self, ctx: &mut Ctx) -> Outcome {
        let _span = vkdiff_gpu::profile::span("case (everything)");
        if let Err(e) = self.validate() {
            return Outcome::Error(format!("invalid case: {e}"));
        }
        match self {
            Case::Wkv7(c) => c.evaluate(ctx),
            Case::MulMatVec(c) => c.evaluate(ctx),
            Case::FlashAttn(c) => c.evaluate(ctx),
            Case::MulMatVecId(c) => c.evaluate(ctx),
            Case::MulMm(c) => c.evaluate(ctx),
            Case::MulMmId(c) => c.evaluate(ctx),
        }
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Case::Wkv7(c) => write!(f, "{c}"),
            Case::MulMatVec(c) => write!(f, "{c}"),
            Case::FlashAttn(c) => write!(f, "{c}"),
            Case::MulMatVecId(c) => write!(f, "{c}"),
            Case::MulMm(c) => write!(f, "{c}"),
            Case::MulMmId(c) => write!(f, "{c}"),
        }
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
