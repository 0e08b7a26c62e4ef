//! The summary table of a mutation run.

use std::fmt::Write as _;

use super::*;

/// The summary: one row per kernel, then every survivor with its one-line diff.
pub fn table(report: &MutationReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<16} {:>8} {:>8} {:>7} {:>8} {:>10} {:>9} {:>9} {:>7}",
        "kernel",
        "variants",
        "mutants",
        "killed",
        "survived",
        "equivalent",
        "stillborn",
        "unchanged",
        "score"
    );
    for k in &report.kernels {
        let score = k
            .score
            .map_or("-".to_string(), |s| format!("{:.1}%", 100.0 * s));
        let _ = writeln!(
            s,
            "{:<16} {:>8} {:>8} {:>7} {:>8} {:>10} {:>9} {:>9} {:>7}",
            k.kernel,
            k.variants,
            k.mutants,
            k.killed,
            k.survived,
            k.equivalent,
            k.stillborn,
            k.unchanged,
            score
        );
    }
    let _ = writeln!(
        s,
        "(score = killed / (killed + survived); equivalent: survived and listed in the \
         equivalence file; stillborn: does not compile; unchanged: same SPIR-V as the original \
         for every variant)"
    );
    let _ = writeln!(
        s,
        "{} of {} generated mutants judged ({} cases per variant, seed {}), {:.0}s",
        report.judged, report.generated, report.cases, report.seed, report.seconds
    );
    for e in &report.excluded {
        let _ = writeln!(s, "left out {}: {}", e.variant, e.reason);
    }
    let surviving = |m: &MutantResult| -> Vec<String> {
        m.verdicts
            .iter()
            .filter(|(_, v)| matches!(v, Verdict::Survived { .. }))
            .map(|(k, _)| k.clone())
            .collect()
    };
    let line = |m: &MutantResult, kernels: &[String]| {
        format!(
            "{}:{}:{}: `{}` → `{}` [{}; {}]",
            m.mutant.file,
            m.mutant.line,
            m.mutant.column,
            m.before,
            m.after,
            m.mutant.operator.name(),
            kernels.join(", ")
        )
    };
    let mut survivors = String::new();
    let mut equivalents = String::new();
    let mut wrong = String::new();
    for m in &report.mutants {
        let kernels = surviving(m);
        match &m.equivalent {
            None if !kernels.is_empty() => {
                let _ = writeln!(survivors, "  {}", line(m, &kernels));
            }
            Some(reason) if !kernels.is_empty() => {
                let _ = writeln!(equivalents, "  {}\n      {reason}", line(m, &kernels));
            }
            Some(_) if kernels.is_empty() => {
                let killers: Vec<String> = m
                    .verdicts
                    .iter()
                    .filter(|(_, v)| matches!(v, Verdict::Killed { .. }))
                    .map(|(k, _)| k.clone())
                    .collect();
                if !killers.is_empty() {
                    let _ = writeln!(wrong, "  {}", line(m, &killers));
                }
            }
            _ => {}
        }
    }
    if !survivors.is_empty() {
        let _ = write!(s, "survivors:\n{survivors}");
    }
    if !equivalents.is_empty() {
        let _ = write!(s, "equivalent (listed, out of the score):\n{equivalents}");
    }
    if !wrong.is_empty() {
        let _ = write!(
            s,
            "KILLED although listed equivalent (the entry is wrong):\n{wrong}"
        );
    }
    for e in &report.stale_equivalences {
        let _ = writeln!(s, "stale equivalence entry (matches no mutant): {e}");
    }
    s
}
