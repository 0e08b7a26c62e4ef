//! Campaigns: for each selected variant, generate cases from its strategy, evaluate them, group
//! the failures by signature ([`crate::findings`]), shrink one representative of every group to
//! a minimal case with proptest's value trees (a shrink step must keep the group), write each
//! as a reproducer, and summarise (cases, passes, failures, errors, skips with reasons, worst
//! error/bound, time).

pub mod findings;
pub mod repro;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use proptest::strategy::{BoxedStrategy, Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use self::findings::{Reach, Signature};
use self::repro::Reproducer;
use crate::cases::Kernel;
use crate::cases::{Case, Outcome};
use crate::kernels::Variant;
use crate::worker::Evaluator;

/// What to run and where results go.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Cases per variant.
    pub cases: u32,
    /// Master seed: each variant derives its own stream from it and its name.
    pub seed: u64,
    /// Most evaluations spent shrinking one failure.
    pub shrink_budget: u32,
    /// Where reproducers go (None: not written).
    pub repro_dir: Option<PathBuf>,
    /// Stop generating cases after this long (the case count is then an upper bound).
    pub time_budget: Option<Duration>,
    /// Most failure groups shrunk per variant (further groups are counted, not shrunk).
    pub max_findings: u32,
}

/// One evaluated campaign case, as the JSON report records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseRecord {
    /// Kernel name.
    pub kernel: String,
    /// Variant name.
    pub variant: String,
    /// Device configuration (empty when not swept).
    pub config: String,
    /// The case, described.
    pub case: String,
    /// "pass", "fail", "skip", "error", "device_lost", "crash", "nondeterministic",
    /// "validation" or "missing".
    pub outcome: String,
    /// Worst error/bound ratio of a passing case.
    pub ratio: Option<f64>,
    /// GPU time of the kernel in ns.
    pub gpu_ns: Option<f64>,
    /// The skip reason or error message.
    pub detail: Option<String>,
    /// Whether a real graph on the device produces this configuration.
    #[serde(default)]
    pub reach: Reach,
    /// A passing case judged against several candidate models: the tightest it fits
    /// ([`crate::compare::Verdict::fits`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fits: Option<String>,
    /// Backend mode: the SPIR-V modules (ggml's names) of the compute pipelines the case bound,
    /// as vkdiff's Vulkan layer recorded them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pipelines: Vec<String>,
    /// Device properties vkdiff's layer overrode while the case ran (a result only such a
    /// device reaches).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overridden: Vec<String>,
}

impl CaseRecord {
    fn new(
        kernel: &str,
        variant: &str,
        case: &Case,
        outcome: &Outcome,
        reach: Reach,
        dispatched: Option<&crate::exec::ggml::Dispatched>,
    ) -> Self {
        let (kind, ratio, gpu_ns, detail) = match outcome {
            Outcome::Pass { verdict, gpu_ns } => (
                "pass",
                Some(verdict.worst_ratio),
                *gpu_ns,
                (!verdict.pipeline.is_empty()).then(|| format!("ran {}", verdict.pipeline)),
            ),
            Outcome::Fail { verdict } => ("fail", None, None, Some(verdict.explain())),
            Outcome::Skip(m) => ("skip", None, None, Some(m.clone())),
            Outcome::Missing(m) => ("missing", None, None, Some(m.clone())),
            Outcome::Error(m) => ("error", None, None, Some(m.clone())),
            Outcome::DeviceLost(m) => ("device_lost", None, None, Some(m.clone())),
            Outcome::Crash { message, .. } => ("crash", None, None, Some(message.clone())),
            Outcome::Nondeterministic(m) => ("nondeterministic", None, None, Some(m.clone())),
            Outcome::Validation(m) => ("validation", None, None, Some(m.join("\n"))),
        };
        CaseRecord {
            kernel: kernel.into(),
            variant: variant.into(),
            config: String::new(),
            case: case.to_string(),
            outcome: kind.into(),
            ratio,
            gpu_ns,
            detail,
            reach,
            fits: match outcome {
                Outcome::Pass { verdict, .. } if !verdict.fits.is_empty() => {
                    Some(verdict.fits.clone())
                }
                _ => None,
            },
            pipelines: dispatched.map(|d| d.pipelines.clone()).unwrap_or_default(),
            overridden: dispatched.map(|d| d.overridden.clone()).unwrap_or_default(),
        }
    }
}

/// How a finding's explanation names the modules its case dispatched.
const PIPELINES_DISPATCHED: &str = "pipelines dispatched:";
/// How a finding's explanation names the properties vkdiff's layer overrode for it.
const OVERRIDDEN: &str = "ran with device properties overridden by vkdiff's layer:";

/// How a case's reach names a device made to report integer dot (see `device_reach`).
pub const OVERRIDDEN_DEVICE: &str =
    "integer-dot modules ran because vkdiff's layer reported a property the driver does not";

/// `reach` less reachable where the case took integer-dot modules only because vkdiff's layer
/// overrode a device property (`--config intdot` on lavapipe): no real device has that
/// combination, so the finding is forced-only there, as one from forced inputs is, and the
/// same failure on a device that reports the property is a finding of its own.
fn device_reach(mut reach: Reach, dispatched: Option<&crate::exec::ggml::Dispatched>) -> Reach {
    if let Some(d) = dispatched {
        let int_dot = d
            .pipelines
            .iter()
            .any(|p| crate::exec::ggml::modules::needs_integer_dot(p));
        if !d.overridden.is_empty() && int_dot {
            reach
                .forced
                .push(format!("{OVERRIDDEN_DEVICE} ({})", d.overridden.join(", ")));
        }
    }
    reach
}

/// A finding's explanation with the pipelines its case dispatched (backend mode), so it says
/// whether the pipeline one changed ran.
fn explained(outcome: &Outcome, dispatched: Option<&crate::exec::ggml::Dispatched>) -> String {
    let mut s = outcome.explain();
    if let Some(d) = dispatched {
        if !s.is_empty() && !s.ends_with('\n') {
            s.push('\n');
        }
        let names = if d.pipelines.is_empty() {
            "none recorded".to_string()
        } else {
            d.pipelines.join(", ")
        };
        s.push_str(&format!("{PIPELINES_DISPATCHED} {names}\n"));
        if !d.overridden.is_empty() {
            s.push_str(&format!("{OVERRIDDEN} {}\n", d.overridden.join(", ")));
        }
    }
    s
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            cases: 200,
            seed: 0x5EED,
            shrink_budget: 400,
            repro_dir: Some(PathBuf::from("vkdiff-out/repro")),
            time_budget: None,
            max_findings: 8,
        }
    }
}

/// One failure group of a variant, its representative shrunk.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Finding {
    /// The shrunk case's signature.
    pub signature: Signature,
    /// The group's key (see [`findings::group_key`]), which every shrink step kept.
    pub group: String,
    /// Failing cases of the variant in the group.
    pub cases: u32,
    /// The minimal failing case found.
    pub case: Case,
    /// The case as first generated.
    pub original: Case,
    /// Evaluations spent shrinking.
    pub shrink_steps: u32,
    /// Shrinking stopped at the variant's time share (`--time`) rather than at a minimum: the
    /// case is the smallest failing one found by then.
    #[serde(default)]
    pub shrink_cut: bool,
    /// Which elements failed and by how much.
    pub explanation: String,
    /// The reproducer file, when written.
    pub repro: Option<PathBuf>,
}

impl Finding {
    /// How the report names the case: "minimal", or the cut shrink's smallest-so-far.
    pub fn minimal_label(&self) -> &'static str {
        if self.shrink_cut {
            "smallest found (shrinking cut at the time share)"
        } else {
            "minimal"
        }
    }
}

/// The summary of one variant.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct VariantReport {
    /// Kernel name.
    pub kernel: String,
    /// Variant name.
    pub variant: String,
    /// Device name.
    pub device: String,
    /// The Vulkan driver and its version (`llvmpipe Mesa 22.3.6 (LLVM 15.0.6)`): what a known
    /// entry about a driver's own bug is scoped by (`@driver:`). Empty in older reports.
    #[serde(default)]
    pub driver: String,
    /// The device configuration, when a campaign sweeps several (e.g. LP_NATIVE_VECTOR_WIDTH=128).
    pub config: String,
    /// Cases generated.
    pub cases: u32,
    /// Cases that passed.
    pub passed: u32,
    /// Cases that failed.
    pub failed: u32,
    /// Cases that could not run (compile error, device lost, ...), with the first message.
    pub errors: u32,
    /// First error message.
    pub first_error: Option<String>,
    /// Skipped cases by reason.
    pub skipped: BTreeMap<String, u32>,
    /// Worst error/bound ratio among passing cases.
    pub worst_ratio: f64,
    /// The case with the worst ratio.
    pub worst_case: Option<Case>,
    /// Wall time in seconds.
    pub seconds: f64,
    /// The variant's shader is not in the tree.
    pub missing: Option<String>,
    /// One shrunk finding per failure group, in order of first appearance.
    pub findings: Vec<Finding>,
    /// Failing cases of groups beyond `Settings::max_findings`, not shrunk, by group key.
    pub unshrunk: BTreeMap<String, u32>,
    /// The kernel paths (`mul_mm_id/scalar`, …) its cases ran on, passing or failing: what a
    /// known finding needs to be judged stale.
    #[serde(default)]
    pub paths: Vec<String>,
}

impl VariantReport {
    /// True when nothing failed or errored.
    pub fn ok(&self) -> bool {
        self.failed == 0 && !self.errored()
    }

    /// True when something could not run: a compile or Vulkan error, a lost device, a missing
    /// shader (apart from wrong results).
    pub fn errored(&self) -> bool {
        self.errors > 0 || self.missing.is_some()
    }
}

/// A per-variant RNG derived from the master seed and the variant name.
fn runner_for(seed: u64, variant: &str) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    for (i, b) in variant.bytes().enumerate() {
        bytes[8 + i % 24] ^= b.rotate_left(i as u32 % 8);
    }
    TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

/// Runs one variant's campaign through `eval`.
pub fn run_variant(
    eval: &mut dyn Evaluator,
    kernel: &Kernel,
    variant: &Variant,
    settings: &Settings,
) -> VariantReport {
    run_variant_observed(eval, kernel, variant, settings, &mut |_| {})
}

/// [`run_variant`], calling `observe` with every case as soon as it is judged (for streaming
/// reports and progress).
pub fn run_variant_observed(
    eval: &mut dyn Evaluator,
    kernel: &Kernel,
    variant: &Variant,
    settings: &Settings,
    observe: &mut dyn FnMut(&CaseRecord),
) -> VariantReport {
    let start = Instant::now();
    let mut report = VariantReport {
        kernel: kernel.name.into(),
        variant: variant.name.clone(),
        device: eval.caps().name.clone(),
        driver: eval.caps().driver.clone(),
        ..Default::default()
    };
    if let Some(reason) = eval.variant_skip(variant) {
        report.skipped.insert(reason, settings.cases);
        report.seconds = start.elapsed().as_secs_f64();
        return report;
    }
    if let Some(reason) = (kernel.requires)(variant, eval.caps()) {
        report
            .skipped
            .insert(format!("device: {reason}"), settings.cases);
        report.seconds = start.elapsed().as_secs_f64();
        return report;
    }
    let strategy = (kernel.strategy)(variant);
    let mut runner = runner_for(settings.seed, &variant.name);
    let (mut seen, mut drawn) = (BTreeSet::new(), 0);
    for _ in 0..settings.cases {
        if settings.time_budget.is_some_and(|b| start.elapsed() >= b) {
            break;
        }
        let (tree_value, case) = match draw(&strategy, &mut runner, &mut seen, &mut drawn) {
            Ok(drawn) => drawn,
            Err(e) => {
                report.errors += 1;
                report
                    .first_error
                    .get_or_insert(format!("case generation: {e}"));
                continue;
            }
        };
        report.cases += 1;
        let outcome = eval.evaluate(&case);
        let dispatched = eval.take_dispatched();
        let reach = device_reach(eval.reach(&case), dispatched.as_ref());
        if matches!(outcome, Outcome::Pass { .. }) || outcome.is_failure() {
            let path = findings::path_of(&case);
            if !report.paths.contains(&path) {
                report.paths.push(path);
            }
        }
        observe(&CaseRecord::new(
            kernel.name,
            &variant.name,
            &case,
            &outcome,
            reach.clone(),
            dispatched.as_ref(),
        ));
        match outcome {
            Outcome::Pass { verdict, .. } => {
                report.passed += 1;
                if verdict.worst_ratio >= report.worst_ratio {
                    report.worst_ratio = verdict.worst_ratio;
                    report.worst_case = Some(case);
                }
            }
            outcome if outcome.is_failure() => {
                report.failed += 1;
                let key = findings::group_key(&case, &outcome, &reach);
                if let Some(f) = report.findings.iter_mut().find(|f| f.group == key) {
                    f.cases += 1;
                } else if report.findings.len() < settings.max_findings as usize {
                    // Shrinking spends the variant's own time share: with `--time`, later
                    // variants and configurations still get theirs.
                    let deadline = settings.time_budget.map(|b| start + b);
                    report.findings.push(shrink(
                        eval, tree_value, case, outcome, reach, dispatched, key, settings, deadline,
                    ));
                } else {
                    *report.unshrunk.entry(key).or_default() += 1;
                }
            }
            Outcome::Skip(reason) => *report.skipped.entry(reason).or_default() += 1,
            Outcome::Missing(what) => {
                // Nothing else of this variant can run: say so once and stop.
                report.missing = Some(what);
                report.cases -= 1;
                break;
            }
            Outcome::Error(msg) | Outcome::DeviceLost(msg) => {
                report.errors += 1;
                report.first_error.get_or_insert(msg);
            }
            Outcome::Fail { .. }
            | Outcome::Crash { .. }
            | Outcome::Nondeterministic(_)
            | Outcome::Validation(_) => unreachable!("failures handled above"),
        }
    }
    for f in report.findings.iter_mut() {
        let Some(dir) = &settings.repro_dir else {
            break;
        };
        let r = Reproducer {
            vkdiff_reproducer: crate::repro::FORMAT,
            kernel: kernel.name.into(),
            variant: variant.name.clone(),
            device: report.device.clone(),
            shaders: eval.shaders(),
            ggml: eval.ggml(),
            finding: format!("{}\n{}", f.signature, f.explanation),
            shrunk_from: format!(
                "{} ({} shrink steps{})",
                f.original,
                f.shrink_steps,
                if f.shrink_cut {
                    ", stopped at the time share: not minimal"
                } else {
                    ""
                }
            ),
            case: f.case.clone(),
        };
        match r.write(dir) {
            Ok(p) => f.repro = Some(p),
            Err(e) => f.explanation.push_str(&format!(
                "(reproducer not written to {}: {e})\n",
                dir.display()
            )),
        }
    }
    report.seconds = start.elapsed().as_secs_f64();
    report
}

/// Candidates drawn for each case after a variant's first.
const CANDIDATES: usize = 8;
/// The cases of a variant drawn for unseen facts; later ones are the strategy's own (a long
/// run keeps the strategy's distribution of shapes and costs).
const DIVERSE_CASES: usize = 8;

/// A drawn case with its value tree (for shrinking).
type Drawn = (Box<dyn ValueTree<Value = Case>>, Case);

/// The next case of a variant: of [`CANDIDATES`] drawn, the one with the most facts (shape
/// words, triggers, path) no earlier case of the variant had, the first on a tie. A run of a
/// few cases a variant (a coverage run) then takes the host's rarer routes (padded B, batches,
/// several columns, a split) instead of drawing the common one again; once every fact has
/// been seen, and after [`DIVERSE_CASES`], this is the strategy's own next case.
/// Deterministic in the seed: two trees judged with one seed get the same cases.
fn draw(
    strategy: &BoxedStrategy<Case>,
    runner: &mut TestRunner,
    seen: &mut BTreeSet<String>,
    drawn: &mut usize,
) -> Result<Drawn, String> {
    let mut best: Option<(Drawn, Vec<String>)> = None;
    let mut best_new = 0;
    let candidates = if seen.is_empty() || *drawn >= DIVERSE_CASES {
        1
    } else {
        CANDIDATES
    };
    *drawn += 1;
    for _ in 0..candidates {
        let tree = strategy.new_tree(runner).map_err(|e| e.to_string())?;
        let case = tree.current();
        let facts = case_facts(&case);
        let new = facts.iter().filter(|f| !seen.contains(*f)).count();
        if best.is_none() || new > best_new {
            best_new = new;
            best = Some(((tree, case), facts));
        }
    }
    let (drawn, facts) = best.expect("at least one candidate");
    seen.extend(facts);
    Ok(drawn)
}

/// The words a case is told apart by when drawing: its path, shape facts and triggers.
fn case_facts(case: &Case) -> Vec<String> {
    let mut facts = findings::facts(case);
    facts.extend(findings::triggers(case));
    facts.push(findings::path_of(case));
    facts
}

/// proptest's shrinking loop, driven by hand so every evaluation stays visible: simplify while
/// the case still fails in the same group (`key`, see [`findings::keeps_group`]), step back
/// (complicate) when a simplification passes or fails differently: shrinking one bug must not
/// slide into another.
#[allow(clippy::too_many_arguments)]
fn shrink(
    eval: &mut dyn Evaluator,
    mut value: Box<dyn ValueTree<Value = Case>>,
    original: Case,
    outcome: Outcome,
    reach: Reach,
    dispatched: Option<crate::exec::ggml::Dispatched>,
    key: String,
    settings: &Settings,
    deadline: Option<Instant>,
) -> Finding {
    let start_reach = reach.clone();
    let mut best = (original.clone(), outcome, reach, dispatched);
    let mut steps = 0;
    let mut cut = false;
    // A crash that needed earlier cases in its worker does not come from this case's sizes:
    // shrinking it would only chase the worker's history.
    if findings::primary_kind(&best.1) != findings::AFTER_EARLIER_KIND && value.simplify() {
        while steps < settings.shrink_budget {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                cut = true;
                break;
            }
            steps += 1;
            let candidate = value.current();
            let outcome = eval.evaluate(&candidate);
            let dispatched = eval.take_dispatched();
            let reach = device_reach(eval.reach(&candidate), dispatched.as_ref());
            let next = if outcome.is_failure()
                && findings::keeps_group(
                    &key,
                    &start_reach,
                    &findings::group_key(&candidate, &outcome, &reach),
                    &reach,
                ) {
                best = (candidate, outcome, reach, dispatched);
                value.simplify()
            } else {
                value.complicate()
            };
            if !next {
                break;
            }
        }
    }
    let (case, outcome, reach, dispatched) = best;
    Finding {
        signature: findings::signature(&case, &outcome, &reach),
        group: key,
        cases: 1,
        explanation: explained(&outcome, dispatched.as_ref()),
        case,
        original,
        shrink_steps: steps,
        shrink_cut: cut,
        repro: None,
    }
}

/// The summary table, one row per variant: wrong results (fail) and cases that could not run
/// (err: compile or Vulkan errors, lost devices, a missing shader) in their own columns.
pub fn table(reports: &[VariantReport]) -> String {
    let mut s = String::new();
    // The config column appears only when a campaign swept device configurations.
    let config_width = reports.iter().map(|r| r.config.len()).max().unwrap_or(0);
    let _ = writeln!(
        s,
        "{:<12} {:<28} {:<22} {:<config_width$} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8} {:>8} {:>8}",
        "op",
        "variant",
        "device",
        "",
        "cases",
        "pass",
        "fail",
        "err",
        "skip",
        "worst",
        "time",
        "cases/s"
    );
    for r in reports {
        let skipped: u32 = r.skipped.values().sum();
        let device: String = r.device.chars().take(22).collect();
        let worst = if r.passed > 0 {
            format!("{:.3}", r.worst_ratio)
        } else {
            "-".into()
        };
        let rate = if r.seconds > 0.0 {
            format!("{:.0}", r.cases as f64 / r.seconds)
        } else {
            "-".into()
        };
        let err = if r.missing.is_some() {
            "MISS".to_string()
        } else {
            r.errors.to_string()
        };
        let _ = writeln!(
            s,
            "{:<12} {:<28} {:<22} {:<config_width$} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8} {:>7.1}s {:>8}",
            r.kernel,
            r.variant,
            device,
            r.config,
            r.cases,
            r.passed,
            r.failed,
            err,
            skipped,
            worst,
            r.seconds,
            rate
        );
    }
    let _ = writeln!(
        s,
        "(worst = largest |got − want| / bound over passing elements; ≤ 1 passes; err = could not run, MISS = shader missing)"
    );
    // A row whose pipelines the layer could not read is unvalidated as a whole: its later cases
    // reuse the cached pipeline and draw no message, so their passes say nothing about it.
    let unvalidated: Vec<_> = reports
        .iter()
        .filter_map(|r| {
            let why = r
                .skipped
                .keys()
                .find(|k| k.contains(vkdiff_gpu::layer_messages::UNVALIDATED))?;
            Some((r.variant.as_str(), why))
        })
        .collect();
    if !unvalidated.is_empty() {
        let _ = writeln!(
            s,
            "{} rows unvalidated (the validation layer predates what they use; their values were still judged):",
            unvalidated.len()
        );
        for (variant, why) in unvalidated {
            let _ = writeln!(s, "  UNVALIDATED {variant}: {why}");
        }
    }
    for r in reports {
        if let (Some(c), true) = (&r.worst_case, r.worst_ratio > 0.0) {
            let _ = writeln!(s, "worst {} ({:.3}): {c}", r.variant, r.worst_ratio);
        }
        if let Some(m) = &r.missing {
            let _ = writeln!(s, "MISSING {}: {m}", r.variant);
        }
        for (reason, n) in &r.skipped {
            let _ = writeln!(s, "skipped {} × {}: {reason}", n, r.variant);
        }
        if let Some(e) = &r.first_error {
            let _ = writeln!(s, "ERROR {} ({} cases): {e}", r.variant, r.errors);
        }
        for f in &r.findings {
            let _ = writeln!(
                s,
                "FAIL {} {} ({} cases): {}\n  {}: {}",
                r.variant,
                r.config,
                f.cases,
                f.signature,
                f.minimal_label(),
                f.case
            );
        }
        for (key, n) in &r.unshrunk {
            let _ = writeln!(
                s,
                "FAIL {} {} ({n} cases, not shrunk: over --max-findings): {key}",
                r.variant, r.config
            );
        }
    }
    s
}

/// The closing list: "N distinct findings", reachable ones first, each with the evidence it
/// groups (outcome kinds, where in dst, the sizes of the shrunk cases), its smallest
/// reproducer, the variants and case counts it covers, the first elements and a replay
/// command; known findings apart; stale known entries flagged.
pub fn findings_summary(distinct: &[findings::Distinct], stale: &[&findings::Known]) -> String {
    let mut s = String::new();
    let (new, known): (Vec<_>, Vec<_>) = distinct.iter().partition(|d| d.known.is_none());
    let reachable = new.iter().filter(|d| d.reachable()).count();
    let groups: usize = distinct.iter().map(|d| d.members.len()).sum();
    let _ = writeln!(
        s,
        "\n{} distinct findings: {} new ({reachable} reachable, {} forced-only), {} known ({} reachable){}",
        distinct.len(),
        new.len(),
        new.len() - reachable,
        known.len(),
        known.iter().filter(|d| d.reachable()).count(),
        if groups > 0 {
            format!(" — from {groups} shrunk failure groups")
        } else {
            String::new()
        }
    );
    for (i, d) in new.iter().chain(known.iter()).enumerate() {
        let f = &d.representative;
        let label = match (&d.known, d.reachable()) {
            (Some(_), _) => "KNOWN",
            (None, true) => "REACHABLE",
            (None, false) => "FORCED-ONLY",
        };
        let all = d.variants();
        let mut variants: Vec<String> = all
            .iter()
            .take(10)
            .map(|(v, c, n)| {
                if c.is_empty() {
                    format!("{v} ({n})")
                } else {
                    format!("{v} [{c}] ({n})")
                }
            })
            .collect();
        if all.len() > 10 {
            variants.push(format!("and {} more", all.len() - 10));
        }
        let _ = writeln!(
            s,
            "\n#{} {label}: {}\n  {} failing cases over {} variant runs: {}",
            i + 1,
            d.key,
            d.cases(),
            all.len(),
            variants.join(", "),
        );
        for e in d.evidence() {
            let _ = writeln!(s, "  {e}");
        }
        let _ = writeln!(
            s,
            "  {}: {}\n  its signature: {}",
            f.minimal_label(),
            f.case,
            f.signature
        );
        let mut first: Vec<&str> = f.explanation.lines().take(3).collect();
        // Backend mode: what ran ("did the pipeline I changed run?"), and under which override.
        first.extend(
            f.explanation
                .lines()
                .skip(3)
                .filter(|l| l.starts_with(PIPELINES_DISPATCHED) || l.starts_with(OVERRIDDEN)),
        );
        s.push_str(&indent(&first.join("\n")));
        for m in d.other_kinds() {
            let _ = writeln!(
                s,
                "  also {}: {} ({}){}",
                m.signature.kind,
                m.case,
                m.variant,
                m.repro
                    .as_ref()
                    .map(|p| format!(", replay: vkdiff replay {}", p.display()))
                    .unwrap_or_default()
            );
        }
        if let Some(k) = &d.known {
            let _ = writeln!(s, "  known: {} (fix: {})", k.explanation, k.fix);
        } else if let Some((k, n)) = &d.partly_known {
            let _ = writeln!(
                s,
                "  partly known: {n} of {} groups match `{}`; the others do not, so the finding is new",
                d.members.len(),
                k.patterns.join(" & ")
            );
        }
        if let Some(p) = &f.repro {
            let _ = writeln!(s, "  replay: vkdiff replay {}", p.display());
        }
    }
    for k in stale {
        let _ = writeln!(
            s,
            "\nSTALE known finding (no longer reproduces here): {} :: {}",
            k.patterns.join(" & "),
            k.explanation
        );
    }
    s
}
fn indent(s: &str) -> String {
    s.lines().map(|l| format!("  {l}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_the_layer_cannot_read_is_named_unvalidated() {
        let row = |variant: &str, skip: Option<String>| VariantReport {
            kernel: "mul_mm".into(),
            variant: variant.into(),
            device: "H100".into(),
            driver: String::new(),
            config: String::new(),
            cases: 200,
            passed: 200 - u32::from(skip.is_some()),
            failed: 0,
            errors: 0,
            first_error: None,
            skipped: skip.into_iter().map(|s| (s, 1)).collect(),
            worst_ratio: 0.5,
            worst_case: None,
            seconds: 1.0,
            missing: None,
            findings: Vec::new(),
            unshrunk: BTreeMap::new(),
            paths: Vec::new(),
        };
        let why = vkdiff_gpu::layer_messages::unvalidated_line("SPIR-V capability 5116", "1.4.309");
        let t = table(&[
            row("matmul_bf16_cm2", Some(why.clone())),
            row("matmul_f16_cm2", None),
        ]);
        assert!(t.contains("1 rows unvalidated"), "{t}");
        assert!(
            t.contains(&format!("UNVALIDATED matmul_bf16_cm2: {why}")),
            "{t}"
        );
        assert!(!t.contains("UNVALIDATED matmul_f16_cm2"), "{t}");
    }

    /// Over every variant, the first three cases drawn cover more distinct facts than the
    /// strategy's own first three, and the first case is the strategy's own.
    #[test]
    fn drawing_prefers_cases_with_facts_not_yet_seen() {
        let (mut plain_facts, mut drawn_facts) = (0, 0);
        for k in crate::cases::KERNELS {
            for v in (k.variants)() {
                let strategy = (k.strategy)(&v);
                let mut runner = runner_for(1, &v.name);
                let plain: BTreeSet<String> = (0..3)
                    .flat_map(|_| case_facts(&strategy.new_tree(&mut runner).unwrap().current()))
                    .collect();
                let mut runner = runner_for(1, &v.name);
                let first = strategy.new_tree(&mut runner).unwrap().current();
                let mut runner = runner_for(1, &v.name);
                let (mut seen, mut drawn) = (BTreeSet::new(), 0);
                let (_, drawn_first) = draw(&strategy, &mut runner, &mut seen, &mut drawn).unwrap();
                assert_eq!(drawn_first, first, "{}", v.name);
                for _ in 0..2 {
                    draw(&strategy, &mut runner, &mut seen, &mut drawn).unwrap();
                }
                plain_facts += plain.len();
                drawn_facts += seen.len();
            }
        }
        assert!(
            drawn_facts * 10 > plain_facts * 11,
            "drawn {drawn_facts} facts, plain {plain_facts}"
        );
    }
}
