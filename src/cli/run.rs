//! `vkdiff run`: the differential campaign over the selected variants, on one or more devices
//! and, with `--ggml`, under each path configuration of ggml's own backend.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use vkdiff_gpu::{Gpu, ShaderTree};

use super::{exit_status, load_known, shader_dir, Target};
use crate::campaign::{self, CaseRecord, Settings, VariantReport};
use crate::cases::Kernel;
use crate::kernels::Variant;
use crate::report::{self, JsonReport, Line};
use crate::worker::{self, Evaluator, InProcess, Setup, Worker};

/// `run`'s options, checked (see [`super::Command::Run`] for each flag's meaning).
#[allow(missing_docs)]
pub struct Args {
    pub target: Target,
    pub cases: Option<u32>,
    pub time: Option<Duration>,
    /// `--shard i/n` as (i, n), i < n.
    pub shard: Option<(usize, usize)>,
    pub devices: Vec<String>,
    pub jobs: Option<usize>,
    pub seed: u64,
    pub ops: Vec<String>,
    pub variant: Option<String>,
    pub out: PathBuf,
    pub shrink_budget: u32,
    pub max_findings: u32,
    pub known: Option<PathBuf>,
    pub no_repeat: bool,
    pub repeat_every: Option<u64>,
    pub in_process: bool,
    pub lavapipe_widths: Vec<u32>,
    pub ggml_configs: Vec<String>,
    /// `--junit FILE`.
    pub junit: Option<PathBuf>,
}

/// Runs the campaign; the exit status is [`exit_status`]'s.
pub fn run(args: Args) -> Result<ExitCode, String> {
    let Args {
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
        ggml_configs,
        junit,
    } = args;
    target.apply();
    // The known list describes upstream trees: a run of vkdiff's own shaders has none
    // unless --known names a file, so no upstream entry ever excuses a bug of ours.
    let known = if known.is_none() && target.tests_own_shaders() {
        Vec::new()
    } else {
        load_known(known)?
    };
    let started = std::time::Instant::now();
    // A filter that matches nothing is an error; an empty shard is not (a CI matrix may have
    // more shards than a small selection has variants).
    let all_selected = crate::cases::select(&ops, variant.as_deref())?;
    let mut selected = all_selected.clone();
    if let Some((i, n)) = shard {
        // Variant i of the selection runs on shard i mod n: several machines, one campaign.
        selected = selected
            .into_iter()
            .enumerate()
            .filter(|(k, _)| k % n == i)
            .map(|(_, v)| v)
            .collect();
        if selected.is_empty() {
            println!(
                "shard {i}/{n} holds none of the {} selected variants",
                all_selected.len()
            );
        }
    }
    let configs: Vec<Setup> = if let Some(dir) = &target.ggml {
        if in_process || !lavapipe_widths.is_empty() {
            return Err("--ggml runs one worker process per configuration: drop --in-process and --lavapipe-widths".into());
        }
        let chosen = if ggml_configs.is_empty() {
            crate::ggml::DEFAULT_CONFIGS.to_vec()
        } else {
            ggml_configs
                .iter()
                .map(|c| crate::ggml::Config::parse(c))
                .collect::<Result<_, _>>()?
        };
        check_configs(&all_selected, &chosen, !ggml_configs.is_empty())?;
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
            .map(|c| Setup {
                ggml: Some(crate::ggml::GgmlSetup::of(&build, c)),
                ..Setup::default()
            })
            .collect()
    } else if !ggml_configs.is_empty() {
        return Err("--config needs --ggml".into());
    } else if lavapipe_widths.is_empty() {
        vec![Setup::default()]
    } else {
        lavapipe_widths
            .iter()
            .map(|w| Setup {
                driver_env: vec![("LP_NATIVE_VECTOR_WIDTH".to_string(), w.to_string())],
                ..Setup::default()
            })
            .collect()
    };
    // A time budget is shared evenly by every variant of every configuration; the case
    // count then only caps each variant.
    let runs = (selected.len() * configs.len()).max(1) as u32;
    let time_budget = time.map(|t| t / runs);
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
    for setup in &configs {
        plan.run(&selected, &settings, setup, &mut reports, &json)?;
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
        print_coverage(&json_path, &out.join("coverage.txt"));
        write_html(&json_path, &out.join("report.html"));
    }
    if let Some(path) = &junit {
        write_junit(path, &reports, &distinct, None)?;
    }
    Ok(ExitCode::from(exit_status(&distinct, &reports)))
}

/// Writes JUnit XML ([`report::junit`]) to `path`, creating its folder.
pub(super) fn write_junit(
    path: &std::path::Path,
    reports: &[VariantReport],
    distinct: &[crate::findings::Distinct],
    sources: Option<&[String]>,
) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, report::junit(reports, distinct, sources))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    println!("junit: {}", path.display());
    Ok(())
}

/// Err when `--config` was given (`explicit`) and every selected variant is one ggml runs on
/// another path under each chosen configuration: such a run would skip everything.
fn check_configs(
    selected: &[(&'static Kernel, Variant)],
    chosen: &[crate::ggml::Config],
    explicit: bool,
) -> Result<(), String> {
    if !explicit || selected.is_empty() {
        return Ok(());
    }
    // A configuration that lets ggml pick its family may run anything; a forced family runs
    // the variants of its path.
    let runs_any = |c: &crate::ggml::Config| {
        c.forced_family().is_none_or(|f| {
            selected
                .iter()
                .any(|(_, v)| crate::ggml::variant_skip(f, v).is_none())
        })
    };
    if chosen.iter().any(runs_any) {
        return Ok(());
    }
    let names: Vec<&str> = chosen.iter().map(|c| c.name()).collect();
    let others: Vec<&str> = crate::ggml::CONFIGS
        .iter()
        .filter(|c| runs_any(c))
        .map(|c| c.name())
        .collect();
    Err(format!(
        "--config {} selects nothing: ggml runs none of the {} selected variants on that path{}",
        names.join(","),
        selected.len(),
        if others.is_empty() {
            String::new()
        } else {
            format!("; configurations that run some: {}", others.join(", "))
        }
    ))
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
    /// Runs every selected variant on `setup` (a lavapipe configuration, a ggml build and
    /// configuration, or nothing), spread over the devices, and appends the reports in selection
    /// order.
    fn run(
        &self,
        selected: &[(&'static Kernel, Variant)],
        settings: &Settings,
        setup: &Setup,
        reports: &mut Vec<VariantReport>,
        json: &Mutex<Option<JsonReport>>,
    ) -> Result<(), String> {
        let label = setup.label();
        let shared = Shared {
            queue: Mutex::new(selected.iter().enumerate().collect()),
            reports: Mutex::new(Vec::new()),
            json,
            bars: indicatif::MultiProgress::new(),
        };
        if self.in_process {
            if !setup.is_empty() || self.devices.len() > 1 {
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
                        scope.spawn(|| self.worker(d.as_deref(), setup, settings, &label, &shared))
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
        setup: &Setup,
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
        let start = || {
            Worker::new(
                exe.clone(),
                args.clone(),
                setup.clone(),
                self.shaders.display().to_string(),
            )
        };
        let first = match (start(), &setup.ggml) {
            (Ok(w), _) => w,
            (Err(e), Some(_)) => {
                // A configuration the device or build lacks: every variant is a visible skip.
                Self::skip_all(shared, settings, label, &e);
                return Ok(());
            }
            (Err(e), None) => return Err(format!("device {}: {e}", device.unwrap_or("default"))),
        };
        if let Some(g) = &setup.ggml {
            record(
                shared.json,
                &Line::Coverage(Box::new(coverage_of(g, first.caps(), label))),
            );
        }
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

/// The coverage denominator of a ggml configuration, from its library and the device as the
/// configuration leaves it (`caps`, a worker's).
fn coverage_of(
    g: &crate::ggml::GgmlSetup,
    caps: &vkdiff_gpu::DeviceCaps,
    label: &str,
) -> report::Coverage {
    use crate::ggml::modules;
    match modules::Modules::read(&g.lib_dir) {
        Ok(m) => {
            // Facts of the configuration and the tree beside the device's.
            let has = |change: &str| {
                crate::campaign::findings::scope_term_holds(&format!("has:{change}"), label)
            };
            let facts = modules::Facts {
                mmvq_forced: g.config == crate::ggml::Config::ForceMmvq,
                q6_mmvq_intel_only: has("mmvq-q6-intel"),
                quantizer_x4_only: has("quantize-x4-only"),
                ..modules::Facts::of(caps)
            };
            let (possible, excluded) = modules::possible(&m.names, &facts);
            report::Coverage {
                config: label.to_string(),
                possible,
                excluded,
                note: None,
            }
        }
        Err(e) => report::Coverage {
            config: label.to_string(),
            note: Some(format!("no pipeline names: {e}")),
            ..Default::default()
        },
    }
}

/// Backend mode: prints each configuration's pipeline coverage and writes the full lists to
/// `txt` (nothing for a run without coverage lines).
fn print_coverage(json: &std::path::Path, txt: &std::path::Path) {
    if let Ok(lines) = report::read(json) {
        print_coverage_of(&lines, txt);
    }
}

/// [`print_coverage`] over lines already read (also `vkdiff report`'s, so a run stopped at its
/// time limit still gets its coverage table).
pub(super) fn print_coverage_of(lines: &[Line], txt: &std::path::Path) {
    let covered = report::coverage(lines);
    if covered.is_empty() {
        return;
    }
    print!("{}", report::coverage_summary(&covered));
    if let Err(e) = std::fs::write(txt, report::coverage_text(&covered)) {
        eprintln!("vkdiff: {}: {e}", txt.display());
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
