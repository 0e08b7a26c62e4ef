//! The one boundary between a case and whoever executes its op.
//!
//! A case describes its op as a [`GraphOp`] (ggml's vocabulary: tensors, shapes, strides and
//! the op's parameters) and hands it to a [`Driver`]. Two drivers exist, both in
//! the execution layer: vkdiff's own runners over a shader tree (they model the pinned July 2025
//! host, so a case can force a path, split or precision) and ggml's own Vulkan backend (a real
//! host of any revision, which makes those choices itself). The case model never asks which one
//! runs it; it asks what the host may choose ([`Latitude`]) and judges every candidate the host
//! may take.

use vkdiff_gpu::runners::KernelRun;
use vkdiff_gpu::{DeviceCaps, Gpu, ShaderTree};
use vkdiff_reference::tensor::Tensor;

use crate::model::outcome::Outcome;

/// vkdiff's own runner for one op: what the own driver calls with its device and shader tree.
pub type OwnRun<'r> = dyn FnMut(&mut Gpu, &mut ShaderTree) -> vkdiff_gpu::Result<KernelRun> + 'r;

/// Something that executes the op of a case.
pub trait Driver {
    /// The device's capabilities as this driver's path configuration leaves them (the error
    /// models and host plans read them).
    fn caps(&self) -> &DeviceCaps;

    /// What the executing host may choose beyond vkdiff's model of the pinned host.
    fn latitude(&self) -> Latitude;

    /// Runs the op once and returns dst. `own` is vkdiff's runner for the op, which carries the
    /// case's forced choices: the own driver calls it; a driver that builds the op from `op`
    /// (ggml) does not. An `Err` is the case's outcome (a skip for an op the host refuses).
    #[allow(clippy::result_large_err)] // one outcome per case: its size does not matter
    fn run_once(&mut self, op: &GraphOp, own: &mut OwnRun<'_>) -> Result<KernelRun, Outcome>;
    /// Why the driver does not run fused graphs ([`GraphOp::Fused`]), or None where it does.
    /// A case with one checks this first and skips with the reason, before its reference.
    fn fused_skip(&self) -> Option<String> {
        None
    }
}

/// What the host that runs a case may choose beyond the pinned host that vkdiff models. The
/// bounds cover each choice the host may make: a wider latitude means more candidates, never a
/// looser bound for one candidate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Latitude {
    /// The host picks its own K/KV split: the case's forced split is not obeyed, and the bounds
    /// take every split the host may choose.
    pub splits: bool,
    /// The host is of a later revision than the pin and may run f16 arithmetic or paths the
    /// pinned host did not (f16 scalar flash attention, f16 accumulators at GGML_PREC_DEFAULT,
    /// wider query folding on cm1).
    pub later_host: bool,
}

impl Latitude {
    /// vkdiff's own runners: every choice is the case's (or the pinned host model's).
    pub const PINNED: Latitude = Latitude {
        splits: false,
        later_host: false,
    };
    /// A real ggml host of any revision.
    pub const REAL_HOST: Latitude = Latitude {
        splits: true,
        later_host: true,
    };
}

/// What a case evaluates on: a driver, and whether to run each op twice.
pub struct Ctx<'a> {
    /// Who executes the op.
    pub driver: &'a mut dyn Driver,
    /// Run each kernel twice and require bitwise-identical results (catches races).
    pub repeat: bool,
}

/// One ggml op as a case describes it, independent of who executes it: the tensors (types,
/// shapes, strides: a strided tensor's data holds its backing bytes) and the op's parameters.
/// A kernel whose op is not listed here runs through vkdiff's own runner only (the ggml driver
/// refuses it as unsupported) until the op is added.
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
        /// F32 sinks, one logit per query head (`ggml_flash_attn_ext_add_sinks`; ggml builds
        /// without it refuse the op).
        sinks: Option<&'a Tensor>,
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
    /// A head op (MUL_MAT or MUL_MAT_ID) and the element-wise nodes that follow it in one graph,
    /// in the order ggml's graphs build them (each node consumes the previous one's result and
    /// nothing else uses it), which is the pattern ggml's Vulkan host fuses into one dispatch
    /// (`ggml_vk_can_fuse`: MUL_MAT + ADD (+ ADD), MUL_MAT_ID + MUL, MUL_MAT_ID + ADD_ID
    /// (+ MUL)) where fusion is on and the shapes allow it.
    Fused {
        /// The head op.
        head: &'a GraphOp<'a>,
        /// The nodes after it, in graph order.
        tail: &'a [Tail<'a>],
        /// The unfused twin: each node in a graph of its own (the previous node's result read
        /// back and uploaded as the next one's input), so no fusion can apply.
        unfused: bool,
    },
}

/// One element-wise node after a fused graph's head, on the previous node's f32 result.
#[derive(Debug, Clone, Copy)]
pub enum Tail<'a> {
    /// `ggml_add(prev, t)`: a bias (broadcast over columns) or a residual of dst's shape.
    Add(&'a Tensor),
    /// `ggml_mul(prev, t)`: expert weights of shape [1, n_used, n_tokens].
    Mul(&'a Tensor),
    /// `ggml_add_id(prev, t, ids)`: per-expert biases [M, n_expert], selected by the head
    /// MUL_MAT_ID's own ids tensor.
    AddId(&'a Tensor),
}

impl<'a> Tail<'a> {
    /// ggml's name for the node's op.
    pub fn name(&self) -> &'static str {
        match self {
            Tail::Add(_) => "ADD",
            Tail::Mul(_) => "MUL",
            Tail::AddId(_) => "ADD_ID",
        }
    }

    /// The node's second source.
    pub fn tensor(&self) -> &'a Tensor {
        match self {
            Tail::Add(t) | Tail::Mul(t) | Tail::AddId(t) => t,
        }
    }
}

impl GraphOp<'_> {
    /// ggml's name for the op.
    pub fn name(&self) -> &'static str {
        match self {
            GraphOp::MulMat { .. } => "MUL_MAT",
            GraphOp::MulMatId { .. } => "MUL_MAT_ID",
            GraphOp::FlashAttn { .. } => "FLASH_ATTN_EXT",
            GraphOp::Wkv7(_) => "RWKV_WKV7",
            // ggml's names for the fused node sequences (its perf logger prints them).
            GraphOp::Fused { head, tail, .. } => {
                let tail: Vec<&str> = tail.iter().map(Tail::name).collect();
                match (head.name(), &tail[..]) {
                    ("MUL_MAT", ["ADD"]) => "MUL_MAT_ADD",
                    ("MUL_MAT", ["ADD", "ADD"]) => "MUL_MAT_ADD_ADD",
                    ("MUL_MAT_ID", ["MUL"]) => "MUL_MAT_ID_MUL",
                    ("MUL_MAT_ID", ["ADD_ID"]) => "MUL_MAT_ID_ADD_ID",
                    ("MUL_MAT_ID", ["ADD_ID", "MUL"]) => "MUL_MAT_ID_ADD_ID_MUL",
                    _ => "FUSED",
                }
            }
        }
    }

    /// The unfused twin of a fused graph (None for any other op).
    pub fn unfused(&self) -> Option<GraphOp<'_>> {
        match self {
            GraphOp::Fused { head, tail, .. } => Some(GraphOp::Fused {
                head,
                tail,
                unfused: true,
            }),
            _ => None,
        }
    }

    /// True for a fused graph's unfused twin.
    pub fn is_unfused(&self) -> bool {
        matches!(self, GraphOp::Fused { unfused: true, .. })
    }
}

impl Ctx<'_> {
    /// The device's capabilities as the driver presents them.
    pub fn caps(&self) -> &DeviceCaps {
        self.driver.caps()
    }

    /// What the host may choose beyond the pinned model ([`Latitude`]).
    pub fn latitude(&self) -> Latitude {
        self.driver.latitude()
    }

    /// Runs the op through the driver (twice when `repeat` is set) and returns its output, or
    /// the outcome that ends the case: a GPU error, validation messages, or two runs that
    /// disagree (`dst_ne` names the differing elements by their ggml index). `own` is vkdiff's
    /// runner for the op ([`Driver::run_once`]).
    #[allow(clippy::result_large_err)]
    pub fn run_op(
        &mut self,
        dst_ne: [usize; 4],
        op: &GraphOp,
        mut own: impl FnMut(&mut Gpu, &mut ShaderTree) -> vkdiff_gpu::Result<KernelRun>,
    ) -> Result<KernelRun, Outcome> {
        let _span = vkdiff_gpu::profile::span("kernel runs (+ repeat)");
        let first = self.driver.run_once(op, &mut own)?;
        if self.repeat {
            let _span = vkdiff_gpu::profile::span("race repeat");
            let second = self.driver.run_once(op, &mut own)?;
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
