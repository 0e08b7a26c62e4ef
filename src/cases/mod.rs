//! The case model: one serialisable case type per kernel (shapes, types, parameters and a data
//! seed), its proptest strategy, and how a case is evaluated against the reference.
//!
//! A case holds no data, only how to make it: inputs are regenerated bit for bit from the seed,
//! so a reproducer file is a few lines of JSON. Strategies generate every input ggml accepts for
//! the op; what upstream's host rejects before dispatch is a named precondition (the case is
//! skipped with that name), never a narrowing of the strategy.

pub mod data;
pub mod mul_mat_vec;
pub mod wkv7;

use std::fmt;

use serde::{Deserialize, Serialize};
use vkdiff_gpu::{Gpu, GpuError, ShaderTree};

use crate::compare::Verdict;

/// A case of any kernel. The `op` tag names the kernel in reproducer files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Case {
    /// RWKV_WKV7.
    Wkv7(wkv7::Wkv7Case),
    /// MUL_MAT through the matrix-vector kernel.
    MulMatVec(mul_mat_vec::MulMatVecCase),
}

impl Case {
    /// The kernel's name in the [`KERNELS`](crate::kernels::KERNELS) table.
    pub fn kernel(&self) -> &'static str {
        match self {
            Case::Wkv7(_) => "wkv7",
            Case::MulMatVec(_) => "mul_mat_vec",
        }
    }

    /// The upstream variant name the case runs.
    pub fn variant(&self) -> String {
        match self {
            Case::Wkv7(c) => c.variant(),
            Case::MulMatVec(c) => c.variant(),
        }
    }

    /// Runs the case on the device and judges it.
    pub fn evaluate(&self, ctx: &mut Ctx) -> Outcome {
        match self {
            Case::Wkv7(c) => c.evaluate(ctx),
            Case::MulMatVec(c) => c.evaluate(ctx),
        }
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Case::Wkv7(c) => write!(f, "{c}"),
            Case::MulMatVec(c) => write!(f, "{c}"),
        }
    }
}

/// What a case evaluates on: a device and a shader tree.
pub struct Ctx<'a> {
    /// The device.
    pub gpu: &'a mut Gpu,
    /// Where the shaders come from.
    pub tree: &'a mut ShaderTree,
}

/// The result of one case.
#[derive(Debug, Clone)]
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
    /// The case could not be run: compile error, device lost, out of memory, Vulkan error.
    Error(String),
}

impl Outcome {
    /// True for [`Outcome::Fail`].
    pub fn is_failure(&self) -> bool {
        matches!(self, Outcome::Fail { .. })
    }

    /// Turns a GPU error into the outcome it stands for.
    pub fn from_gpu_error(e: GpuError) -> Outcome {
        match e {
            GpuError::MissingShader { .. } => Outcome::Missing(e.to_string()),
            GpuError::Unsupported(reason) => Outcome::Skip(reason),
            GpuError::OutOfMemory { what } => {
                Outcome::Skip(format!("too large for this device: {what}"))
            }
            e => Outcome::Error(e.to_string()),
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
