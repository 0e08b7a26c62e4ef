//! The vkdiff command line. This module holds the parser (`Cli`, `Command`: the raw flags, as
//! clap reads them), the checks that turn flags into each subcommand's typed `Args`, and
//! [`run`], which dispatches to one module per subcommand. Parsing is separate from running so
//! tests and fuzz targets can drive the real parser.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::report::Line;

pub mod bench;
pub mod devices;
pub mod diff;
pub mod fuzz_repro;
pub mod list;
pub mod mutate;
pub mod replay;
pub mod report;
pub mod run;
pub mod worker;

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
        /// With --ggml: the path configurations to run, each in its own process: default
        /// (ggml's own choices), intdot (the same on a device reporting integer-dot
        /// acceleration), force-mmvq, no-intdot, no-fusion, and the shader families
        /// scalar-fp32, scalar-fp16, cm1, cm2 (each forced, production paths off). Without it:
        /// default, intdot and the four families; one the device or build lacks is a skip.
        #[arg(long = "config", value_delimiter = ',')]
        configs: Vec<String>,
        /// Also write JUnit XML of the variant runs to this file (for CI test reporters): one
        /// testsuite per kernel, one testcase per variant, failures with the replay command.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
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
        /// With --ggml: the one path configuration to time under (default: `default`, ggml's
        /// own choices); vkdiff's own rows take the same shader family.
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
        /// No GPU: time each row's reference (rayon, every core) against ggml's CPU backend,
        /// built from this ggml or llama.cpp checkout (cached), on the same inputs and thread
        /// count; `--rounds` back-to-back rounds, medians (`bench::ggml_cpu`).
        #[arg(long, value_name = "DIR")]
        ggml_cpu: Option<PathBuf>,
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
    /// Build the HTML report from a report.jsonl (also one cut short by a crash), or merge
    /// several (shards, devices, trees, configurations) into one: the distinct findings across
    /// all of them, each with where it was seen, and the per-variant counts summed.
    Report {
        /// The report.jsonl files runs wrote.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Where to write the HTML (default: next to FILE, .html; with several files or --out:
        /// DIR/report.html).
        #[arg(long)]
        html: Option<PathBuf>,
        /// Output folder of the merged report (report.html); needed with several files unless
        /// --html names the page.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Match the findings against this known-findings file (default: known-findings.txt
        /// of this checkout, else the built-in list) and print the distinct findings; exits as `run` would.
        #[arg(long)]
        known: Option<PathBuf>,
        /// Also write JUnit XML of the variant runs to this file (for CI test reporters).
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
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

/// Runs a parsed command: checks its flags into the subcommand's typed arguments and calls the
/// subcommand's module. The error is a message for the user (exit status 2).
pub fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Run {
            target,
            cases,
            time,
            shard,
            devices,
            jobs,
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
            configs,
            junit,
        } => run::run(run::Args {
            target,
            cases,
            time: time.as_deref().map(parse_duration).transpose()?,
            shard: shard.as_deref().map(parse_shard).transpose()?,
            devices,
            jobs,
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
            ggml_configs: configs,
            junit,
        }),
        Command::Replay {
            file,
            target,
            config,
        } => replay::run(replay::Args {
            file,
            target,
            config,
        }),
        Command::Bench {
            target,
            against,
            ops,
            variant,
            row,
            rounds,
            repeats,
            warmup,
            rotations,
            config,
            quick,
            all,
            time_limit,
            time_wrong,
            host_only,
            ggml_cpu,
        } => bench::run(bench::Args {
            target,
            against,
            ops,
            variant,
            row,
            rounds,
            repeats,
            warmup,
            rotations,
            config,
            quick,
            all,
            time_limit,
            time_wrong,
            host_only,
            ggml_cpu,
        }),
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
        } => mutate::run(mutate::Args {
            target,
            ops,
            variant,
            files,
            cases,
            budget,
            time: time.as_deref().map(parse_duration).transpose()?,
            seed,
            out,
            case_timeout: match case_timeout {
                Some(s) if !(s.is_finite() && s > 0.0) => {
                    return Err(format!(
                        "--case-timeout {s} is not a positive number of seconds"
                    ))
                }
                s => s.map(Duration::from_secs_f64),
            },
            no_repeat,
            equivalent,
        }),
        Command::Devices => devices::run(),
        Command::List => list::run(),
        Command::FuzzRepro {
            kernel,
            artifact,
            out,
        } => fuzz_repro::run(fuzz_repro::Args {
            kernel,
            artifact,
            out,
        }),
        Command::Diff { a, b } => diff::run(diff::Args { a, b }),
        Command::Report {
            files,
            html,
            out,
            known,
            junit,
        } => report::run(report::Args {
            files,
            html,
            out,
            known,
            junit,
        }),
        Command::Worker {
            target,
            no_repeat,
            repeat_every,
        } => worker::run(worker::Args {
            target,
            no_repeat,
            repeat_every,
        }),
    }
}
