//! `vkdiff bench`: each kernel × variant on realistic LLM shapes, timed with GPU timestamps (the
//! median of repeated runs after warm-up, inputs rotated between repetitions so caches do not
//! flatter), reported as time, GB/s and GFLOP/s and as a share of ceilings vkdiff measures on the
//! same device with its own copy and FMA shaders. A second shader tree (`--against`) is timed on
//! the same cases and compared as a ratio. Every timed run is also checked against the reference:
//! a fast wrong kernel is reported as wrong.

use std::fmt::Write as _;

use vkdiff_gpu::context::{BenchMode, PipelineDesc};
use vkdiff_gpu::{Gpu, ShaderTree, ShaderVariant};
use vkdiff_reference::DType;

use crate::cases::data::{Blocks, Dist};
use crate::cases::mul_mat_vec::MulMatVecCase;
use crate::cases::wkv7::Wkv7Case;
use crate::cases::{Case, Ctx, Outcome};

/// Bytes a kernel must move and flops it must do at the least: what GB/s and GFLOP/s divide.
#[derive(Debug, Clone, Copy)]
pub struct Work {
    /// Bytes read and written (inputs once, outputs once).
    pub bytes: f64,
    /// Floating-point operations (a multiply-add counts 2).
    pub flops: f64,
}

/// The minimum work of a case, for kernels that define it.
pub fn work(case: &Case) -> Option<Work> {
    match case {
        Case::MulMatVec(c) => {
            let batches = (c.ne02 * c.r2 * c.ne03) as f64;
            let a = (c.a_type.row_bytes(c.k).ok()? * c.m * c.ne02 * c.ne03) as f64;
            let b = (c.b_type.row_bytes(c.k).ok()? * c.n) as f64 * batches;
            let d = (4 * c.m * c.n) as f64 * batches;
            Some(Work {
                bytes: a + b + d,
                flops: 2.0 * (c.k * c.m * c.n) as f64 * batches,
            })
        }
        Case::Wkv7(c) => {
            let (s, h, t, b) = (
                c.head_size as f64,
                c.heads as f64,
                (c.tokens_per_seq * c.seqs) as f64,
                c.seqs as f64,
            );
            let tensors = 6.0 * t * h * s + t * h * s + 2.0 * s * s * h * b;
            // Per token and head: sa (2S²), the update (5S²), y (2S²).
            Some(Work {
                bytes: 4.0 * tensors,
                flops: 9.0 * t * h * s * s,
            })
        }
        #[allow(unreachable_patterns)] // kernels added later have no work model yet
        _ => None,
    }
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

/// Realistic LLM shapes per kernel: mat-vec of 4096×4096 and 14336×4096 weights (a 7–8B
/// model's attention and FFN) in f16, q4_0 and q8_0 against an f32 activation; RWKV-7 over 1024
/// tokens of C = 2048 with head size 64.
pub fn cases() -> Vec<BenchCase> {
    let mut v = Vec::new();
    for a_type in [DType::F16, DType::Q4_0, DType::Q8_0] {
        for m in [4096, 14336] {
            let case = MulMatVecCase {
                a_type,
                b_type: DType::F32,
                k: 4096,
                m,
                n: 1,
                ne02: 1,
                r2: 1,
                ne03: 1,
                b_row_pad: 0,
                a_blocks: Blocks::Quantized(Dist::Normal),
                b_dist: Dist::Normal,
                seed: 1,
            };
            v.push(BenchCase {
                kernel: "mul_mat_vec",
                label: format!("{m}×4096 {a_type} · f32 vector"),
                case: Case::MulMatVec(case),
            });
        }
    }
    let wkv7 = Wkv7Case {
        head_size: 64,
        heads: 32,
        tokens_per_seq: 1024,
        seqs: 1,
        dist: Dist::Normal,
        free_ab: false,
        seed: 1,
    };
    v.push(BenchCase {
        kernel: "wkv7",
        label: "T=1024 C=2048 S=64".into(),
        case: Case::Wkv7(wkv7),
    });
    v
}

/// Ceilings measured on the device with vkdiff's own shaders.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ceilings {
    /// Shader copy bandwidth, bytes read + written per second, in GB/s.
    pub copy_gbps: Option<f64>,
    /// f32 FMA throughput in GFLOP/s (scalar ALUs; no cooperative matrices).
    pub fma_gflops: Option<f64>,
}

/// Runs one of the ceiling shaders, growing the problem until a run takes at least 20 ms, and
/// returns (work units per ns) as measured by the median of timed repetitions.
fn ceiling(
    gpu: &mut Gpu,
    tree: &mut ShaderTree,
    file: &str,
    mut size: u32,
    max: u32,
    run: impl Fn(&mut Gpu, vkdiff_gpu::context::Pipeline, u32) -> vkdiff_gpu::Result<(f64, Option<f64>)>,
) -> vkdiff_gpu::Result<Option<f64>> {
    let variant = ShaderVariant::new(file.trim_end_matches(".comp"), file, &[]);
    let bindings = if file == "bench_copy.comp" { 2 } else { 1 };
    let desc = PipelineDesc {
        variant: &variant,
        spec: vec![],
        push_size: 4,
        bindings,
        disable_robustness: false,
        full_subgroups: false,
        subgroup_size: None,
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
    let fma = ceiling(gpu, tree, "bench_fma.comp", 16, 65535, |gpu, p, groups| {
        let iterations = 256u32;
        let mut job = gpu.job();
        let out = job.output(groups as usize * 256 * 4);
        job.dispatch(p, &[out], &[iterations], [groups, 1, 1])?;
        Ok((
            groups as f64 * 256.0 * iterations as f64 * 64.0,
            job.submit()?.gpu_ns,
        ))
    });
    Ceilings {
        copy_gbps: copy.ok().flatten(),
        fma_gflops: fma.ok().flatten(),
    }
}

/// One timed case on one tree: the median time, or why there is none.
#[derive(Debug, Clone)]
pub struct Timing {
    /// Median GPU time in ns.
    pub ns: Option<f64>,
    /// "ok", or what went wrong (a wrong result is reported, not timed).
    pub status: String,
}

/// Times `case` on `tree` in bench mode and checks its result.
pub fn time(gpu: &mut Gpu, tree: &mut ShaderTree, case: &Case, mode: BenchMode) -> Timing {
    gpu.set_bench(Some(mode));
    let outcome = case.evaluate(&mut Ctx {
        gpu,
        tree,
        repeat: false,
        graph: None,
    });
    gpu.set_bench(None);
    match outcome {
        Outcome::Pass { gpu_ns, .. } => Timing {
            ns: gpu_ns,
            status: "ok".into(),
        },
        Outcome::Fail { verdict } => Timing {
            ns: None,
            status: format!("WRONG: {} of {} elements", verdict.failed, verdict.elements),
        },
        other => Timing {
            ns: None,
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

/// The bench table: per case, time, GB/s, GFLOP/s, their share of the ceilings, and the other
/// tree's time as a ratio (> 1: the other tree is slower).
pub fn table(
    rows: &[(BenchCase, String, Timing, Option<Timing>)],
    ceilings: &Ceilings,
    against: Option<&str>,
) -> String {
    let mut s = String::new();
    let pct = |x: f64, c: Option<f64>| {
        c.map(|c| format!("{:.0}%", 100.0 * x / c))
            .unwrap_or_else(|| "-".into())
    };
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
    let other = against
        .map(|_| format!(" {:>12} {:>7}", "against µs", "ratio"))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "{:<12} {:<28} {:<28} {:>10} {:>8} {:>5} {:>9} {:>5}{other}  status",
        "kernel", "variant", "shape", "median µs", "GB/s", "%bw", "GFLOP/s", "%fma"
    );
    for (b, variant, t, o) in rows {
        let w = work(&b.case);
        let (us, gbps, bwp, gflops, fmap) = match (t.ns, w) {
            (Some(ns), Some(w)) => (
                format!("{:.1}", ns / 1e3),
                format!("{:.1}", w.bytes / ns),
                pct(w.bytes / ns, ceilings.copy_gbps),
                format!("{:.1}", w.flops / ns),
                pct(w.flops / ns, ceilings.fma_gflops),
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
                let ratio = match (o.ns, t.ns) {
                    (Some(a), Some(b)) => format!("{:.2}", a / b),
                    _ => "-".into(),
                };
                format!(
                    " {:>12} {ratio:>7}",
                    o.ns.map(|n| format!("{:.1}", n / 1e3))
                        .unwrap_or_else(|| o.status.clone())
                )
            }
            None => String::new(),
        };
        let _ = writeln!(
            s,
            "{:<12} {:<28} {:<28} {us:>10} {gbps:>8} {bwp:>5} {gflops:>9} {fmap:>5}{cmp}  {}",
            b.kernel, variant, b.label, t.status
        );
    }
    s
}
