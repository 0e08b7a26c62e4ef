//! Speed of the exact CPU reference on LLM-sized shapes (criterion).
//!
//! `cargo bench -p vkdiff-reference` measures every shape; `cargo bench -p vkdiff-reference --
//! <filter>` a subset, `-- --test` runs each once at full size. Criterion reports the time and
//! GB/s; the table printed at the end adds GFLOP/s (from the median time of criterion's
//! samples).
//!
//! Run as a test (`cargo test --release --workspace`, which CI runs; there is no `--bench`
//! argument then) it is a smoke test instead: it runs itself again in criterion's run-once mode
//! (`--bench --test`) on shapes cut down 16-fold (a second or two), every result checked for
//! shape and finiteness. `VKDIFF_BENCH_FULL=1` smoke-tests the full shapes;
//! `VKDIFF_BENCH_CUT=n` divides the shapes by n in any mode.
//!
//! Counting: FLOPs are the op's multiply-adds × 2 (mat-mul 2·M·N·K; flash attention
//! 2·N·KV·(DK + DV)·H, the softmax not counted; wkv7 9·S²·H·T: sa, the state update and y).
//! Bytes are the operands as stored (quantized blocks, f16, f32) plus dst as the f64 values
//! the reference returns.

use std::hint::black_box;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use vkdiff_reference::ops::flash_attn::{flash_attn, FlashAttnInputs, FlashAttnParams};
use vkdiff_reference::ops::mul_mat::mul_mat;
use vkdiff_reference::ops::wkv7::{wkv7, Wkv7Inputs};
use vkdiff_reference::ops::Output;
use vkdiff_reference::tensor::Tensor;
use vkdiff_reference::DType;

/// Deterministic values in (−1, 1) (xorshift; no dependency).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

fn tensor(dtype: DType, ne: [usize; 4], seed: u64) -> Tensor {
    Tensor::from_f32(dtype, ne, &values(ne.iter().product(), seed)).expect("whole blocks")
}

/// The body of a benchmark: one op call on inputs made beforehand.
type Body = Box<dyn Fn() -> Output>;

/// One benchmark: its name, what it computes per iteration, and how to make its body (the
/// inputs are only generated for the benchmarks that run).
struct Bench {
    name: String,
    flops: f64,
    bytes: u64,
    make: Box<dyn Fn() -> Body>,
}

/// Bytes of `n` elements of `dtype` (n a whole number of blocks).
fn size(dtype: DType, n: usize) -> usize {
    dtype.row_bytes(n).expect("whole blocks")
}

/// Shapes divided by `cut` (1 = the real shapes).
fn benches(cut: usize) -> Vec<Bench> {
    let mut out = Vec::new();
    // Mat-vec: M × K weights (M output rows, K = 4096) times one f32 activation row.
    for (m, k) in [(4096, 4096), (14336, 4096)] {
        let m = m / cut;
        for dtype in [DType::Q4_0, DType::Q8_0, DType::F16] {
            out.push(Bench {
                name: format!("mul_mat_vec/{dtype}/{m}x{k}"),
                flops: 2.0 * (m * k) as f64,
                bytes: (size(dtype, m * k) + 4 * k + 8 * m) as u64,
                make: Box::new(move || {
                    let a = tensor(dtype, [k, m, 1, 1], 1);
                    let b = tensor(DType::F32, [k, 1, 1, 1], 2);
                    Box::new(move || mul_mat(&a, &b).expect("valid"))
                }),
            });
        }
    }
    // Mat-mat: N = 512 tokens, M = K = 4096.
    let (n, m, k) = (512 / cut, 4096 / cut, 4096);
    for dtype in [DType::F16, DType::Q4_0] {
        out.push(Bench {
            name: format!("mul_mat/{dtype}/{n}x{m}x{k}"),
            flops: 2.0 * (m * n * k) as f64,
            bytes: (size(dtype, m * k) + 4 * k * n + 8 * m * n) as u64,
            make: Box::new(move || {
                let a = tensor(dtype, [k, m, 1, 1], 3);
                let b = tensor(DType::F32, [k, n, 1, 1], 4);
                Box::new(move || mul_mat(&a, &b).expect("valid"))
            }),
        });
    }
    // Flash attention: N = 512 queries, KV = 4096 keys, D = 128, 32 heads, f16 K/V, f32 Q.
    let (n, kv, d, h) = (512 / cut, 4096 / cut, 128, 32 / cut.min(8));
    out.push(Bench {
        name: format!("flash_attn/f16/N{n}_KV{kv}_D{d}_H{h}"),
        flops: 2.0 * (n * kv * 2 * d * h) as f64,
        bytes: (4 * d * n * h + 2 * 2 * d * kv * h + 8 * d * h * n) as u64,
        make: Box::new(move || {
            let q = tensor(DType::F32, [d, n, h, 1], 5);
            let k = tensor(DType::F16, [d, kv, h, 1], 6);
            let v = tensor(DType::F16, [d, kv, h, 1], 7);
            Box::new(move || {
                flash_attn(&FlashAttnInputs {
                    q: &q,
                    k: &k,
                    v: &v,
                    mask: None,
                    sinks: None,
                    params: FlashAttnParams {
                        scale: 1.0 / (d as f32).sqrt(),
                        max_bias: 0.0,
                        logit_softcap: 0.0,
                    },
                })
                .expect("valid")
            })
        }),
    });
    // wkv7: T = 1024 tokens, C = 2048 channels, head size 64 (32 heads), one sequence.
    let (t, s, h) = (1024 / cut, 64, 2048 / 64 / cut.min(8));
    let c = s * h;
    out.push(Bench {
        name: format!("wkv7/T{t}_C{c}_S{s}"),
        flops: 9.0 * (s * s * h * t) as f64,
        bytes: (6 * 4 * c * t + 4 * s * s * h + 8 * c * (t + s)) as u64,
        make: Box::new(move || {
            let x = |seed, lo: f32, hi: f32| {
                let v: Vec<f32> = values(c * t, seed)
                    .into_iter()
                    .map(|x| lo + (hi - lo) * (x + 1.0) / 2.0)
                    .collect();
                Tensor::from_f32(DType::F32, [s, h, t, 1], &v).expect("f32")
            };
            let (r, w, k, v, a, b) = (
                x(8, -1.0, 1.0),
                x(9, 0.9, 1.0),
                x(10, -1.0, 1.0),
                x(11, -1.0, 1.0),
                x(12, -0.1, 0.0),
                x(13, 0.0, 0.1),
            );
            let state = tensor(DType::F32, [s * s * h, 1, 1, 1], 14);
            Box::new(move || {
                wkv7(&Wkv7Inputs {
                    r: &r,
                    w: &w,
                    k: &k,
                    v: &v,
                    a: &a,
                    b: &b,
                    state: &state,
                })
                .expect("valid")
            })
        }),
    });
    out
}

/// CPU time of this process so far (all threads), in seconds, from /proc/self/stat (Linux; 10
/// ms resolution); None elsewhere. On a shared machine wall time includes waiting for a core,
/// CPU time does not.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesized command name: utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// Checks what a body returned: dst's element count and finite values.
fn check(name: &str, out: &Output) {
    assert_eq!(out.values.len(), out.ne.iter().product::<usize>(), "{name}");
    assert!(
        out.values.iter().all(|x| x.is_finite()),
        "{name}: non-finite output"
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        // Run by `cargo test` (whatever its arguments): run again through criterion's own
        // run-once mode (`--bench --test`), on cut-down shapes unless VKDIFF_BENCH_FULL=1.
        let full = std::env::var("VKDIFF_BENCH_FULL").is_ok_and(|v| v == "1");
        let start = Instant::now();
        let status = std::process::Command::new(std::env::current_exe().expect("own path"))
            .args(["--bench", "--test"])
            .env("VKDIFF_BENCH_CUT", if full { "1" } else { "16" })
            .status()
            .expect("run the benchmarks once");
        assert!(status.success(), "benchmarks failed: {status}");
        println!(
            "benches: every benchmark ran once in {:.1} s",
            start.elapsed().as_secs_f64()
        );
        return;
    }
    let cut = std::env::var("VKDIFF_BENCH_CUT")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(1);
    let test_mode = args.iter().any(|a| a == "--test");
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .configure_from_args();
    let mut table = Vec::new();
    for bench in benches(cut) {
        // Per-iteration times of criterion's samples (median for the table), and CPU time
        // over all of them.
        let samples = Mutex::new(Vec::new());
        let cpu = Mutex::new((0.0f64, 0u64));
        let mut group = c.benchmark_group("reference");
        group.throughput(Throughput::BytesDecimal(bench.bytes));
        let long = bench.flops > 1e9;
        group.sample_size(if long { 10 } else { 30 });
        group.measurement_time(Duration::from_secs(if long { 15 } else { 5 }));
        group.bench_function(&bench.name, |b| {
            let run = (bench.make)();
            check(&bench.name, &run());
            b.iter_custom(|iters| {
                let c0 = cpu_seconds();
                let t0 = Instant::now();
                for _ in 0..iters {
                    black_box(run());
                }
                let elapsed = t0.elapsed();
                samples
                    .lock()
                    .expect("samples")
                    .push(elapsed.as_secs_f64() / iters as f64);
                if let (Some(c0), Some(c1)) = (c0, cpu_seconds()) {
                    let mut c = cpu.lock().expect("cpu");
                    c.0 += c1 - c0;
                    c.1 += iters;
                }
                elapsed
            })
        });
        group.finish();
        let mut s = samples.into_inner().expect("samples");
        let (cpu_total, iters) = cpu.into_inner().expect("cpu");
        if !s.is_empty() {
            s.sort_by(f64::total_cmp);
            let cpu_per_iter = (iters > 0).then(|| cpu_total / iters as f64);
            table.push((
                bench.name,
                bench.flops,
                bench.bytes,
                s[s.len() / 2],
                cpu_per_iter,
            ));
        }
    }
    c.final_summary();
    if !table.is_empty() {
        let what = if test_mode {
            "one run each (test mode)"
        } else {
            "median of the samples"
        };
        println!(
            "\nwall: {what}; CPU: process CPU time per iteration (all threads); GFLOP/cs: GFLOP \
             per CPU-second"
        );
        println!(
            "{:40} {:>12} {:>9} {:>8} {:>12} {:>9}",
            "benchmark", "wall", "GFLOP/s", "GB/s", "CPU", "GFLOP/cs"
        );
        for (name, flops, bytes, secs, cpu) in table {
            let cpu = cpu.filter(|&c| c > 0.0);
            println!(
                "{name:40} {:>9.2} ms {:>9.2} {:>8.2} {:>12} {:>9}",
                secs * 1e3,
                flops / secs / 1e9,
                bytes as f64 / secs / 1e9,
                cpu.map_or("-".into(), |c| format!("{:.2} ms", c * 1e3)),
                cpu.map_or("-".into(), |c| format!("{:.2}", flops / c / 1e9)),
            );
        }
    }
}
