//! `vkdiff bench`: each kernel × variant on realistic LLM shapes, timed with GPU timestamps (the
//! median of repeated runs after warm-up, inputs rotated between repetitions so caches do not
//! flatter), reported as time, GB/s and GFLOP/s and as a share of ceilings vkdiff measures on the
//! same device with its own copy and FMA shaders. A second shader tree (`--against`) is timed on
//! the same cases and compared as a ratio. Every timed run is also checked against the reference:
//! a fast wrong kernel is reported as wrong. After the table come the driver's compiler
//! statistics of every pipeline the rows timed, where the device reports them ([`statistics`]).

use std::fmt::Write as _;

use vkdiff_gpu::context::{BenchMode, PipelineDesc};
use vkdiff_gpu::statistics::PipelineStatistics;
use vkdiff_gpu::{Gpu, ShaderTree, ShaderVariant};

use crate::cases::{Case, Outcome};

pub mod ggml_cpu;
pub mod host;

pub use crate::model::work::{quick_dim, BenchShapes, Work};

/// The minimum work of a case, for kernels that define it.
pub fn work(case: &Case) -> Option<Work> {
    case.model().work()
}

/// A benchmark: a labelled case.
#[derive(Debug, Clone)]
pub struct BenchCase {
    /// Kernel name.
    pub kernel: &'static str,
    /// What the shape stands for.
    pub label: String,
    /// The case.
    pub case: Case,
}

/// The bench rows: each kernel's realistic LLM shapes ([`KernelDef::bench_rows`]: a 7–8B model
/// with hidden 4096, FFN 14336 and 32 query heads over 8 KV heads, and a Qwen3-30B-A3B-like MoE),
/// kernels in [`KernelDef::BENCH_ORDER`], mat-vec first: where a decode step spends its time.
/// `quick` keeps every row but shrinks its large dimensions ([`quick_dim`]), a smoke test of the
/// rows rather than a measurement; `host_cores` lets a decode row split as upstream's host does
/// on the device ([`BenchShapes::host_cores`]).
///
/// [`KernelDef::bench_rows`]: crate::model::kernels::KernelDef::bench_rows
/// [`KernelDef::BENCH_ORDER`]: crate::model::kernels::KernelDef::BENCH_ORDER
pub fn cases(quick: bool, all: bool, host_cores: Option<u32>) -> Vec<BenchCase> {
    let shapes = BenchShapes {
        quick,
        all,
        host_cores,
    };
    let mut kernels: Vec<_> = crate::model::cases::KERNELS.iter().collect();
    kernels.sort_by_key(|k| k.bench_order);
    kernels
        .into_iter()
        .flat_map(|k| {
            (k.bench_rows)(&shapes)
                .into_iter()
                .map(|(label, case)| BenchCase {
                    kernel: k.name,
                    label,
                    case,
                })
        })
        .collect()
}

/// Ceilings measured on the device with vkdiff's own shaders.
#[derive(Debug, Clone)]
pub struct Ceilings {
    /// Shader copy bandwidth, bytes read + written per second, in GB/s.
    pub copy_gbps: Option<f64>,
    /// f32 FMA throughput in GFLOP/s (scalar ALUs; no cooperative matrices).
    pub fma_gflops: Option<f64>,
    /// Cooperative-matrix f16×f16→f32 throughput in GFLOP/s, or why there is none.
    pub coopmat_gflops: Result<f64, String>,
}

impl Default for Ceilings {
    fn default() -> Self {
        Ceilings {
            copy_gbps: None,
            fma_gflops: None,
            coopmat_gflops: Err("not measured".into()),
        }
    }
}

/// Runs one of the ceiling shaders, growing the problem until a run takes at least 20 ms, and
/// returns (work units per ns) as measured by the median of timed repetitions.
#[allow(clippy::too_many_arguments)] // one call per ceiling
fn ceiling(
    gpu: &mut Gpu,
    tree: &mut ShaderTree,
    file: &str,
    spec: Vec<u32>,
    subgroup_size: Option<u32>,
    mut size: u32,
    max: u32,
    run: impl Fn(&mut Gpu, vkdiff_gpu::context::Pipeline, u32) -> vkdiff_gpu::Result<(f64, Option<f64>)>,
) -> vkdiff_gpu::Result<Option<f64>> {
    let variant = ShaderVariant::new(file.trim_end_matches(".comp"), file, &[]);
    let bindings = if file == "bench_copy.comp" { 2 } else { 1 };
    let desc = PipelineDesc {
        variant: &variant,
        spec,
        push_size: 4,
        bindings,
        disable_robustness: false,
        full_subgroups: subgroup_size.is_some(),
        subgroup_size,
    };
    let pipeline = gpu.pipeline(tree, &desc)?;
    gpu.set_bench(Some(BenchMode {
        warmup: 2,
        repeats: 9,
        rotations: 1,
    }));
    let mut best = None;
    for _ in 0..8 {
        let (units, ns) = run(gpu, pipeline, size)?;
        let Some(ns) = ns else { break };
        // The ladder shows the fixed cost of one dispatch (small sizes) next to the rate.
        eprintln!(
            "ceiling {file}: size {size}: {:.1} µs, {:.1} units/ns",
            ns / 1e3,
            units / ns
        );
        best = Some(units / ns);
        if ns >= 20e6 || size >= max {
            break;
        }
        size = (size * 4).min(max);
    }
    gpu.set_bench(None);
    Ok(best)
}

/// Measures the copy and FMA ceilings with `shaders/bench_copy.comp` and `bench_fma.comp`.
pub fn ceilings(gpu: &mut Gpu, tree: &mut ShaderTree) -> Ceilings {
    let max_vec4 = (gpu.caps().max_storage_buffer_range / 16).min(1 << 24);
    let copy = ceiling(
        gpu,
        tree,
        "bench_copy.comp",
        vec![],
        None,
        1 << 16,
        max_vec4,
        |gpu, p, count| {
            let bytes = count as usize * 16;
            let mut job = gpu.job();
            let (src, dst) = (job.input(&vec![0x5a; bytes]), job.output(bytes));
            job.dispatch(
                p,
                &[src, dst],
                &[count],
                [count.div_ceil(256).min(65535), 1, 1],
            )?;
            Ok((2.0 * bytes as f64, job.submit()?.gpu_ns))
        },
    );
    let fma = ceiling(
        gpu,
        tree,
        "bench_fma.comp",
        vec![],
        None,
        16,
        65535,
        |gpu, p, groups| {
            let iterations = 256u32;
            let mut job = gpu.job();
            let out = job.output(groups as usize * 256 * 4);
            job.dispatch(p, &[out], &[iterations], [groups, 1, 1])?;
            Ok((
                groups as f64 * 256.0 * iterations as f64 * 64.0,
                job.submit()?.gpu_ns,
            ))
        },
    );
    Ceilings {
        copy_gbps: copy.ok().flatten(),
        fma_gflops: fma.ok().flatten(),
        coopmat_gflops: coopmat_ceiling(gpu, tree),
    }
}

/// Starts a heater thread ([`vkdiff_gpu::heat`]) on a second logical device of `selector`'s
/// device and hands it to `gpu`, which pauses it for each timed job: `bench_fma.comp` over 1,024
/// workgroups, sized to about 1 ms a dispatch once the clock is up. Not on CPU devices, whose
/// speed does not follow a governor. Says on stderr what it did.
pub fn start_heater(gpu: &mut Gpu, selector: Option<&str>) {
    if gpu.caps().kind == "cpu" || gpu.caps().timestamp_period_ns.is_none() {
        return;
    }
    const GROUPS: u32 = 1024;
    let started = std::time::Instant::now();
    let heater = (|| -> vkdiff_gpu::Result<_> {
        let mut second = Gpu::open(selector)?;
        let mut tree = ShaderTree::new(crate::default_shader_dir());
        let variant = ShaderVariant::new("bench_fma", "bench_fma.comp", &[]);
        let pipeline = second.pipeline(
            &mut tree,
            &PipelineDesc {
                variant: &variant,
                spec: vec![],
                push_size: 4,
                bindings: 1,
                disable_robustness: false,
                full_subgroups: false,
                subgroup_size: None,
            },
        )?;
        // The time of one dispatch after 300 untimed ones (the clock up by then).
        let iterations = 256u32;
        second.set_bench(Some(BenchMode {
            warmup: 300,
            repeats: 20,
            rotations: 1,
        }));
        let mut job = second.job();
        let out = job.output(GROUPS as usize * 256 * 4);
        job.dispatch(pipeline, &[out], &[iterations], [GROUPS, 1, 1])?;
        let ns = job.submit()?.gpu_ns.unwrap_or(1e6);
        let sized = ((iterations as f64 * 1e6 / ns) as u32).clamp(1, 1 << 20);
        let gflops = GROUPS as f64 * 256.0 * iterations as f64 * 64.0 / ns;
        Ok((
            vkdiff_gpu::heat::Heater::start(second, pipeline, GROUPS, sized),
            gflops,
        ))
    })();
    match heater {
        Ok((heater, gflops)) => {
            gpu.set_heater(Some(std::sync::Arc::new(heater)));
            eprintln!(
                "heater: bench_fma on a second device context ({gflops:.0} GFLOP/s), paused for each timed job; {} ms to start",
                started.elapsed().as_millis()
            );
        }
        Err(e) => eprintln!("heater: not used: {e}"),
    }
}

/// The cooperative-matrix ceiling with `shaders/bench_coopmat.comp` on the f16×f16→f32
/// subgroup shape the driver reports (16×16×16 when offered), one subgroup per workgroup.
fn coopmat_ceiling(gpu: &mut Gpu, tree: &mut ShaderTree) -> Result<f64, String> {
    let caps = gpu.caps().clone();
    if !caps.coopmat {
        return Err("no VK_KHR_cooperative_matrix".into());
    }
    let mut shapes: Vec<_> = caps
        .coopmat_shapes
        .iter()
        .filter(|s| s.subgroup_scope && s.ab == "f16" && s.c == "f32")
        .collect();
    shapes.sort_by_key(|s| (s.m, s.n, s.k) != (16, 16, 16));
    let shape = shapes
        .first()
        .ok_or("no subgroup-scope f16×f16→f32 cooperative-matrix shape")?;
    let (m, n, k, sg) = (shape.m, shape.n, shape.k, caps.subgroup_size);
    let iterations = 256u32;
    ceiling(
        gpu,
        tree,
        "bench_coopmat.comp",
        vec![m, n, k, sg],
        Some(sg),
        64,
        65535,
        |gpu, p, groups| {
            let mut job = gpu.job();
            let out = job.output((groups * m * n * 4) as usize);
            job.dispatch(p, &[out], &[iterations], [groups, 1, 1])?;
            Ok((
                groups as f64 * iterations as f64 * 8.0 * (m * n * k) as f64,
                job.submit()?.gpu_ns,
            ))
        },
    )
    .map_err(|e| e.to_string())?
    .ok_or_else(|| "the device gives no timestamps".into())
}

/// One timed case on one tree: the median time, or why there is none. Over several rounds:
/// the median of the rounds' medians and their range.
#[derive(Debug, Clone)]
pub struct Timing {
    /// Median GPU time in ns.
    pub ns: Option<f64>,
    /// "ok", or what went wrong (a wrong result is reported, not timed).
    pub status: String,
    /// Fastest and slowest round (equal for one round).
    pub range: Option<(f64, f64)>,
    /// The compiler statistics of the pipelines the timed jobs ran (empty where the device
    /// reports none, or nothing ran).
    pub pipelines: Vec<PipelineStatistics>,
}

/// Adds those of `more` not yet in `into`, keeping first-use order.
fn add_pipelines<'a>(
    into: &mut Vec<PipelineStatistics>,
    more: impl IntoIterator<Item = &'a PipelineStatistics>,
) {
    for p in more {
        if !into.contains(p) {
            into.push(p.clone());
        }
    }
}

/// A row's rounds spread more than this (max − min over the median) is not stable enough to
/// rank two trees by.
pub const MAX_SPREAD: f64 = 0.10;

impl Timing {
    /// Combines rounds of the same case on the same tree: any failed round makes the whole.
    pub fn rounds(rounds: &[Timing]) -> Timing {
        if let Some(bad) = rounds.iter().find(|t| t.ns.is_none()) {
            return bad.clone();
        }
        let mut ns: Vec<f64> = rounds.iter().filter_map(|t| t.ns).collect();
        ns.sort_by(f64::total_cmp);
        let Some((&lo, &hi)) = ns.first().zip(ns.last()) else {
            return Timing {
                ns: None,
                status: "no rounds".into(),
                range: None,
                pipelines: Vec::new(),
            };
        };
        // (Timed wrong results, --time-wrong, keep their status.)
        let status = rounds
            .iter()
            .find(|t| t.status != "ok")
            .map_or("ok", |t| &t.status);
        let mut pipelines = Vec::new();
        for t in rounds {
            add_pipelines(&mut pipelines, &t.pipelines);
        }
        Timing {
            ns: Some(ns[ns.len() / 2]),
            status: status.into(),
            range: Some((lo, hi)),
            pipelines,
        }
    }

    /// (max − min) / median over the rounds.
    pub fn spread(&self) -> Option<f64> {
        let (lo, hi) = self.range?;
        Some((hi - lo) / self.ns?)
    }
}

/// Times `case` on `tree` in bench mode and checks its result; a wrong result is timed only
/// with `time_wrong` (an experiment), and keeps its WRONG status.
pub fn time(
    gpu: &mut Gpu,
    tree: &mut ShaderTree,
    case: &Case,
    mode: BenchMode,
    time_wrong: bool,
) -> Timing {
    gpu.set_bench(Some(mode));
    let outcome = crate::exec::own::evaluate(case, gpu, tree, false);
    gpu.set_bench(None);
    let wrong = matches!(outcome, Outcome::Fail { .. });
    if wrong {
        // Which elements, how far off and the bound: what a WRONG row needs to be acted on.
        eprintln!(
            "{} on {}: {}",
            case.variant(),
            tree.dir().display(),
            outcome.explain()
        );
    }
    let mut timing = timing_of(outcome);
    if wrong && time_wrong {
        timing.ns = gpu.last_bench_ns();
        timing.range = timing.ns.map(|n| (n, n));
    }
    timing.pipelines = gpu
        .timed_pipelines()
        .iter()
        .filter_map(|&p| gpu.statistics(p).cloned())
        .collect();
    // Each job's time with the wall clock, to set beside the device's own logs (clocks, load).
    let unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    eprintln!(
        "job at {unix_ms} ms: {} on {}: {:.1} µs",
        case.variant(),
        tree.dir().display(),
        timing.ns.unwrap_or(f64::NAN) / 1e3
    );
    timing
}

/// [`time`] through another driver (ggml's backend, timing itself), judged the same way.
pub fn time_driver(driver: &mut dyn crate::model::driver::Driver, case: &Case) -> Timing {
    timing_of(case.evaluate(&mut crate::model::driver::Ctx {
        driver,
        repeat: false,
    }))
}

fn timing_of(outcome: Outcome) -> Timing {
    match outcome {
        Outcome::Pass { gpu_ns, .. } => Timing {
            ns: gpu_ns,
            status: "ok".into(),
            range: gpu_ns.map(|n| (n, n)),
            pipelines: Vec::new(),
        },
        Outcome::Fail { verdict } => Timing {
            ns: None,
            status: format!("WRONG: {} of {} elements", verdict.failed, verdict.elements),
            range: None,
            pipelines: Vec::new(),
        },
        other => Timing {
            ns: None,
            range: None,
            pipelines: Vec::new(),
            status: other
                .explain()
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(60)
                .collect(),
        },
    }
}

/// The bench table: per case, time and the spread of its rounds, GB/s, GFLOP/s, their share of
/// the ceilings, and the other tree's time as a ratio (> 1: the other tree is slower). A ratio
/// whose rounds overlap, or whose rounds spread more than [`MAX_SPREAD`], is not a ranking: it
/// is marked "tie" or "unstable".
pub fn table(
    rows: &[(BenchCase, String, Timing, Option<Timing>)],
    ceilings: &Ceilings,
    against: Option<&str>,
) -> String {
    let mut s = table_header(ceilings, against);
    for (b, variant, t, o) in rows {
        s += &table_row(b, variant, t, o.as_ref(), ceilings);
    }
    s
}

/// The ceilings and the column titles of [`table`].
pub fn table_header(ceilings: &Ceilings, against: Option<&str>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "ceilings measured here: copy {} GB/s, f32 FMA {} GFLOP/s",
        ceilings
            .copy_gbps
            .map(|c| format!("{c:.0}"))
            .unwrap_or_else(|| "?".into()),
        ceilings
            .fma_gflops
            .map(|c| format!("{c:.0}"))
            .unwrap_or_else(|| "?".into())
    );
    let _ = writeln!(
        s,
        "coopmat f16→f32 {} (the peak of cm1/cm2 rows' %peak; the others' is f32 FMA)",
        match &ceilings.coopmat_gflops {
            Ok(c) => format!("{c:.0} GFLOP/s"),
            Err(why) => format!("skipped: {why}"),
        }
    );
    let other = against
        .map(|_| {
            format!(
                " {:>12} {:>7} {:>7} {:>8}",
                "against µs", "spread", "ratio", "rank"
            )
        })
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "{:<14} {:<32} {:<34} {:>10} {:>7} {:>8} {:>5} {:>9} {:>5}{other}  status",
        "kernel", "variant", "shape", "median µs", "spread", "GB/s", "%bw", "GFLOP/s", "%peak"
    );
    s
}

/// One line of [`table`]: case `b` timed as `t` on our tree and as `o` on the other one.
pub fn table_row(
    b: &BenchCase,
    variant: &str,
    t: &Timing,
    o: Option<&Timing>,
    ceilings: &Ceilings,
) -> String {
    let mut s = String::new();
    let pct = |x: f64, c: Option<f64>| {
        c.map(|c| format!("{:.0}%", 100.0 * x / c))
            .unwrap_or_else(|| "-".into())
    };
    let spread = |t: &Timing| {
        t.spread()
            .map(|x| format!("{:.0}%", 100.0 * x))
            .unwrap_or_else(|| "-".into())
    };
    let w = work(&b.case);
    // Coopmat kernels (cm1/cm2 pipelines) against the coopmat peak, the rest against FMA.
    let peak = if variant.contains("cm1") || variant.contains("cm2") {
        ceilings.coopmat_gflops.as_ref().ok().copied()
    } else {
        ceilings.fma_gflops
    };
    let (us, gbps, bwp, gflops, fmap) = match (t.ns, w) {
        (Some(ns), Some(w)) => (
            format!("{:.1}", ns / 1e3),
            format!("{:.1}", w.bytes / ns),
            pct(w.bytes / ns, ceilings.copy_gbps),
            format!("{:.1}", w.flops / ns),
            pct(w.flops / ns, peak),
        ),
        (Some(ns), None) => (
            format!("{:.1}", ns / 1e3),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
        ),
        _ => ("-".into(), "-".into(), "-".into(), "-".into(), "-".into()),
    };
    let cmp = match o {
        Some(o) => {
            let (ratio, rank) = rank(t, o)
                .map(|(r, k)| (format!("{r:.2}"), k))
                .unwrap_or_else(|| ("-".into(), "-"));
            format!(
                " {:>12} {:>7} {ratio:>7} {rank:>8}",
                o.ns.map(|n| format!("{:.1}", n / 1e3))
                    .unwrap_or_else(|| o.status.clone()),
                spread(o)
            )
        }
        None => String::new(),
    };
    let _ = writeln!(
        s,
        "{:<14} {:<32} {:<34} {us:>10} {:>7} {gbps:>8} {bwp:>5} {gflops:>9} {fmap:>5}{cmp}  {}",
        b.kernel,
        variant,
        b.label,
        spread(t),
        t.status
    );
    s
}

/// The rank of a row (as in [`table_row`]), or None without both timings.
fn rank(t: &Timing, o: &Timing) -> Option<(f64, &'static str)> {
    let (a, b, (alo, ahi), (blo, bhi)) = (o.ns?, t.ns?, o.range?, t.range?);
    let unstable = [o, t]
        .iter()
        .any(|x| x.spread().is_some_and(|s| s > MAX_SPREAD));
    let rank = if unstable {
        "unstable"
    } else if alo <= bhi && blo <= ahi {
        "tie"
    } else if a > b {
        "ours"
    } else {
        "theirs"
    };
    Some((a / b, rank))
}

/// The driver's compiler statistics of the pipelines the rows timed, one line per variant, tree
/// and pipeline (a variant's rows may use several: other spec constants, a split-k reduce):
/// `stats VARIANT ours: SHADER[SPEC]: Name value, ...`. The other tree's line says "same as
/// ours" where its pipelines' statistics are ours; ggml's own pipelines are not vkdiff's to read.
/// `available`: whether the device reports statistics at all.
pub fn statistics(rows: &[(BenchCase, String, Timing, Option<Timing>)], available: bool) -> String {
    if !available {
        return "pipeline statistics skipped: the device has no \
                VK_KHR_pipeline_executable_properties with pipelineExecutableInfo\n"
            .into();
    }
    let mut variants: Vec<&str> = Vec::new();
    for r in rows {
        if !variants.contains(&r.1.as_str()) {
            variants.push(&r.1);
        }
    }
    let mut s = String::new();
    for variant in variants {
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for (_, _, t, o) in rows.iter().filter(|r| r.1 == variant) {
            add_pipelines(&mut ours, &t.pipelines);
            add_pipelines(&mut theirs, o.iter().flat_map(|o| &o.pipelines));
        }
        for p in &ours {
            let _ = writeln!(s, "stats {variant} ours: {p}");
        }
        if !theirs.is_empty() && theirs == ours {
            let _ = writeln!(s, "stats {variant} theirs: same as ours");
        } else {
            for p in &theirs {
                let _ = writeln!(s, "stats {variant} theirs: {p}");
            }
        }
    }
    if s.is_empty() {
        s = "pipeline statistics: none (no row ran a pipeline)\n".into();
    }
    s
}

/// Per kernel: rows, the geometric mean and the lowest ratio (other tree's time over ours) and
/// how the rows rank; then for mat-vec, the share of the copy ceiling per weight type (lowest
/// and median over its rows), the figure the mat-vec speed goal is stated in.
pub fn summary(
    rows: &[(BenchCase, String, Timing, Option<Timing>)],
    ceilings: &Ceilings,
) -> String {
    let mut s = String::from("summary:\n");
    let mut kernels: Vec<&str> = rows.iter().map(|r| r.0.kernel).collect();
    kernels.dedup();
    for kernel in kernels {
        let of = || rows.iter().filter(move |r| r.0.kernel == kernel);
        let ranked: Vec<(f64, &str, &str)> = of()
            .filter_map(|r| {
                let (ratio, rank) = rank(&r.2, r.3.as_ref()?)?;
                Some((ratio, rank, r.0.label.as_str()))
            })
            .collect();
        let _ = write!(s, "  {kernel:<14} {} rows", of().count());
        if let Some(low) = ranked.iter().min_by(|a, b| a.0.total_cmp(&b.0)) {
            let geo = (ranked.iter().map(|r| r.0.ln()).sum::<f64>() / ranked.len() as f64).exp();
            let count = |k: &str| ranked.iter().filter(|r| r.1 == k).count();
            let _ = write!(
                s,
                ", ratio geomean {geo:.2}, lowest {:.2} ({}); ours {} theirs {} tie {} unstable {}",
                low.0,
                low.2,
                count("ours"),
                count("theirs"),
                count("tie"),
                count("unstable")
            );
        }
        let failed = of().filter(|r| r.2.status != "ok").count();
        if failed > 0 {
            let _ = write!(s, "; {failed} not timed");
        }
        s.push('\n');
    }
    let Some(copy) = ceilings.copy_gbps else {
        return s;
    };
    let mut types: Vec<String> = Vec::new();
    let mut shares: Vec<Vec<f64>> = Vec::new();
    for (b, _, t, _) in rows {
        let (Case::MulMatVec(c), Some(ns), Some(w)) = (&b.case, t.ns, work(&b.case)) else {
            continue;
        };
        let name = c.a_type.to_string();
        let i = types.iter().position(|x| *x == name).unwrap_or_else(|| {
            types.push(name);
            shares.push(Vec::new());
            types.len() - 1
        });
        shares[i].push(100.0 * w.bytes / ns / copy);
    }
    if !types.is_empty() {
        s += "  mul_mat_vec share of the copy ceiling (lowest / median over the type's rows):";
        for (name, mut v) in types.into_iter().zip(shares) {
            v.sort_by(f64::total_cmp);
            let _ = write!(s, " {name} {:.0}/{:.0}%", v[0], v[v.len() / 2]);
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bench_case_is_valid_and_the_ceiling_shaders_compile() {
        for b in cases(false, true, Some(132))
            .into_iter()
            .chain(cases(true, true, None))
        {
            b.case
                .validate()
                .unwrap_or_else(|e| panic!("{}: {e}", b.label));
            assert!(work(&b.case).is_some(), "{}", b.label);
        }
        let mut tree = ShaderTree::with_cache(crate::default_shader_dir(), None);
        for file in ["bench_copy.comp", "bench_fma.comp", "bench_coopmat.comp"] {
            let v = ShaderVariant::new(file.trim_end_matches(".comp"), file, &[]);
            tree.spirv(&v).unwrap_or_else(|e| panic!("{file}: {e}"));
        }
    }

    /// A timed wrong round (--time-wrong) keeps the row's WRONG status: an experiment's
    /// table must not read "ok".
    #[test]
    fn a_timed_wrong_round_keeps_its_status() {
        let timed = |ns: f64, status: &str| Timing {
            ns: Some(ns),
            status: status.into(),
            range: Some((ns, ns)),
            pipelines: Vec::new(),
        };
        let all_ok = Timing::rounds(&[timed(1.0, "ok"), timed(2.0, "ok")]);
        assert_eq!(all_ok.status, "ok");
        let wrong = Timing::rounds(&[timed(1.0, "ok"), timed(2.0, "WRONG: 3 of 4 elements")]);
        assert_eq!(wrong.status, "WRONG: 3 of 4 elements");
        assert_eq!(wrong.ns, Some(2.0));
    }

    /// One line per variant, tree and pipeline; an identical other tree is said in one line,
    /// a device without statistics in one line.
    #[test]
    fn statistics_lines_per_variant_tree_and_pipeline() {
        use vkdiff_gpu::statistics::{Executable, Statistic, StatisticValue};
        let pipeline = |shader: &str, registers: u64| PipelineStatistics {
            shader: shader.into(),
            spec: vec![32],
            executables: vec![Executable {
                name: "main".into(),
                statistics: vec![Statistic {
                    name: "Register Count".into(),
                    value: StatisticValue::Uint(registers),
                }],
            }],
        };
        let timing = |pipelines: Vec<PipelineStatistics>| Timing {
            ns: Some(1.0),
            status: "ok".into(),
            range: Some((1.0, 1.0)),
            pipelines,
        };
        let b = cases(true, false, None).remove(0);
        let row = |variant: &str, ours: Vec<_>, theirs: Option<Vec<_>>| {
            (
                b.clone(),
                variant.to_string(),
                timing(ours),
                theirs.map(timing),
            )
        };
        let rows = vec![
            row(
                "fa",
                vec![pipeline("fa", 90)],
                Some(vec![pipeline("fa", 90)]),
            ),
            // A second row of the variant adds its split-k reduce; the first pipeline is
            // printed once.
            row(
                "fa",
                vec![pipeline("fa", 90), pipeline("reduce", 16)],
                Some(vec![pipeline("fa", 90), pipeline("reduce", 16)]),
            ),
            row(
                "mmv",
                vec![pipeline("mmv", 64)],
                Some(vec![pipeline("mmv", 72)]),
            ),
            row("wkv", vec![pipeline("wkv", 40)], None),
        ];
        assert_eq!(
            statistics(&rows, true),
            "stats fa ours: fa[32]: Register Count 90\n\
             stats fa ours: reduce[32]: Register Count 16\n\
             stats fa theirs: same as ours\n\
             stats mmv ours: mmv[32]: Register Count 64\n\
             stats mmv theirs: mmv[32]: Register Count 72\n\
             stats wkv ours: wkv[32]: Register Count 40\n"
        );
        assert!(statistics(&rows, false).starts_with("pipeline statistics skipped"));
    }
}
