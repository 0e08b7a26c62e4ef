//! The words findings are described with, decided from the case alone (so the same in every
//! driver): size buckets, K and row facts, the named cause facts, and reachability (whether a
//! real ggml graph can produce a case's configuration and inputs, or vkdiff forces it).

use std::fmt;

use serde::{Deserialize, Serialize};
use vkdiff_gpu::runners::mul_mm::Prec;
use vkdiff_gpu::DeviceCaps;

use crate::model::cases::{Case, CrashKind, Outcome};

/// Whether a case's configuration is one the modelled host produces for a real ggml graph on
/// the device, or one vkdiff forces for coverage.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Reach {
    /// Why the configuration is forced (empty: reachable).
    pub forced: Vec<String>,
}

impl Reach {
    /// Reachable from a real graph.
    pub fn reachable(&self) -> bool {
        self.forced.is_empty()
    }
}

impl fmt::Display for Reach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.forced.is_empty() {
            write!(f, "reachable")
        } else {
            write!(f, "forced-only ({})", self.forced.join("; "))
        }
    }
}

/// The shader core count the pinned host reads (NVIDIA SM builtins, AMD core properties), for
/// devices vkdiff knows; None where the host sees none (lavapipe) or vkdiff does not know it.
/// Without it the host never splits K (mul_mm, interface.md §8.3) or KV (flash attention,
/// interface.md §9.6).
pub fn host_cores(caps: &DeviceCaps) -> Option<u32> {
    let name = caps.name.as_str();
    if name.contains("H100") && name.contains("PCIe") {
        Some(114)
    } else if name.contains("H100") || name.contains("H200") {
        Some(132)
    } else {
        None
    }
}

/// Why a split is forced on a device whose core count the host does not know.
pub const NO_CORES: &str = "the host splits only with a shader core count, which this device does not report to it (or vkdiff does not know)";

/// Reachability of `case` on `caps` under the pinned host's rules (interface.md §8.3, §8.5, §9.1,
/// §9.6), and by its inputs ([`input_reach`]).
pub fn reach_of(case: &Case, caps: &DeviceCaps) -> Reach {
    let mut forced = case.model().forced(caps);
    forced.extend(input_reach(case).forced);
    Reach { forced }
}

/// Reachability by the inputs alone ([`crate::model::cases::CaseModel::unreal_inputs`]): what
/// backend mode uses, where ggml's own host chose the configuration but the case's inputs may
/// still be ones no real graph produces (a token repeating an expert).
pub fn input_reach(case: &Case) -> Reach {
    Reach {
        forced: case.model().unreal_inputs(),
    }
}

/// Why repeated experts within a token are forced.
pub const REPEATED: &str =
    "several slots of one token routed to the same expert (a top-k router picks distinct experts)";

/// The reach reasons of a MUL_MAT_ID case's inputs
/// ([`crate::model::cases::CaseModel::unreal_inputs`]): forced when a token routes several slots to
/// one expert.
pub fn repeated_forced(ids: &[i32], n_used: usize) -> Vec<String> {
    if repeated_expert(ids, n_used) {
        vec![REPEATED.into()]
    } else {
        Vec::new()
    }
}

/// Whether some token routes several of its `n_used` slots to the same expert.
pub fn repeated_expert(ids: &[i32], n_used: usize) -> bool {
    ids.chunks(n_used.max(1)).any(|t| {
        let mut s = t.to_vec();
        s.sort_unstable();
        s.windows(2).any(|w| w[0] == w[1])
    })
}

/// The path name of a matmul mode, as signatures and known-findings entries spell it.
pub fn mm_path(mode: vkdiff_gpu::runners::mul_mm::Mode) -> String {
    use vkdiff_gpu::runners::mul_mm::Mode;
    match mode {
        Mode::Fp32 | Mode::Fp16 => "scalar",
        Mode::Cm1 => "cm1",
        Mode::Cm2 => "cm2",
    }
    .to_string()
}

/// A size as a bucket around the tile edges.
pub fn bucket(x: usize) -> &'static str {
    match x {
        0 | 1 => "1",
        2..=8 => "2–8",
        9..=32 => "9–32",
        33..=64 => "33–64",
        65..=128 => "65–128",
        _ => "> 128",
    }
}

/// Rows M as a bucket, and whether the last 32-row tile is partial.
pub fn rows(m: usize) -> String {
    if m % 32 == 0 {
        format!("M {}", bucket(m))
    } else {
        format!("M {} (a partial row tile)", bucket(m))
    }
}

/// K against the sizes where ggml's hosts change a mat-vec's path: the large workgroup from
/// 1024 (NVIDIA, Intel), integer dot from 2048 (AMD, Intel) or above 4096 (NVIDIA).
pub fn k_size(k: usize) -> &'static str {
    match k {
        0..=1023 => "K < 1024",
        1024..=2047 => "K 1024–2047",
        2048..=4096 => "K 2048–4096",
        _ => "K > 4096",
    }
}

/// The precision request as a fact: ggml's hosts take the f32-accumulator pipeline for
/// GGML_PREC_F32 and the `f16acc` one for the default where they have both.
pub fn prec_fact(prec: Prec) -> String {
    match prec {
        Prec::Default => "GGML_PREC_DEFAULT",
        Prec::F32 => "GGML_PREC_F32",
    }
    .into()
}

/// K in type-independent terms: one BK step or block, or several.
pub fn k_fact(k: usize, block: usize) -> String {
    let unit = block.max(32);
    if k <= unit {
        "K one step".into()
    } else if k % unit == 0 {
        "K several whole steps".into()
    } else {
        "K several steps, the last partial".into()
    }
}

/// The trigger of a flash-attention case with rows the mask empties.
pub const FULLY_MASKED: &str = "fully masked rows";
/// The cause fact of a split whose parts are not whole 32-key steps.
pub const RAGGED: &str = "split, K/split not a multiple of 32";
/// The shape and cause fact of a token that repeats an expert.
pub const REPEATED_FACT: &str = "repeated experts in a token";

/// A matrix product's B whose matrices (MUL_MAT_ID: tokens) are not packed back to back: the
/// hosts read it in place but skip integer dot for it (docs/upstream-findings.md, F32).
pub const B_GAPS_FACT: &str = "gaps between B's matrices";

/// The outcome-kind word of a fused graph that fails while its unfused twin passes (its own
/// finding: the fault is in the fused kernel, not in the ops).
pub const FUSED_ONLY: &str = "fused only";

/// The kind of a crash that needed earlier cases in its worker ([`CrashKind::AfterEarlier`]):
/// kept apart from a case's own crash, since the case alone does not crash.
pub const AFTER_EARLIER_KIND: &str = "crash after earlier cases";

/// The outcome kind that names a failure, most telling first.
pub fn primary_kind(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Crash { kind, .. } => match kind {
            CrashKind::TimedOut => "hang".into(),
            CrashKind::AfterEarlier => AFTER_EARLIER_KIND.into(),
            CrashKind::Died => "crash".into(),
        },
        Outcome::Nondeterministic(_) => "nondeterministic".into(),
        Outcome::Validation(m) => format!("validation {}", vuid(m)),
        Outcome::Fail { verdict } if verdict.fused_only => {
            let mut plain = verdict.clone();
            plain.fused_only = false;
            format!(
                "{}, {FUSED_ONLY}",
                primary_kind(&Outcome::Fail { verdict: plain })
            )
        }
        Outcome::Fail { verdict } => {
            let s = &verdict.spread;
            if verdict.overrun {
                "write past the end of dst".into()
            } else if s.unwritten > 0 {
                "never written".into()
            } else if s.nan > 0 {
                "NaN".into()
            } else if s.inf > 0 {
                "±inf".into()
            } else if s.regions.iter().any(|r| r.starts_with("fully masked")) {
                "finite where ggml gives NaN (fully masked row)".into()
            } else if s.finite_for_special > 0 && s.finite_for_special == s.wrong {
                "finite where ggml gives NaN or ±inf".into()
            } else {
                "wrong value".into()
            }
        }
        _ => "not a failure".into(),
    }
}

/// The validation message's VUID (or its first words).
fn vuid(messages: &[String]) -> String {
    let first = messages.first().map(String::as_str).unwrap_or("");
    first
        .split(|c: char| c.is_whitespace() || c == ']' || c == '"')
        .find(|w| w.starts_with("VUID-") || w.starts_with("SYNC-"))
        .map(str::to_string)
        .unwrap_or_else(|| first.chars().take(60).collect())
}
