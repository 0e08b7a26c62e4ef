//! The vkdiff command line: `run` (the differential campaign), `replay`, `devices`, `list`.
//! Parsing is separate from running so tests and fuzz targets can drive the real parser.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use clap::{Parser, Subcommand};
use vkdiff_gpu::context::BenchMode;
use vkdiff_gpu::device::Instance;
use vkdiff_gpu::{Gpu, ShaderTree};

use crate::bench;
use crate::campaign::{self, CaseRecord, Settings, VariantReport};
use crate::cases::Outcome;
use crate::cases::{Kernel, KERNELS};
use crate::fuzzing;
use crate::kernels::{self, Variant};
use crate::report::{self, JsonReport, Line};
use crate::repro::Reproducer;
use crate::worker::{self, Evaluator, InProcess, Worker};

/// Exit statuses of `vkdiff run` (also in the README).
pub const EXIT_CODES: &str =
    "Exit status of `vkdiff run`: 0 when every case passed or every finding is known; \
otherwise the sum of 1 (new reachable findings: wrong results a real ggml graph can produce), \
4 (new forced-only findings: configurations vkdiff forces for coverage) and \
8 (cases that could not run: compile or Vulkan errors, lost devices, missing shaders). \
2: the command itself failed (bad arguments, no device).";

pub use crate::findings::exit_status;

/// The parsed command line.
#[derive(Parser, Debug)]
#[command(
    name = "vkdiff",
    version,
    about = "Differential tester for ggml-vulkan compute shaders against an exact CPU reference",
    after_help = EXIT_CODES
)]
pub struct Cli {
    /// The subcommand and its options.
    #[command(subcommand)]
    pub command: Command,
}

/// Which device and shader tree a command uses.
#[derive(clap::Args, Clone, Debug)]
pub struct Target {
    /// Vulkan device: index or name substring (default: $VKDIFF_DEVICE, else the first discrete GPU, else the first device).
    #[arg(long)]
    device: Option<String>,
    /// Shader tree to test: ours by default, or a ggml `vulkan-shaders` folder.
    #[arg(long)]
    shaders: Option<PathBuf>,
    /// Run under the Khronos validation layer with synchronization validation (same as
    /// VKDIFF_VALIDATE=1; VKDIFF_VALIDATE=gpu adds GPU-assisted validation): any message fails
    /// the case and is quoted.
    #[arg(long)]
    validate: bool,
    /// Backend mode: build ggml with its Vulkan backend from this ggml or llama.cpp checkout
    /// (cached) and run every case through ggml's own host as a one-op graph.
    #[arg(long, value_name = "DIR")]
    ggml: Option<PathBuf>,
}

impl Target {
    /// Whether this run tests vkdiff's own shader tree or a copy of it (no --ggml, --shaders
    /// absent, ours, or a copy of ours: [`is_vkdiff_tree`]).
    fn tests_own_shaders(&self) -> bool {
        let canon = |p: &std::path::Path| p.canonicalize().ok();
        self.ggml.is_none()
            && self.shaders.as_deref().is_none_or(|s| {
                (canon(s).is_some() && canon(s) == canon(&crate::default_shader_dir()))
                    || is_vkdiff_tree(s)
            })
    }

    /// Applies `--validate` to this process and the workers it starts.
    fn apply(&self) {
        if self.validate {
            // Before any thread or worker exists.
            vkdiff_gpu::env::request_validation();
        }
    }
}

/// The subcommands. (Field docs are clap's help texts; flattened fields have none.)
#[allow(missing_docs)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the differential campaign: every kernel × variant on one device.
    Run {
        #[command(flatten)]
        target: Target,
        /// Cases per variant (default 200 on a GPU, 160 on a CPU device such as lavapipe; with --time, no limit but the time).
        #[arg(long)]
        cases: Option<u32>,
        /// Time budget for the whole campaign, shared evenly by the variants: 90, 90s, 10m, 1h.
        #[arg(long)]
        time: Option<String>,
        /// Run only shard i of n (variants i, i+n, …), e.g. 0/2 on one machine and 1/2 on another.
        #[arg(long)]
        shard: Option<String>,
        /// Spread the variants over these devices (indices or name substrings), one worker
        /// process each, e.g. --devices 0,1.
        #[arg(long, value_delimiter = ',')]
        devices: Vec<String>,
        /// Worker processes per device, each taking whole variants from the shared queue
        /// (default: one per CPU core on a CPU device such as lavapipe, whose compiles and JIT
        /// are single-threaded; else 1).
        #[arg(long)]
        jobs: Option<usize>,
        /// Master seed (each variant derives its own cases from it).
        #[arg(long, default_value_t = 0x5EED)]
        seed: u64,
        /// Only these kernels (repeatable), e.g. -o wkv7.
        #[arg(short = 'o', long = "op")]
        ops: Vec<String>,
        /// Only variants whose name contains this (or one of these, comma-separated; a part
        /// ending in `$` must end the name), e.g. q4_0.
        #[arg(long)]
        variant: Option<String>,
        /// Output folder: reproducers (repro/), report.jsonl (written as results arrive) and
        /// report.html.
        #[arg(long, default_value = "vkdiff-out")]
        out: PathBuf,
        /// Most evaluations spent shrinking one failure.
        #[arg(long, default_value_t = 400)]
        shrink_budget: u32,
        /// Most failure groups (distinct signatures) shrunk per variant; further groups are
        /// counted and listed unshrunk.
        #[arg(long, default_value_t = 8)]
        max_findings: u32,
        /// The known-findings file: findings already understood upstream, one per line as
        /// `PATTERN & PATTERN :: explanation :: fix` (default: known-findings.txt of this
        /// checkout when it exists, else the list built into the binary). Matching findings are reported apart and do not fail the
        /// run; an entry that no longer reproduces is flagged stale. `@TEXT` patterns scope an
        /// entry to runs (`@shaders`, `@ggml`, `@0.1.109`: see the file's header).
        #[arg(long)]
        known: Option<PathBuf>,
        /// Run each kernel once instead of twice (the second run must give bitwise-identical
        /// output, which catches races).
        #[arg(long)]
        no_repeat: bool,
        /// Run the second kernel run on one case in N, picked by a hash of the case (default: 1
        /// on a GPU, 4 on a CPU device such as lavapipe, where only races between workgroups can
        /// show). `--in-process` repeats every case.
        #[arg(long)]
        repeat_every: Option<u64>,
        /// Evaluate in this process instead of a worker process (a driver crash then ends the run).
        #[arg(long)]
        in_process: bool,
        /// Repeat the campaign for each lavapipe LP_NATIVE_VECTOR_WIDTH, e.g. 128,256,512
        /// (subgroup sizes 4, 8, 16): kernels must be right at every subgroup size.
        #[arg(long, value_delimiter = ',')]
        lavapipe_widths: Vec<u32>,
        /// With --ggml: the path configurations to run, each in its own process (default all:
        /// scalar-fp32,scalar-fp16,cm1,cm2); one the device or build lacks is a skip.
        #[arg(long = "config", value_delimiter = ',')]
        configs: Vec<String>,
    },
    /// Re-run a reproducer file and explain the result: on the shader tree it records, or, for
    /// a backend-mode reproducer, through the ggml tree and configuration it records
    /// (--shaders, --ggml and --config choose others).
    Replay {
        /// The reproducer (JSON) written by a failing run.
        file: PathBuf,
        #[command(flatten)]
        target: Target,
        /// With --ggml (or a backend-mode reproducer): the path configuration to replay under
        /// (default: the recorded one).
        #[arg(long)]
        config: Option<String>,
    },
    /// Time kernels on realistic LLM shapes (GPU timestamps, median after warm-up, rotated
    /// inputs) against ceilings measured on the device; optionally against a second tree. After
    /// the table, the driver's compiler statistics (registers, spills) of each pipeline timed.
    Bench {
        #[command(flatten)]
        target: Target,
        /// A second shader tree (e.g. upstream's) timed on the same cases, shown as a ratio.
        #[arg(long)]
        against: Option<PathBuf>,
        /// Only these kernels (repeatable).
        #[arg(short = 'o', long = "op")]
        ops: Vec<String>,
        /// Only variants whose name contains this (or one of these, comma-separated; a part
        /// ending in `$` must end the name).
        #[arg(long)]
        variant: Option<String>,
        /// Only rows whose shape label contains this (e.g. "N=1 " for the decode rows; one
        /// string: labels hold commas).
        #[arg(long)]
        row: Option<String>,
        /// Rounds per case: each round times our tree and the --against tree once each,
        /// alternating which goes first; the table gives the median round and the spread.
        #[arg(long, default_value_t = 3)]
        rounds: u32,
        /// Timed repetitions per case (the median is reported).
        #[arg(long, default_value_t = 20)]
        repeats: u32,
        /// Untimed repetitions first.
        #[arg(long, default_value_t = 3)]
        warmup: u32,
        /// Copies of each input, used in turn so caches do not flatter.
        #[arg(long, default_value_t = 4)]
        rotations: u32,
        /// With --ggml: the one path configuration to time under (default: the best the device
        /// offers, cm2 > cm1 > scalar-fp16 > scalar-fp32); vkdiff's own rows take the same path.
        #[arg(long)]
        config: Option<String>,
        /// Every row on small shapes (large dimensions cut to 256·⌊x/4096⌋, at least 256): a
        /// smoke test of the rows, e.g. on lavapipe, not a measurement.
        #[arg(long)]
        quick: bool,
        /// Every mat-vec weight type with every column count (by default only the common
        /// types sweep the columns; the others have one column).
        #[arg(long)]
        all: bool,
        /// Start no row after this many seconds: the rows measured so far and the summary are
        /// still printed (for a device call with a hard time limit).
        #[arg(long)]
        time_limit: Option<u64>,
        /// Time rows whose result is wrong too (their status still says WRONG): for
        /// experiments, e.g. a copy of a shader with one part taken out, to see what it costs.
        #[arg(long)]
        time_wrong: bool,
        /// No GPU: time each row's reference and error bounds on the host (inputs from the
        /// row's seed), against the machine's measured f64 FMA rate (`bench::host`).
        #[arg(long)]
        host_only: bool,
    },
    /// Mutation testing: how many small bugs planted in the shader tree (relational and
    /// arithmetic swaps, constants ± 1, dropped barriers, min ↔ max, swapped operands) the
    /// campaign's cases catch, per kernel; writes DIR/mutants.json.
    Mutate {
        #[command(flatten)]
        target: Target,
        /// Only these kernels (repeatable), e.g. -o wkv7.
        #[arg(short = 'o', long = "op")]
        ops: Vec<String>,
        /// Only variants whose name contains this, e.g. q4_0.
        #[arg(long)]
        variant: Option<String>,
        /// Only files whose name contains this (repeatable), e.g. --file wkv7.comp; with
        /// :LINE only that line's mutants, e.g. --file wkv7.comp:89.
        #[arg(long = "file")]
        files: Vec<String>,
        /// Cases per variant and mutant (the same cases as `vkdiff run --seed`).
        #[arg(long, default_value_t = 40)]
        cases: u32,
        /// At most this many mutants: a seeded sample spread over the files.
        #[arg(long)]
        budget: Option<usize>,
        /// Start no mutant after this long: 90, 90s, 10m, 1h.
        #[arg(long)]
        time: Option<String>,
        /// Seed of the cases and of the sample.
        #[arg(long, default_value_t = 0x5EED)]
        seed: u64,
        /// Output folder (mutants.json).
        #[arg(long, default_value = "vkdiff-out")]
        out: PathBuf,
        /// Per-case time limit in seconds (default: 10 × the slowest baseline case, at least
        /// 10): a case that runs longer runs again in a fresh worker with 6 × the limit (its
        /// first try may have paid the driver's compile of the new shader); a second timeout
        /// (a hang) kills the mutant.
        #[arg(long)]
        case_timeout: Option<f64>,
        /// Run each kernel once instead of twice.
        #[arg(long)]
        no_repeat: bool,
        /// The equivalence file: mutants known to be equivalent, one per line as
        /// `FILE:LINE:COL `from` → `to`: reason` (default: mutants-equivalent.txt beside the
        /// shader folder, when it exists). Listed survivors are reported apart, out of the score.
        #[arg(long)]
        equivalent: Option<PathBuf>,
    },
    /// List Vulkan devices with the capabilities that select kernel variants.
    Devices,
    /// List kernels, variants and error models.
    List,
    /// Turn a cargo-fuzz artifact (crash or mismatch input) into a reproducer for `replay`.
    FuzzRepro {
        /// The kernel the fuzz target ran for (its VKDIFF_FUZZ_KERNEL), or `any` when the
        /// first byte picked the kernel.
        kernel: String,
        /// The artifact file (fuzz/artifacts/kernel_<name>/crash-… from ci/fuzz.sh).
        artifact: PathBuf,
        /// Where to write the reproducer.
        #[arg(long, default_value = "vkdiff-out/repro")]
        out: PathBuf,
    },
    /// The cases whose outcome differs between two runs' report.jsonl (same seed: the same
    /// cases), e.g. two ggml trees: regressions and fixes. Exit status 1 when any differ.
    Diff {
        /// The first run's report.jsonl.
        a: PathBuf,
        /// The second run's report.jsonl.
        b: PathBuf,
    },
    /// Build the HTML report from a report.jsonl (also one cut short by a crash).
    Report {
        /// The report.jsonl a run wrote.
        file: PathBuf,
        /// Where to write the HTML (default: next to FILE, .html).
        #[arg(long)]
        html: Option<PathBuf>,
        /// Match the findings against this known-findings file (default: known-findings.txt
        /// of this checkout, else the built-in list) and print the distinct findings; exits as `run` would.
        #[arg(long)]
        known: Option<PathBuf>,
    },
    /// Evaluate cases sent by a campaign (internal: the worker process).
    #[command(hide = true)]
    Worker {
        #[command(flatten)]
        target: Target,
        /// Run each kernel once.
        #[arg(long)]
        no_repeat: bool,
        /// See `run --repeat-every`.
        #[arg(long)]
        repeat_every: Option<u64>,
    },
}

fn shader_dir(target: &Target) -> Result<PathBuf, String> {
    let dir = target
        .shaders
        .clone()
        .unwrap_or_else(crate::default_shader_dir);
    if dir.is_dir() {
        Ok(dir)
    } else {
        Err(format!("shader folder {} does not exist", dir.display()))
    }
}

/// Parses a command line (the first item is the program name); errors carry clap's message,
/// including `--help` and `--version` output.
pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    Cli::try_parse_from(args)
}

/// How `run` evaluates: where, and under which extra environment.
struct RunPlan {
    target: Target,
    /// Devices to spread variants over, one worker each (empty: the target's one device).
    devices: Vec<String>,
    /// Workers per device (None: see [`RunPlan::jobs_for`]).
    jobs: Option<usize>,
    shaders: PathBuf,
    repeat: bool,
    /// `--repeat-every` (None: the device's default, [`worker::repeat_every`]).
    repeat_every: Option<u64>,
    in_process: bool,
    /// `--cases` (None: the device's default, [`worker::cases_per_variant`]).
    cases: Option<u32>,
}

/// What every device's thread of a run shares.
struct Shared<'a> {
    queue: Mutex<VecDeque<(usize, &'a (&'static Kernel, Variant))>>,
    reports: Mutex<Vec<(usize, VariantReport)>>,
    json: &'a Mutex<Option<JsonReport>>,
    bars: indicatif::MultiProgress,
}

impl RunPlan {
    /// Runs every selected variant under the environment `env` (empty: as is), spread over the
    /// devices, and appends the reports in selection order.
    fn run(
        &self,
        selected: &[(&'static Kernel, Variant)],
        settings: &Settings,
        env: &[(String, String)],
        reports: &mut Vec<VariantReport>,
        json: &Mutex<Option<JsonReport>>,
    ) -> Result<(), String> {
        let label: String = crate::ggml::label(env).unwrap_or_else(|| {
            env.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        });
        let shared = Shared {
            queue: Mutex::new(selected.iter().enumerate().collect()),
            reports: Mutex::new(Vec::new()),
            json,
            bars: indicatif::MultiProgress::new(),
        };
        if self.in_process {
            if !env.is_empty() || self.devices.len() > 1 {
                return Err("--lavapipe-widths and several --devices need worker processes (drop --in-process)".into());
            }
            let mut gpu = Gpu::open(self.target.device.as_deref()).map_err(|e| e.to_string())?;
            let mut tree = ShaderTree::new(&self.shaders);
            self.drain(
                &mut InProcess {
                    gpu: &mut gpu,
                    tree: &mut tree,
                    repeat: self.repeat.into(),
                },
                settings,
                &label,
                &shared,
                true,
            );
            // A worker prints its own at exit.
            eprint!("{}", vkdiff_gpu::profile::report());
        } else {
            let devices: Vec<Option<String>> = if self.devices.is_empty() {
                vec![self.target.device.clone()]
            } else {
                self.devices.iter().cloned().map(Some).collect()
            };
            let errors: Vec<String> = std::thread::scope(|scope| {
                let handles: Vec<_> = devices
                    .iter()
                    .map(|d| {
                        scope.spawn(|| self.worker(d.as_deref(), env, settings, &label, &shared))
                    })
                    .collect();
                handles
                    .into_iter()
                    .filter_map(|h| {
                        h.join()
                            .unwrap_or_else(|_| Err("a device thread panicked".into()))
                            .err()
                    })
                    .collect()
            });
            if let Some(e) = errors.first() {
                if shared.reports.lock().unwrap().is_empty() {
                    return Err(e.clone());
                }
                eprintln!("vkdiff: {e}");
            }
        }
        let mut done = shared.reports.into_inner().unwrap();
        done.sort_by_key(|(i, _)| *i);
        reports.extend(done.into_iter().map(|(_, r)| r));
        Ok(())
    }

    /// How many workers share a device: `--jobs`, else one per core on a CPU device (lavapipe
    /// spends most of a case in single-threaded work: SPIR-V compiles, LLVM's JIT of each
    /// pipeline, the host's data and bounds), else one.
    fn jobs_for(&self, caps: &vkdiff_gpu::DeviceCaps) -> usize {
        self.jobs
            .unwrap_or_else(|| {
                if caps.kind == "cpu" {
                    std::thread::available_parallelism().map_or(1, |n| n.get())
                } else {
                    1
                }
            })
            .max(1)
    }

    /// One device's thread: worker processes on `device` ([`RunPlan::jobs_for`] of them), each
    /// taking variants until none is left.
    fn worker(
        &self,
        device: Option<&str>,
        env: &[(String, String)],
        settings: &Settings,
        label: &str,
        shared: &Shared,
    ) -> Result<(), String> {
        let exe = crate::worker::own_executable()?;
        let mut args = vec!["--shaders".to_string(), self.shaders.display().to_string()];
        if let Some(d) = device {
            args.extend(["--device".to_string(), d.to_string()]);
        }
        if !self.repeat {
            args.push("--no-repeat".into());
        }
        if let Some(n) = self.repeat_every {
            args.extend(["--repeat-every".to_string(), n.to_string()]);
        }
        let ggml_config = env
            .iter()
            .find(|(k, _)| k == "VKDIFF_GGML_CONFIG")
            .map(|(_, c)| crate::ggml::Config::parse(c))
            .transpose()?;
        let start = || {
            let mut w = Worker::new(
                exe.clone(),
                args.clone(),
                env.to_vec(),
                self.shaders.display().to_string(),
            )?;
            if let Some(c) = ggml_config {
                w.variant_filter = Some(Box::new(move |v| crate::ggml::variant_skip(c, v)));
                w.real_graphs = true;
            }
            Ok::<_, String>(w)
        };
        let first = match (start(), ggml_config) {
            (Ok(w), _) => w,
            (Err(e), Some(_)) => {
                // A configuration the device or build lacks: every variant is a visible skip.
                Self::skip_all(shared, settings, label, &e);
                return Ok(());
            }
            (Err(e), None) => return Err(format!("device {}: {e}", device.unwrap_or("default"))),
        };
        let jobs = self.jobs_for(first.caps());
        let finish = |mut w: Worker, announce: bool| {
            self.drain(&mut w, settings, label, shared, announce);
            if w.starts > 1 {
                println!(
                    "worker on {} restarted {} times after crashes or lost devices {label}",
                    w.caps().name,
                    w.starts - 1
                );
            }
        };
        std::thread::scope(|scope| {
            for _ in 1..jobs {
                scope.spawn(|| match start() {
                    Ok(w) => finish(w, false),
                    // The other workers still drain the queue.
                    Err(e) => eprintln!("vkdiff: an extra worker did not start: {e}"),
                });
            }
            finish(first, true);
        });
        Ok(())
    }

    /// Records every variant left in the queue as skipped for `reason` (a configuration that cannot
    /// start).
    fn skip_all(shared: &Shared, settings: &Settings, label: &str, reason: &str) {
        println!("skipping {label}: {reason}");
        while let Some((index, (kernel, v))) = shared.queue.lock().unwrap().pop_front() {
            let mut r = VariantReport {
                kernel: kernel.name.into(),
                variant: v.name.clone(),
                config: label.to_string(),
                ..Default::default()
            };
            r.skipped.insert(reason.to_string(), settings.cases);
            record(shared.json, &Line::Variant(Box::new(r.clone())));
            shared.reports.lock().unwrap().push((index, r));
        }
    }

    /// Runs variants from the shared queue through `eval` until it is empty (`announce`: print
    /// the device line and record the run's start; once per device).
    fn drain(
        &self,
        eval: &mut dyn Evaluator,
        settings: &Settings,
        label: &str,
        shared: &Shared,
        announce: bool,
    ) {
        let caps = eval.caps().clone();
        let settings = &Settings {
            cases: worker::cases_per_variant(self.cases, &caps),
            ..settings.clone()
        };
        let validation = if vkdiff_gpu::device::validation_requested() {
            ", validation on"
        } else {
            ""
        };
        if announce {
            println!(
                "device: {} ({}, subgroup size {}{validation}) {label}, shaders: {}",
                caps.name,
                caps.class(),
                caps.subgroup_size,
                self.shaders.display()
            );
            // Said because on a CPU device not every case gets it by default.
            let every = worker::repeat_every(self.repeat_every, &caps);
            println!(
                "race repeat: {}",
                match (self.repeat, self.in_process, every) {
                    (false, _, _) => "off (--no-repeat)".to_string(),
                    (true, true, _) | (true, false, 1) => "every case".to_string(),
                    (true, false, n) => format!(
                        "1 case in {n}{}",
                        if self.repeat_every.is_none() {
                            " (the default on a CPU device; --repeat-every 1 for all)"
                        } else {
                            ""
                        }
                    ),
                }
            );
            if self.cases.is_none() && caps.kind == "cpu" {
                // Said because the count differs from a GPU's.
                println!(
                    "cases: {} a variant (the default on a CPU device, so the main job ends within 10 minutes on 2 cores; --cases {} as on a GPU)",
                    settings.cases,
                    worker::GPU_CASES
                );
            }
            let start = Line::Start {
                device: caps.name.clone(),
                config: label.to_string(),
                shaders: self.shaders.display().to_string(),
                seed: settings.seed,
                version: env!("CARGO_PKG_VERSION").into(),
            };
            record(shared.json, &start);
        }
        loop {
            let Some((index, (kernel, v))) = shared.queue.lock().unwrap().pop_front() else {
                break;
            };
            let style =
                indicatif::ProgressStyle::with_template("{prefix:<40} {bar:30} {pos}/{len} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            let bar = shared
                .bars
                .add(indicatif::ProgressBar::new(settings.cases as u64).with_style(style));
            bar.set_prefix(v.name.clone());
            let mut failed = 0u32;
            let mut observe = |c: &CaseRecord| {
                let mut c = c.clone();
                c.config = label.to_string();
                if !matches!(c.outcome.as_str(), "pass" | "skip") {
                    failed += 1;
                    bar.set_message(format!("{failed} not passed"));
                }
                record(shared.json, &Line::Case(c));
                bar.inc(1);
            };
            let mut r = campaign::run_variant_observed(eval, kernel, v, settings, &mut observe);
            bar.finish_and_clear();
            r.config = label.to_string();
            record(shared.json, &Line::Variant(Box::new(r.clone())));
            let line = format!(
                "{:<12} {:<28} {} cases, {} failed, {:.1}s on {} {label}",
                r.kernel,
                r.variant,
                r.cases,
                r.failed + r.errors,
                r.seconds,
                caps.name
            );
            // The bars draw only on a terminal; a log (CI, the GPU machine) still gets a line
            // per finished variant instead of silence until the final table.
            if shared.bars.is_hidden() {
                eprintln!("{line}");
            } else {
                let _ = shared.bars.println(line);
            }
            shared.reports.lock().unwrap().push((index, r));
        }
    }
}

/// Appends a line to the JSON report; a report that cannot be written is said once and dropped,
/// never fatal to the campaign.
fn record(json: &Mutex<Option<JsonReport>>, line: &Line) {
    let mut json = json.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(j) = json.as_mut() {
        if let Err(e) = j.write(line) {
            eprintln!("vkdiff: report not written any more: {e}");
            *json = None;
        }
    }
}

/// Writes the HTML report next to the JSON one (a failure is said, not fatal).
fn write_html(json: &std::path::Path, html: &std::path::Path) {
    match report::read(json)
        .and_then(|lines| std::fs::write(html, report::html(&lines)).map_err(|e| e.to_string()))
    {
        Ok(()) => println!("report: {} and {}", json.display(), html.display()),
        Err(e) => eprintln!("vkdiff: HTML report not written: {e}"),
    }
}

/// Whether a shader folder is vkdiff's tree or a copy of it (the tests' mutants, a staged copy):
/// it holds `bench_fma.comp`, a shader of vkdiff's bench that no upstream tree has. The known
/// list describes upstream trees, so it must not excuse a bug planted in a copy of ours.
fn is_vkdiff_tree(dir: &std::path::Path) -> bool {
    dir.join("bench_fma.comp").is_file()
}

/// Whether a report is of a run of vkdiff's own shaders: every start line names a folder
/// called `shaders` (ours, wherever the checkout was; upstream's is `vulkan-shaders` or a staged
/// copy) or a copy of our tree still on this machine, and no ggml backend configuration.
fn own_shaders_run(lines: &[Line]) -> bool {
    let mut starts = lines.iter().filter_map(|l| match l {
        Line::Start {
            shaders, config, ..
        } => Some((shaders, config)),
        _ => None,
    });
    let mut any = false;
    starts.all(|(shaders, config)| {
        any = true;
        let dir = std::path::Path::new(shaders);
        (dir.file_name() == Some(std::ffi::OsStr::new("shaders")) || is_vkdiff_tree(dir))
            && !config.starts_with("ggml")
    }) && any
}

/// The known-findings list: `path`, else known-findings.txt of this checkout when it exists
/// (edits take effect without a rebuild), else the copy built into the binary.
fn load_known(path: Option<PathBuf>) -> Result<Vec<crate::findings::Known>, String> {
    let path = path.or_else(|| Some(crate::findings::default_known_file()).filter(|p| p.is_file()));
    match &path {
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| format!("{}: {e}", p.display()))
            .and_then(|t| crate::findings::parse_known(&t))
            .map_err(|e| format!("{}: {e}", p.display())),
        None => crate::findings::parse_known(crate::findings::BUILTIN_KNOWN)
            .map_err(|e| format!("the built-in known-findings list: {e}")),
    }
}

/// Parses a duration: plain seconds or a number with s, m or h.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = match s.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (e.g. 90, 90s, 10m, 1h)"))?;
    let scale = match unit {
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (use s, m or h)")),
    };
    if !(n.is_finite() && n >= 0.0) {
        return Err(format!("{s:?} is not a duration"));
    }
    Ok(Duration::from_secs_f64(n * scale))
}

/// Parses a shard `i/n` (0 ≤ i < n).
fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let err = || format!("{s:?} is not a shard i/n with 0 ≤ i < n");
    let (i, n) = s.split_once('/').ok_or_else(err)?;
    let (i, n): (usize, usize) = (
        i.trim().parse().map_err(|_| err())?,
        n.trim().parse().map_err(|_| err())?,
    );
    if i < n {
        Ok((i, n))
    } else {
        Err(err())
    }
}

/// Runs a parsed command; the error is a message for the user (exit status 2).
pub fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Run {
            target,
            cases,
            seed,
            ops,
            variant,
            out,
            shrink_budget,
            max_findings,
            known,
            no_repeat,
            repeat_every,
            in_process,
            lavapipe_widths,
            time,
            shard,
            devices,
            jobs,
            configs: ggml_configs,
        } => {
            target.apply();
            // The known list describes upstream trees: a run of vkdiff's own shaders has none
            // unless --known names a file, so no upstream entry ever excuses a bug of ours.
            let known = if known.is_none() && target.tests_own_shaders() {
                Vec::new()
            } else {
                load_known(known)?
            };
            let started = std::time::Instant::now();
            let mut selected = crate::cases::select(&ops, variant.as_deref())?;
            if let Some(shard) = shard {
                // Variant i of the selection runs on shard i mod n: several machines, one campaign.
                let (i, n) = parse_shard(&shard)?;
                selected = selected
                    .into_iter()
                    .enumerate()
                    .filter(|(k, _)| k % n == i)
                    .map(|(_, v)| v)
                    .collect();
            }
            let configs: Vec<Vec<(String, String)>> = if let Some(dir) = &target.ggml {
                if in_process || !lavapipe_widths.is_empty() {
                    return Err("--ggml runs one worker process per configuration: drop --in-process and --lavapipe-widths".into());
                }
                let chosen = if ggml_configs.is_empty() {
                    crate::ggml::CONFIGS.to_vec()
                } else {
                    ggml_configs
                        .iter()
                        .map(|c| crate::ggml::Config::parse(c))
                        .collect::<Result<_, _>>()?
                };
                let build = crate::ggml::build::build(dir)?;
                // Which build runs (ci/gpu.sh stage reads this line to carry the libraries).
                eprintln!(
                    "ggml: tree {} uses the libraries in {} (build {})",
                    build.root.display(),
                    build.lib_dir.display(),
                    build.key
                );
                chosen
                    .into_iter()
                    .map(|c| crate::ggml::worker_env(&build, c))
                    .collect()
            } else if !ggml_configs.is_empty() {
                return Err("--config needs --ggml".into());
            } else if lavapipe_widths.is_empty() {
                vec![vec![]]
            } else {
                lavapipe_widths
                    .iter()
                    .map(|w| vec![("LP_NATIVE_VECTOR_WIDTH".to_string(), w.to_string())])
                    .collect()
            };
            // A time budget is shared evenly by every variant of every configuration; the case
            // count then only caps each variant.
            let runs = (selected.len() * configs.len()).max(1) as u32;
            let time_budget = time
                .as_deref()
                .map(parse_duration)
                .transpose()?
                .map(|t| t / runs);
            // None: the device's default ([`worker::cases_per_variant`]).
            let cases = match (time_budget, cases) {
                (Some(_), None) => Some(u32::MAX),
                (_, c) => c,
            };
            let settings = Settings {
                cases: cases.unwrap_or(worker::GPU_CASES),
                seed,
                shrink_budget,
                repro_dir: Some(out.join("repro")),
                time_budget,
                max_findings,
            };
            let plan = RunPlan {
                shaders: shader_dir(&target)?,
                target,
                devices,
                jobs,
                repeat: !no_repeat,
                repeat_every,
                in_process,
                cases,
            };
            let json_path = out.join("report.jsonl");
            let json = match JsonReport::create(&json_path) {
                Ok(j) => Some(j),
                Err(e) => {
                    eprintln!(
                        "vkdiff: cannot write {}: {e}; running without a report",
                        json_path.display()
                    );
                    None
                }
            };
            let json = Mutex::new(json);
            let mut reports = Vec::new();
            for env in &configs {
                plan.run(&selected, &settings, env, &mut reports, &json)?;
            }
            // Wall time, not the sum over variants: several devices run side by side.
            let wall = started.elapsed().as_secs_f64();
            print!("{}", campaign::table(&reports));
            let total: u32 = reports.iter().map(|r| r.cases).sum();
            println!(
                "{total} cases in {wall:.1}s ({:.0} cases/s)",
                total as f64 / wall.max(1e-9)
            );
            let distinct = crate::findings::distinct(&reports, &known);
            let stale = crate::findings::stale(&known, &distinct, &reports);
            print!("{}", campaign::findings_summary(&distinct, &stale));
            let errored = reports.iter().filter(|r| r.errored()).count();
            if errored > 0 {
                println!("{errored} variant runs had cases that could not run (err column)");
            }
            record(
                &json,
                &Line::Findings {
                    distinct: distinct.clone(),
                    stale: stale.iter().map(|k| (*k).clone()).collect(),
                },
            );
            if json
                .into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .is_some()
            {
                write_html(&json_path, &out.join("report.html"));
            }
            Ok(ExitCode::from(exit_status(&distinct, &reports)))
        }
        Command::Bench {
            target,
            against,
            ops,
            variant,
            row,
            repeats,
            warmup,
            rotations,
            rounds,
            config,
            quick,
            all,
            time_limit,
            time_wrong,
            host_only,
        } => {
            target.apply();
            crate::cases::select(&ops, None)?;
            if host_only {
                bench::host::run(&ops, variant.as_deref(), row.as_deref(), quick, all)?;
                return Ok(ExitCode::SUCCESS);
            }
            // --ggml: ggml in this process on the same device, timed per graph_compute, as the
            // "against" column; vkdiff's rows run on the configuration's path too.
            let (mut gpu, mut ggml) = match &target.ggml {
                Some(dir) => {
                    if against.is_some() {
                        return Err(
                            "--against and --ggml both name the other column: pick one".into()
                        );
                    }
                    let config = match config {
                        Some(c) => crate::ggml::Config::parse(&c)?,
                        None => crate::ggml::best_config(
                            Gpu::open(target.device.as_deref())
                                .map_err(|e| e.to_string())?
                                .caps(),
                        ),
                    };
                    let build = crate::ggml::build::build(dir)?;
                    let (gpu, driver) =
                        crate::ggml::open(target.device.as_deref(), &build.lib_dir, config)?;
                    (
                        gpu,
                        Some((
                            driver,
                            format!("ggml {} config {}", build.root.display(), config.name()),
                        )),
                    )
                }
                None if config.is_some() => return Err("--config needs --ggml".into()),
                None => (
                    Gpu::open(target.device.as_deref()).map_err(|e| e.to_string())?,
                    None,
                ),
            };
            // Every pipeline with its compiler statistics, printed after the table (the flag
            // must not change the compiled code, so the timings stay those of plain pipelines).
            gpu.set_capture_statistics(true);
            let mut tree = ShaderTree::new(shader_dir(&target)?);
            let mut other = against.map(ShaderTree::new);
            let other_name = other
                .as_ref()
                .map(|o| o.dir().display().to_string())
                .or_else(|| ggml.as_ref().map(|g| g.1.clone()));
            println!(
                "device: {} ({}), shaders: {}{}",
                gpu.caps().name,
                gpu.caps().class(),
                tree.dir().display(),
                other_name
                    .as_ref()
                    .map(|o| format!(", against {o}"))
                    .unwrap_or_default()
            );
            if ggml.is_some() {
                println!("(the ggml column is the median wall time of ggml_backend_graph_compute: command recording, submit and wait included; ours is GPU timestamps)");
            }
            // Clocks up first: the ceilings and every timed job are measured at them.
            bench::start_heater(&mut gpu, target.device.as_deref());
            if let Some((driver, _)) = ggml.as_mut() {
                driver.timing = Some(crate::ggml::ffi::Timing {
                    warmup,
                    repeats,
                    heater: gpu.heater(),
                });
            }
            let ceilings =
                bench::ceilings(&mut gpu, &mut ShaderTree::new(crate::default_shader_dir()));
            let mode = BenchMode {
                warmup,
                repeats,
                rotations,
            };
            let against_name = other_name.clone();
            // Rows are printed as they are measured: a run stopped at a time limit keeps them.
            print!(
                "{}",
                bench::table_header(&ceilings, against_name.as_deref())
            );
            let mut rows = Vec::new();
            let started = std::time::Instant::now();
            let mut left_out = 0;
            for b in bench::cases(quick, all, crate::findings::host_cores(gpu.caps())) {
                let name = b.case.variant();
                if !(ops.is_empty() || ops.iter().any(|o| o == b.kernel))
                    || !kernels::name_matches(variant.as_deref(), &name)
                    || row.as_deref().is_some_and(|f| !b.label.contains(f))
                {
                    continue;
                }
                if time_limit.is_some_and(|t| started.elapsed().as_secs() >= t) {
                    left_out += 1;
                    continue;
                }
                let row_start = std::time::Instant::now();
                // Every round and tree evaluates the same case: generate its inputs once.
                crate::cases::data::keep_tensors(true);
                // Interleaved rounds: a drift of the device (clocks, heat, other users) reaches
                // both trees alike instead of whichever ran second.
                let (mut ours, mut theirs) = (Vec::new(), Vec::new());
                for round in 0..rounds.max(1) {
                    let mut theirs_now = |gpu: &mut Gpu| {
                        if let Some(o) = other.as_mut() {
                            theirs.push(bench::time(gpu, o, &b.case, mode, time_wrong));
                        } else if let Some((driver, _)) = ggml.as_mut() {
                            // The heater pauses for ggml's computes only (ffi::Timing).
                            theirs.push(bench::time_driver(driver, &b.case));
                        }
                    };
                    if round % 2 == 1 {
                        theirs_now(&mut gpu);
                    }
                    ours.push(bench::time(&mut gpu, &mut tree, &b.case, mode, time_wrong));
                    if round % 2 == 0 {
                        theirs_now(&mut gpu);
                    }
                    if ours.last().is_some_and(|t| t.ns.is_none()) {
                        break; // wrong or skipped: another round says the same
                    }
                }
                crate::cases::data::keep_tensors(false);
                let t = bench::Timing::rounds(&ours);
                // Our shader tree against another tree or ggml's own backend.
                let o = other_name.is_some().then(|| bench::Timing::rounds(&theirs));
                // What a row costs the host (inputs, reference, uploads), for sizing a run.
                eprintln!(
                    "{name} {}: row took {:.1} s",
                    b.label,
                    row_start.elapsed().as_secs_f64()
                );
                print!("{}", bench::table_row(&b, &name, &t, o.as_ref(), &ceilings));
                std::io::stdout().flush().ok();
                rows.push((b, name, t, o));
            }
            if left_out > 0 {
                println!("time limit: {left_out} rows not started");
            }
            print!("{}", bench::statistics(&rows, gpu.captures_statistics()));
            print!("{}", bench::summary(&rows, &ceilings));
            Ok(if rows.iter().all(|r| r.2.status == "ok") {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::FuzzRepro {
            kernel,
            artifact,
            out,
        } => {
            if kernel != fuzzing::ANY {
                crate::cases::select(std::slice::from_ref(&kernel), None)?;
            }
            let data =
                std::fs::read(&artifact).map_err(|e| format!("{}: {e}", artifact.display()))?;
            let case = fuzzing::case_from_bytes(&kernel, &data)
                .ok_or_else(|| format!("{kernel} has no variants"))?;
            let finding = format!("found by cargo fuzz: {}", artifact.display());
            let path = fuzzing::reproducer(&case, finding, "", "")
                .write(&out)
                .map_err(|e| format!("{}: {e}", out.display()))?;
            println!(
                "case: {case}\nreproducer: {}\nreplay with: vkdiff replay {}",
                path.display(),
                path.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Report { file, html, known } => {
            let mut lines = report::read(&file)?;
            // The findings are matched again against today's known list.
            let reports: Vec<VariantReport> = lines
                .iter()
                .filter_map(|l| match l {
                    Line::Variant(v) => Some((**v).clone()),
                    _ => None,
                })
                .collect();
            // As in `run`: the default known list is for upstream trees only.
            let known = if known.is_none() && own_shaders_run(&lines) {
                Vec::new()
            } else {
                load_known(known)?
            };
            let distinct = crate::findings::distinct(&reports, &known);
            let stale = crate::findings::stale(&known, &distinct, &reports);
            print!("{}", campaign::findings_summary(&distinct, &stale));
            let status = exit_status(&distinct, &reports);
            lines.retain(|l| !matches!(l, Line::Findings { .. }));
            lines.push(Line::Findings {
                distinct,
                stale: stale.into_iter().cloned().collect(),
            });
            let html = html.unwrap_or_else(|| file.with_extension("html"));
            std::fs::write(&html, report::html(&lines))
                .map_err(|e| format!("{}: {e}", html.display()))?;
            println!("wrote {}", html.display());
            Ok(ExitCode::from(status))
        }
        Command::Diff { a, b } => {
            let (changes, common) = crate::diff::diff(&a, &b)?;
            for c in &changes {
                let (kernel, variant, config, case) = &c.key;
                println!("{kernel} {variant} [{config}] {case}: {} → {}", c.a, c.b);
                if let Some(d) = &c.detail {
                    for l in d.lines().take(3) {
                        println!("    {l}");
                    }
                }
            }
            println!(
                "{} of {common} common cases differ ({} lines in all); A = {}, B = {}",
                changes
                    .iter()
                    .filter(|c| c.a != "absent" && c.b != "absent")
                    .count(),
                changes.len(),
                a.display(),
                b.display()
            );
            Ok(if changes.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Worker {
            target,
            no_repeat,
            repeat_every,
        } => {
            let env = vkdiff_gpu::env::env();
            let served = match &env.ggml_lib {
                Some(lib) => worker::WorkerTarget::Ggml {
                    lib_dir: lib.into(),
                    config: env.ggml_config.clone(),
                },
                None => worker::WorkerTarget::Shaders(shader_dir(&target)?),
            };
            worker::serve(target.device.as_deref(), served, !no_repeat, repeat_every)
                .map_err(|e| format!("worker: {e}"))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Replay {
            file,
            mut target,
            config,
        } => {
            target.apply();
            let repro = Reproducer::read(&file)?;
            // The recorded target unless the command line names another.
            if target.shaders.is_none()
                && !repro.shaders.is_empty()
                && target.ggml.is_none()
                && repro.ggml.is_none()
            {
                let recorded = PathBuf::from(&repro.shaders);
                if !recorded.is_dir() {
                    return Err(format!(
                        "the reproducer ran on shader tree {}, which is not here: pass --shaders DIR",
                        recorded.display()
                    ));
                }
                target.shaders = Some(recorded);
            }
            if target.ggml.is_none() {
                target.ggml = repro.ggml.as_ref().map(|g| PathBuf::from(&g.tree));
            }
            let outcome = if let Some(dir) = &target.ggml {
                let config = config
                    .or_else(|| repro.ggml.as_ref().map(|g| g.config.clone()))
                    .ok_or(
                        "this reproducer ran on vkdiff's runners: name the path with --config",
                    )?;
                let config = crate::ggml::Config::parse(&config)?;
                let build = crate::ggml::build::build(dir)?;
                let env = crate::ggml::worker_env(&build, config);
                let mut args = Vec::new();
                if let Some(d) = &target.device {
                    args.extend(["--device".to_string(), d.clone()]);
                }
                // A worker process, as in the campaign: ggml reads its switches once per process
                // and aborts on errors, which the worker turns into a crash outcome.
                let mut w = Worker::new(
                    crate::worker::own_executable()?,
                    args,
                    env.clone(),
                    String::new(),
                )?;
                w.real_graphs = true;
                println!(
                    "replaying {} on {} through {}",
                    repro.variant,
                    w.caps().name,
                    crate::ggml::label(&env).unwrap_or_default()
                );
                println!("case: {}", repro.case);
                w.evaluate(&repro.case)
            } else if config.is_some() {
                return Err("--config needs --ggml (or a backend-mode reproducer)".into());
            } else {
                let mut gpu = Gpu::open(target.device.as_deref()).map_err(|e| e.to_string())?;
                let mut tree = ShaderTree::new(shader_dir(&target)?);
                println!(
                    "replaying {} on {} with {}",
                    repro.variant,
                    gpu.caps().name,
                    tree.dir().display()
                );
                println!("case: {}", repro.case);
                crate::exec::own::evaluate(&repro.case, &mut gpu, &mut tree, true)
            };
            match outcome {
                Outcome::Pass { verdict, .. } => {
                    println!(
                        "PASS: {} elements, worst error/bound {:.3}",
                        verdict.elements, verdict.worst_ratio
                    );
                    if let Some(w) = &verdict.worst {
                        println!("worst element: {w}");
                    }
                    Ok(ExitCode::SUCCESS)
                }
                outcome if outcome.is_failure() => {
                    print!("FAIL: {}", outcome.explain());
                    Ok(ExitCode::FAILURE)
                }
                other => Err(other.explain().trim_end().to_string()),
            }
        }
        Command::Mutate {
            target,
            ops,
            variant,
            files,
            cases,
            budget,
            time,
            seed,
            out,
            case_timeout,
            no_repeat,
            equivalent,
        } => {
            if let Some(dir) = &target.ggml {
                return Err(format!(
                    "mutate does not take --ggml: ggml compiles its shaders into libggml-vulkan, so \
every mutant would be a rebuild of the library (minutes to tens of minutes each, \
docs/ggml-backend.md). Mutate the tree's shaders in shader mode instead: \
vkdiff mutate --shaders {}/src/ggml-vulkan/vulkan-shaders",
                    crate::ggml::build::ggml_root(dir)
                        .unwrap_or_else(|_| dir.clone())
                        .display()
                ));
            }
            target.apply();
            let shaders = shader_dir(&target)?;
            let equivalent = match equivalent {
                Some(path) => Some(path),
                None => {
                    Some(crate::mutate::default_equivalence_file(&shaders)).filter(|p| p.is_file())
                }
            };
            let equivalent = match equivalent {
                Some(path) => std::fs::read_to_string(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))
                    .and_then(|t| crate::mutate::parse_equivalences(&t))
                    .map_err(|e| format!("{}: {e}", path.display()))?,
                None => Vec::new(),
            };
            let case_timeout = match case_timeout {
                Some(s) if !(s.is_finite() && s > 0.0) => {
                    return Err(format!(
                        "--case-timeout {s} is not a positive number of seconds"
                    ))
                }
                s => s.map(Duration::from_secs_f64),
            };
            let opts = crate::mutate::Options {
                shaders,
                device: target.device.clone(),
                ops,
                variant,
                files,
                cases,
                budget,
                time: time.as_deref().map(parse_duration).transpose()?,
                seed,
                out,
                case_timeout,
                repeat: !no_repeat,
                equivalent,
            };
            let report = crate::mutate::run(&opts)?;
            print!("{}", crate::mutate::table(&report));
            println!("mutants: {}", opts.out.join("mutants.json").display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Devices => {
            let instance = Instance::new().map_err(|e| e.to_string())?;
            for a in instance.adapters().map_err(|e| e.to_string())? {
                println!("[{}] {}", a.index, a.caps);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::List => {
            for k in KERNELS {
                println!(
                    "{} ({}): {}\n  error model: {}",
                    k.name, k.shader, k.summary, k.error_model
                );
                for v in (k.variants)() {
                    println!("  - {}", v.name);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
