//! `vkdiff bench`: kernels timed on realistic LLM shapes against the device's measured
//! ceilings, optionally against a second shader tree or ggml's own backend.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use vkdiff_gpu::context::BenchMode;
use vkdiff_gpu::{Gpu, ShaderTree};

use super::{shader_dir, Target};
use crate::bench;
use crate::kernels;

/// `bench`'s options (see [`super::Command::Bench`] for each flag's meaning).
#[allow(missing_docs)]
pub struct Args {
    pub target: Target,
    pub against: Option<PathBuf>,
    pub ops: Vec<String>,
    pub variant: Option<String>,
    pub row: Option<String>,
    pub rounds: u32,
    pub repeats: u32,
    pub warmup: u32,
    pub rotations: u32,
    pub config: Option<String>,
    pub quick: bool,
    pub all: bool,
    pub time_limit: Option<u64>,
    pub time_wrong: bool,
    pub host_only: bool,
    pub ggml_cpu: Option<PathBuf>,
}

/// Times the selected rows; exit status 1 when a row is not `ok`.
pub fn run(args: Args) -> Result<ExitCode, String> {
    let Args {
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
        ggml_cpu,
    } = args;
    target.apply();
    check_selection(&ops, variant.as_deref(), row.as_deref(), quick, all)?;
    if let Some(dir) = &ggml_cpu {
        if host_only || against.is_some() || target.ggml.is_some() {
            return Err(
                "--ggml-cpu is a mode of its own: not with --host-only, --against or --ggml".into(),
            );
        }
        crate::bench::ggml_cpu::run(
            dir,
            &ops,
            variant.as_deref(),
            row.as_deref(),
            quick,
            all,
            rounds,
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    if host_only {
        crate::bench::host::run(&ops, variant.as_deref(), row.as_deref(), quick, all)?;
        return Ok(ExitCode::SUCCESS);
    }
    // --ggml: ggml in this process on the same device, timed per graph_compute, as the
    // "against" column; vkdiff's rows run on the configuration's path too.
    let (mut gpu, mut ggml) = match &target.ggml {
        Some(dir) => {
            if against.is_some() {
                return Err("--against and --ggml both name the other column: pick one".into());
            }
            let config = match config {
                Some(c) => crate::ggml::Config::parse(&c)?,
                // What users run: ggml's own choices.
                None => crate::ggml::Config::Default,
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
    let ceilings = bench::ceilings(&mut gpu, &mut ShaderTree::new(crate::default_shader_dir()));
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
        if !selected(&b, &name, &ops, variant.as_deref(), row.as_deref()) {
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

/// Whether a bench row is selected by `--op`, `--variant` and `--row`.
fn selected(
    b: &bench::BenchCase,
    name: &str,
    ops: &[String],
    variant: Option<&str>,
    row: Option<&str>,
) -> bool {
    (ops.is_empty() || ops.iter().any(|o| o == b.kernel))
        && kernels::name_matches(variant, name)
        && row.is_none_or(|f| b.label.contains(f))
}

/// Err (before the device is opened) when `--op`, `--variant` and `--row` together select no
/// row, naming the filter that emptied the selection and the closest names. The rows' names
/// and labels do not depend on the device (only their sizes on an H100/H200).
fn check_selection(
    ops: &[String],
    variant: Option<&str>,
    row: Option<&str>,
    quick: bool,
    all: bool,
) -> Result<(), String> {
    crate::cases::select(ops, None)?;
    let rows = bench::cases(quick, all, None);
    let names: Vec<String> = rows.iter().map(|b| b.case.variant()).collect();
    let of_ops: Vec<(&bench::BenchCase, &str)> = rows
        .iter()
        .zip(&names)
        .filter(|(b, n)| selected(b, n, ops, None, None))
        .map(|(b, n)| (b, n.as_str()))
        .collect();
    if of_ops.is_empty() {
        return Err(format!("no bench row{}", kernels::ops_scope(ops)));
    }
    let mut variant_names: Vec<&str> = of_ops.iter().map(|(_, n)| *n).collect();
    variant_names.dedup();
    kernels::check_filter(
        "--variant",
        variant,
        &variant_names,
        &format!(" of the bench rows{}", kernels::ops_scope(ops)),
    )?;
    let labels: Vec<&str> = of_ops
        .iter()
        .filter(|(b, n)| selected(b, n, ops, variant, None))
        .map(|(b, _)| b.label.as_str())
        .collect();
    if let Some(r) = row {
        if !labels.iter().any(|l| l.contains(r)) {
            let close: Vec<&str> = kernels::closest_names(r, labels.iter().copied())
                .into_iter()
                .map(|(_, l)| l)
                .take(5)
                .collect();
            return Err(format!(
                "--row {r:?} selects nothing: no label of the {} rows selected contains it{}",
                labels.len(),
                if close.is_empty() {
                    String::new()
                } else {
                    format!("; closest: {}", close.join(" | "))
                }
            ));
        }
    }
    Ok(())
}
