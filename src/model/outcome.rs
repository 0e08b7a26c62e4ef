//! The result of one case: a verdict, a named skip, or what kept it from running (and how a
//! worker process that evaluated it ended).

use serde::{Deserialize, Serialize};
use vkdiff_gpu::GpuError;

use crate::model::compare::Verdict;

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
    /// The process evaluating the case died (a driver crash inside the shader, say) or was
    /// killed past the time limit.
    Crash {
        /// Which way it ended.
        kind: CrashKind,
        /// What the worker saw: the exit status and its last stderr lines.
        message: String,
    },
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
                | Outcome::Crash { .. }
                | Outcome::Nondeterministic(_)
                | Outcome::Validation(_)
        )
    }

    /// What a failure found, in words (the verdict's elements, or the crash or race message).
    pub fn explain(&self) -> String {
        match self {
            Outcome::Fail { verdict } => verdict.explain(),
            Outcome::Crash { message, .. } => format!("crash: {message}\n"),
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

/// How a worker process ended inside a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CrashKind {
    /// It died inside the case (a driver crash, an abort in ggml), alone in a fresh worker too
    /// when it had run other cases first.
    Died,
    /// It died inside the case after evaluating others, and the case alone in a fresh worker
    /// did not crash: a state an earlier case left behind, not the case's own crash.
    AfterEarlier,
    /// The case ran past the time limit and the worker was killed (a kernel that never ends?).
    TimedOut,
}

impl Outcome {
    /// A crash of `kind` with `message`.
    pub fn crash(kind: CrashKind, message: impl Into<String>) -> Outcome {
        Outcome::Crash {
            kind,
            message: message.into(),
        }
    }
}
