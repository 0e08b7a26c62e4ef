//! Running the mutants: the baseline, one worker process per mutant, verdicts and scores.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use vkdiff_gpu::{DeviceCaps, Gpu, GpuError, ShaderTree, ShaderVariant};

use super::*;
use crate::campaign::{self, Settings};
use crate::cases::{Case, CrashKind, Outcome};
use crate::cases::{Kernel, KERNELS};
use crate::kernels::Variant;
use crate::worker::{Evaluator, InProcess, Worker};

/// What `vkdiff mutate` does.
#[derive(Debug, Clone)]
pub struct Options {
    /// The tree to mutate.
    pub shaders: PathBuf,
    /// The device (index or name substring).
    pub device: Option<String>,
    /// Only these kernels (empty: all).
    pub ops: Vec<String>,
    /// Only variants whose name contains this.
    pub variant: Option<String>,
    /// Only files whose name contains one of these (empty: all); `name:LINE` keeps only that
    /// line's mutants (to re-judge survivors, say with more cases).
    pub files: Vec<String>,
    /// Cases per variant.
    pub cases: u32,
    /// At most this many mutants (a seeded sample, spread over the files).
    pub budget: Option<usize>,
    /// Start no mutant after this long.
    pub time: Option<Duration>,
    /// Seed of the cases (as `vkdiff run --seed`) and of the sample.
    pub seed: u64,
    /// Output folder (mutants.json; a scratch folder while running).
    pub out: PathBuf,
    /// Per-case time limit (default: 10 × the slowest baseline case, at least 10 s).
    pub case_timeout: Option<Duration>,
    /// Run each kernel twice and require identical bits, as `vkdiff run` does.
    pub repeat: bool,
    /// Mutants known to be equivalent, with reasons.
    pub equivalent: Vec<Equivalence>,
}

/// How one kernel judged one mutant.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Verdict {
    /// A case of `variant` failed (or crashed, timed out, raced, errored).
    Killed {
        /// The variant that caught it.
        variant: String,
        /// The failing case.
        case: String,
        /// What went wrong, first line.
        how: String,
        /// Cases of that variant run up to and including the failing one.
        cases_run: u32,
    },
    /// Every changed variant passed every case.
    Survived {
        /// The variants whose SPIR-V changed (all ran their cases).
        variants: Vec<String>,
        /// Cases run in all.
        cases: u32,
    },
    /// The mutant does not compile.
    Stillborn {
        /// The compiler's first error line.
        message: String,
    },
    /// Every variant's SPIR-V is identical to the original's: undetectable by construction.
    Unchanged,
}

/// A mutant and its verdicts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MutantResult {
    /// The mutation.
    #[serde(flatten)]
    pub mutant: Mutant,
    /// The changed line, before.
    pub before: String,
    /// The changed line, after.
    pub after: String,
    /// Per kernel whose variants compile the file.
    pub verdicts: BTreeMap<String, Verdict>,
    /// The equivalence file's reason, when it lists this mutant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalent: Option<String>,
    /// Cases that timed out on their first try and ran again ([`TIMEOUT_SECOND_TRY`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub timeouts_retried: u32,
    /// Wall time spent on it.
    pub seconds: f64,
}

/// A kernel's totals.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KernelScore {
    /// Kernel name.
    pub kernel: String,
    /// Variants that took part (their baseline passed).
    pub variants: usize,
    /// Mutants of files its variants compile.
    pub mutants: u32,
    /// Caught.
    pub killed: u32,
    /// Not caught, and not listed as equivalent.
    pub survived: u32,
    /// Not caught, listed as equivalent (out of the score).
    #[serde(default)]
    pub equivalent: u32,
    /// Caught although listed as equivalent, and no kernel let it live: the entry is wrong.
    #[serde(default)]
    pub killed_equivalent: u32,
    /// Did not compile.
    pub stillborn: u32,
    /// Same SPIR-V as the original.
    pub unchanged: u32,
    /// killed / (killed + survived), equivalents excluded.
    pub score: Option<f64>,
}

/// A variant left out, and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Excluded {
    /// The variant.
    pub variant: String,
    /// Why (its baseline failed, was skipped, or is missing).
    pub reason: String,
}

/// Everything `vkdiff mutate` found; `DIR/mutants.json` holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MutationReport {
    /// The tree mutated.
    pub shaders: String,
    /// The device.
    pub device: String,
    /// Seed of cases and sample.
    pub seed: u64,
    /// Cases per variant.
    pub cases: u32,
    /// Mutants generated from the files.
    pub generated: usize,
    /// Mutants generated, per file.
    pub generated_per_file: BTreeMap<String, usize>,
    /// Mutants chosen (all, or the --budget sample).
    pub sampled: usize,
    /// Mutants judged (fewer when --time ran out).
    pub judged: usize,
    /// Per-case timeout in seconds.
    pub case_timeout: f64,
    /// Variants left out.
    pub excluded: Vec<Excluded>,
    /// Equivalence entries for the files scanned that match no generated mutant (the source
    /// moved on: re-key or drop them).
    #[serde(default)]
    pub stale_equivalences: Vec<String>,
    /// Totals per kernel.
    pub kernels: Vec<KernelScore>,
    /// Each judged mutant, in file and line order.
    pub mutants: Vec<MutantResult>,
    /// Wall time.
    pub seconds: f64,
}

/// One kernel variant that takes part: its baseline passed.
pub(super) struct Target {
    kernel: &'static Kernel,
    variant: Variant,
    /// The shader variants it compiled in the baseline.
    shaders: Vec<ShaderVariant>,
}

/// Times each case (for the default timeout).
pub(super) struct Timed<'a> {
    inner: InProcess<'a>,
    slowest: Duration,
}

impl Evaluator for Timed<'_> {
    fn evaluate(&mut self, case: &Case) -> Outcome {
        let t = Instant::now();
        let o = self.inner.evaluate(case);
        self.slowest = self.slowest.max(t.elapsed());
        o
    }
    fn caps(&self) -> &DeviceCaps {
        self.inner.caps()
    }
    fn shaders(&self) -> String {
        self.inner.shaders()
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How much longer than the case timeout a timed-out case gets on its second try.
///
/// A mutant is a new shader, so its first dispatches pay the driver's compile (LLVM's JIT on
/// lavapipe: several seconds a pipeline, more on a shared machine), which the baseline's timing
/// does not see when the driver's shader cache already held the original. A case that times
/// out runs once more, alone in a fresh worker, with this many times the limit; only a second
/// timeout kills the mutant. A mutant that hangs costs (1 + this) × the timeout.
const TIMEOUT_SECOND_TRY: u32 = 6;

/// Passes cases to the worker until one kills the mutant, then skips the rest.
pub(super) struct UntilKilled<'a> {
    inner: &'a mut Worker,
    ran: u32,
    /// Cases whose first try timed out.
    retried: u32,
    kill: Option<(String, String, u32)>,
}

impl UntilKilled<'_> {
    /// The case, with a timeout confirmed by a second, longer try ([`TIMEOUT_SECOND_TRY`]).
    fn evaluate_confirmed(&mut self, case: &Case) -> Outcome {
        let o = self.inner.evaluate(case);
        let (
            Outcome::Crash {
                kind: CrashKind::TimedOut,
                message: first,
            },
            Some(limit),
        ) = (&o, self.inner.timeout())
        else {
            return o;
        };
        self.retried += 1;
        let longer = limit * TIMEOUT_SECOND_TRY;
        self.inner.set_timeout(Some(longer));
        let again = self.inner.evaluate(case);
        self.inner.set_timeout(Some(limit));
        match again {
            Outcome::Crash {
                kind: CrashKind::TimedOut,
                ..
            } => Outcome::crash(
                CrashKind::TimedOut,
                format!(
                    "{first}; again on a second try alone in a fresh worker, with {}s",
                    longer.as_secs_f64()
                ),
            ),
            again => again,
        }
    }
}

impl Evaluator for UntilKilled<'_> {
    fn evaluate(&mut self, case: &Case) -> Outcome {
        if self.kill.is_some() {
            return Outcome::Skip("mutant already killed".into());
        }
        self.ran += 1;
        let o = self.evaluate_confirmed(case);
        if o.is_failure() || matches!(o, Outcome::Error(_) | Outcome::DeviceLost(_)) {
            let how = o.explain().lines().next().unwrap_or("").to_string();
            let how = match &o {
                Outcome::Fail { .. } => format!("fail: {how}"),
                _ => how,
            };
            self.kill = Some((case.to_string(), how, self.ran));
        }
        o
    }
    fn caps(&self) -> &DeviceCaps {
        self.inner.caps()
    }
    fn shaders(&self) -> String {
        self.inner.shaders()
    }
}

pub(super) fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let path = entry.path();
        if path.is_dir() {
            copy_tree(&path, &to.join(entry.file_name()))?;
        } else {
            std::fs::copy(&path, to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// The seeded run order: each file's mutants shuffled, then taken from the files in turn, so a
/// budget or a time limit still covers every file.
pub(super) fn run_order(mutants: &[Mutant], seed: u64) -> Vec<usize> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut per_file: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, m) in mutants.iter().enumerate() {
        per_file.entry(&m.file).or_default().push(i);
    }
    let mut lists: Vec<Vec<usize>> = per_file
        .into_values()
        .map(|mut v| {
            v.shuffle(&mut rng);
            v.reverse(); // popped from the end
            v
        })
        .collect();
    let mut order = Vec::with_capacity(mutants.len());
    while order.len() < mutants.len() {
        for l in lists.iter_mut() {
            if let Some(i) = l.pop() {
                order.push(i);
            }
        }
    }
    order
}

/// The file part of a `--file` filter (`name` or `name:LINE`).
pub(super) fn file_part(filter: &str) -> &str {
    match filter.rsplit_once(':') {
        Some((f, line)) if line.parse::<usize>().is_ok() => f,
        _ => filter,
    }
}

/// True when `m` passes the `--file` filters (none: all).
pub(super) fn wanted(filters: &[String], m: &Mutant) -> bool {
    filters.is_empty()
        || filters.iter().any(|s| {
            let line = s
                .rsplit_once(':')
                .and_then(|(_, l)| l.parse::<usize>().ok());
            m.file.contains(file_part(s)) && line.is_none_or(|l| l == m.line)
        })
}

/// The compiler's first error line, without the tree's path.
pub(super) fn first_error(message: &str) -> String {
    let line = message
        .lines()
        .find(|l| l.contains(": error:"))
        .or_else(|| message.lines().find(|l| l.contains("error")))
        .unwrap_or("")
        .trim();
    // "/path/to/tree/file.comp:15: error: ..." → "file.comp:15: error: ...".
    match line.find(": error:") {
        Some(at) => {
            let place = &line[..at];
            let short = place.rsplit('/').next().unwrap_or(place);
            format!("{short}{}", &line[at..])
        }
        None => line.to_string(),
    }
}

/// Runs every selected variant on the original tree (in this process): those that pass take
/// part, with the shader variants they compiled. Returns the device name, the participants,
/// the variants left out, and the slowest case.
#[allow(clippy::type_complexity)]
pub(super) fn baseline(
    opts: &Options,
    selected: &[(&'static Kernel, Variant)],
    settings: &Settings,
) -> Result<(String, Vec<Target>, Vec<Excluded>, Duration), String> {
    let mut gpu = Gpu::open(opts.device.as_deref()).map_err(|e| e.to_string())?;
    let device = gpu.caps().name.clone();
    println!(
        "baseline: {} variants × {} cases on {device}, shaders {}",
        selected.len(),
        opts.cases,
        opts.shaders.display()
    );
    let mut targets = Vec::new();
    let mut excluded = Vec::new();
    let mut slowest = Duration::ZERO;
    for (kernel, variant) in selected {
        let mut tree = ShaderTree::new(&opts.shaders);
        let mut timed = Timed {
            inner: InProcess {
                gpu: &mut gpu,
                tree: &mut tree,
                repeat: opts.repeat.into(),
            },
            slowest: Duration::ZERO,
        };
        let r = campaign::run_variant(&mut timed, kernel, variant, settings);
        slowest = slowest.max(timed.slowest);
        let reason = if let Some(m) = &r.missing {
            Some(format!("missing: {m}"))
        } else if !r.ok() {
            Some(format!(
                "the original tree does not pass ({} failed, {} errors): {}",
                r.failed,
                r.errors,
                r.findings
                    .first()
                    .map(|f| f.explanation.lines().next().unwrap_or("").to_string())
                    .or(r.first_error.clone())
                    .unwrap_or_default()
            ))
        } else if r.passed == 0 {
            Some(format!(
                "no case ran: {}",
                r.skipped.keys().cloned().collect::<Vec<_>>().join("; ")
            ))
        } else {
            None
        };
        match reason {
            Some(reason) => {
                println!("  left out {}: {reason}", variant.name);
                excluded.push(Excluded {
                    variant: variant.name.clone(),
                    reason,
                });
            }
            None => targets.push(Target {
                kernel,
                variant: variant.clone(),
                shaders: tree.variants(),
            }),
        }
    }
    if targets.is_empty() {
        return Err("no selected variant passes on the original tree".into());
    }
    Ok((device, targets, excluded, slowest))
}

/// Runs the mutation campaign; progress goes to stdout, the report to `out/mutants.json`.
pub fn run(opts: &Options) -> Result<MutationReport, String> {
    let started = Instant::now();
    let selected = crate::cases::select(&opts.ops, opts.variant.as_deref())?;
    if selected.is_empty() {
        return Err("no variant matches the selection".into());
    }
    let settings = Settings {
        cases: opts.cases,
        seed: opts.seed,
        shrink_budget: 0,
        repro_dir: None,
        time_budget: None,
        max_findings: 1,
    };

    // 1. Baseline on the original tree: every variant must pass; learn what each compiles.
    let (device, targets, excluded, slowest) = baseline(opts, &selected, &settings)?;
    let timeout = opts
        .case_timeout
        .unwrap_or_else(|| (slowest * 10).max(Duration::from_secs(10)));

    // 2. The files those variants compile, and their mutants.
    let mut closures: HashMap<ShaderVariant, BTreeSet<String>> = HashMap::new();
    for t in &targets {
        for sv in &t.shaders {
            closures
                .entry(sv.clone())
                .or_insert_with(|| include_closure(&opts.shaders, &sv.file));
        }
    }
    let files: BTreeSet<String> = closures
        .values()
        .flatten()
        .filter(|f| opts.files.is_empty() || opts.files.iter().any(|s| f.contains(file_part(s))))
        .cloned()
        .collect();
    let mut sources = BTreeMap::new();
    let mut mutants = Vec::new();
    let mut generated_per_file = BTreeMap::new();
    let mut stale_equivalences = Vec::new();
    for f in &files {
        let src = std::fs::read_to_string(opts.shaders.join(f))
            .map_err(|e| format!("{}: {e}", opts.shaders.join(f).display()))?;
        let all = generate(f, &src);
        for e in opts.equivalent.iter().filter(|e| &e.file == f) {
            if !all.iter().any(|m| e.matches(m)) {
                stale_equivalences.push(e.key());
            }
        }
        let ms: Vec<Mutant> = all.into_iter().filter(|m| wanted(&opts.files, m)).collect();
        generated_per_file.insert(f.clone(), ms.len());
        mutants.extend(ms);
        sources.insert(f.clone(), src);
    }
    let mut order = run_order(&mutants, opts.seed);
    if let Some(b) = opts.budget {
        order.truncate(b);
    }
    println!(
        "{} mutants in {} files; judging {}{} (per-case timeout {:.0}s)",
        mutants.len(),
        files.len(),
        order.len(),
        if order.len() < mutants.len() {
            " (a seeded sample spread over the files)"
        } else {
            ""
        },
        timeout.as_secs_f64()
    );

    // 3. A scratch tree (one path for every mutant, so SPIR-V is comparable) and its cache,
    //    shared with the workers.
    let scratch = opts.out.join("mutate-scratch");
    let _ = std::fs::remove_dir_all(&scratch);
    let tree_dir = scratch.join("tree");
    let cache_dir = scratch.join("spirv");
    copy_tree(&opts.shaders, &tree_dir).map_err(|e| format!("{}: {e}", tree_dir.display()))?;
    let tree_dir = std::fs::canonicalize(&tree_dir).map_err(|e| e.to_string())?;
    let mut reference = HashMap::new();
    {
        let mut tree = ShaderTree::with_cache(&tree_dir, Some(cache_dir.clone()));
        for sv in closures.keys() {
            let s = tree
                .spirv(sv)
                .map_err(|e| format!("the original tree: {e}"))?;
            reference.insert(sv.clone(), s.hash);
        }
    }
    let exe = crate::worker::own_executable()?;
    let mut args = vec!["--shaders".to_string(), tree_dir.display().to_string()];
    if let Some(d) = &opts.device {
        args.extend(["--device".to_string(), d.clone()]);
    }
    if !opts.repeat {
        args.push("--no-repeat".into());
    }
    let env = vec![(
        "VKDIFF_CACHE_DIR".to_string(),
        cache_dir.display().to_string(),
    )];

    let mut report = MutationReport {
        shaders: opts.shaders.display().to_string(),
        device,
        seed: opts.seed,
        cases: opts.cases,
        generated: mutants.len(),
        generated_per_file,
        sampled: order.len(),
        judged: 0,
        case_timeout: timeout.as_secs_f64(),
        excluded,
        stale_equivalences,
        kernels: Vec::new(),
        mutants: Vec::new(),
        seconds: 0.0,
    };
    let json_path = opts.out.join("mutants.json");
    let total = order.len();
    for (n, &i) in order.iter().enumerate() {
        if opts.time.is_some_and(|t| started.elapsed() >= t) {
            println!(
                "time is up: {} of {total} mutants judged",
                report.mutants.len()
            );
            break;
        }
        let m = &mutants[i];
        let t0 = Instant::now();
        let src = &sources[&m.file];
        let path = tree_dir.join(&m.file);
        std::fs::write(&path, m.apply(src)).map_err(|e| format!("{}: {e}", path.display()))?;
        let verdicts = judge(
            m,
            &targets,
            &closures,
            &reference,
            &tree_dir,
            &cache_dir,
            (&exe, args.as_slice(), env.as_slice()),
            timeout,
            &settings,
        );
        std::fs::write(&path, src).map_err(|e| format!("{}: {e}", path.display()))?;
        let (verdicts, timeouts_retried) = verdicts?;
        let (before, after) = m.lines(src);
        let equivalent = opts
            .equivalent
            .iter()
            .find(|e| e.matches(m))
            .map(|e| e.reason.clone());
        let summary: Vec<String> = verdicts
            .iter()
            .map(|(k, v)| match v {
                Verdict::Killed {
                    variant, cases_run, ..
                } => format!("{k} killed ({variant}, case {cases_run})"),
                Verdict::Survived { variants, cases } if equivalent.is_some() => format!(
                    "{k} survived, listed equivalent ({} variants, {cases} cases)",
                    variants.len()
                ),
                Verdict::Survived { variants, cases } => {
                    format!("{k} SURVIVED ({} variants, {cases} cases)", variants.len())
                }
                Verdict::Stillborn { .. } => format!("{k} stillborn"),
                Verdict::Unchanged => format!("{k} unchanged"),
            })
            .collect();
        let retried = match timeouts_retried {
            0 => String::new(),
            n => format!("; {n} case(s) ran a second try after a timeout"),
        };
        println!(
            "[{}/{total}] {}:{}:{} {} `{}` → `{}`: {}{retried} ({:.1}s)",
            n + 1,
            m.file,
            m.line,
            m.column,
            m.operator.name(),
            m.original,
            m.replacement,
            summary.join(", "),
            t0.elapsed().as_secs_f64()
        );
        report.mutants.push(MutantResult {
            mutant: m.clone(),
            before,
            after,
            verdicts,
            equivalent,
            timeouts_retried,
            seconds: t0.elapsed().as_secs_f64(),
        });
        report.judged = report.mutants.len();
        finish(&mut report, &targets, started);
        if let Err(e) = write_json(&json_path, &report) {
            eprintln!("vkdiff: {}: {e}", json_path.display());
        }
    }
    finish(&mut report, &targets, started);
    write_json(&json_path, &report).map_err(|e| format!("{}: {e}", json_path.display()))?;
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(report)
}

pub(super) fn write_json(path: &Path, report: &MutationReport) -> std::io::Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    let tmp = path.with_extension("json.tmp");
    std::fs::write(
        &tmp,
        serde_json::to_string_pretty(report).map_err(std::io::Error::other)?,
    )?;
    std::fs::rename(&tmp, path)
}

/// True when some kernel let `m` live. (An equivalence entry speaks for those kernels: a
/// mutant may be equivalent for one kernel's variants and killed by another's.)
pub(super) fn survives(m: &MutantResult) -> bool {
    m.verdicts
        .values()
        .any(|v| matches!(v, Verdict::Survived { .. }))
}

/// Recomputes the per-kernel totals and sorts the mutants by place.
pub(super) fn finish(report: &mut MutationReport, targets: &[Target], started: Instant) {
    report
        .mutants
        .sort_by(|a, b| (&a.mutant.file, a.mutant.start).cmp(&(&b.mutant.file, b.mutant.start)));
    report.kernels = KERNELS
        .iter()
        .filter(|k| targets.iter().any(|t| t.kernel.name == k.name))
        .map(|k| {
            let mut s = KernelScore {
                kernel: k.name.to_string(),
                variants: targets.iter().filter(|t| t.kernel.name == k.name).count(),
                ..Default::default()
            };
            for m in &report.mutants {
                let Some(v) = m.verdicts.get(k.name) else {
                    continue;
                };
                s.mutants += 1;
                let listed = m.equivalent.is_some();
                match v {
                    Verdict::Killed { .. } => {
                        s.killed += 1;
                        s.killed_equivalent += u32::from(listed && !survives(m));
                    }
                    Verdict::Survived { .. } if listed => s.equivalent += 1,
                    Verdict::Survived { .. } => s.survived += 1,
                    Verdict::Stillborn { .. } => s.stillborn += 1,
                    Verdict::Unchanged => s.unchanged += 1,
                }
            }
            let judged = s.killed + s.survived;
            s.score = (judged > 0).then(|| s.killed as f64 / judged as f64);
            s
        })
        .collect();
    report.seconds = started.elapsed().as_secs_f64();
}

/// Judges one mutant (already written into the scratch tree) for every kernel whose variants
/// compile its file. Also returns how many cases timed out on their first try.
#[allow(clippy::too_many_arguments)]
pub(super) fn judge(
    m: &Mutant,
    targets: &[Target],
    closures: &HashMap<ShaderVariant, BTreeSet<String>>,
    reference: &HashMap<ShaderVariant, [u8; 32]>,
    tree_dir: &Path,
    cache_dir: &Path,
    (exe, args, env): (&PathBuf, &[String], &[(String, String)]),
    timeout: Duration,
    settings: &Settings,
) -> Result<(BTreeMap<String, Verdict>, u32), String> {
    let mut tree = ShaderTree::with_cache(tree_dir, Some(cache_dir.to_path_buf()));
    let mut worker: Option<Worker> = None;
    let mut verdicts = BTreeMap::new();
    let mut retried = 0;
    for kernel in KERNELS {
        let mine: Vec<&Target> = targets
            .iter()
            .filter(|t| t.kernel.name == kernel.name)
            .filter(|t| t.shaders.iter().any(|sv| closures[sv].contains(&m.file)))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let mut stillborn = None;
        let mut changed = Vec::new();
        'targets: for t in &mine {
            let mut differs = false;
            for sv in t
                .shaders
                .iter()
                .filter(|sv| closures[*sv].contains(&m.file))
            {
                match tree.spirv(sv) {
                    Ok(s) => differs |= s.hash != reference[sv],
                    Err(GpuError::Compile { message, .. }) => {
                        stillborn = Some(format!("{}: {}", sv.name, first_error(&message)));
                        break 'targets;
                    }
                    Err(e) => return Err(format!("compiling a mutant of {}: {e}", m.file)),
                }
            }
            if differs {
                changed.push(*t);
            }
        }
        let verdict = if let Some(message) = stillborn {
            Verdict::Stillborn { message }
        } else if changed.is_empty() {
            Verdict::Unchanged
        } else {
            if worker.is_none() {
                // A fresh worker per mutant: a worker's tree memoises SPIR-V by variant.
                let mut w = Worker::new(
                    exe.clone(),
                    args.to_vec(),
                    crate::worker::Setup {
                        driver_env: env.to_vec(),
                        ggml: None,
                    },
                    tree_dir.display().to_string(),
                )?;
                w.set_timeout(Some(timeout));
                worker = Some(w);
            }
            let w = worker.as_mut().expect("started above");
            let mut cases = 0;
            let mut killed = None;
            for t in &changed {
                let mut eval = UntilKilled {
                    inner: &mut *w,
                    ran: 0,
                    retried: 0,
                    kill: None,
                };
                campaign::run_variant(&mut eval, t.kernel, &t.variant, settings);
                cases += eval.ran;
                retried += eval.retried;
                if let Some((case, how, cases_run)) = eval.kill {
                    killed = Some(Verdict::Killed {
                        variant: t.variant.name.clone(),
                        case,
                        how,
                        cases_run,
                    });
                    break;
                }
            }
            killed.unwrap_or_else(|| Verdict::Survived {
                variants: changed.iter().map(|t| t.variant.name.clone()).collect(),
                cases,
            })
        };
        verdicts.insert(kernel.name.to_string(), verdict);
    }
    Ok((verdicts, retried))
}
