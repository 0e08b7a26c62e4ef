//! Speed of the exact CPU reference on LLM-sized shapes (criterion).
//!
//! `cargo bench -p vkdiff-reference` measures every shape; `cargo bench -p vkdiff-reference --
//! <filter>` a subset, `-- --test` runs each once at full size. Criterion reports the time and
//! GB/s; the table printed at the end adds GFLOP/s (from the median time of criterion's
//! samples).
//!
//! Run as a test (`cargo test --release --workspace`, which CI runs; there is no `--bench`
//! argument then) it is a smoke test instead: every benchmark body once, on shapes cut down so
//! it takes a second or two, its result checked for shape and finiteness. Set
//! `VKDIFF_BENCH_FULL=1` to smoke-test at full size.
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

/// Run as a test: every body once, results checked.
fn smoke() {
    let full = std::env::var("VKDIFF_BENCH_FULL").is_ok_and(|v| v == "1");
    let start = Instant::now();
    for bench in benches(if full { 1 } else { 16 }) {
        let run = (bench.make)();
        let t0 = Instant::now();
        let out = run();
        let secs = t0.elapsed().as_secs_f64();
        assert_eq!(out.values.len(), out.ne.iter().product::<usize>(), "{}", bench.name);
        assert!(out.values.iter().all(|x| x.is_finite()), "{}: non-finite output", bench.name);
        println!(
            "smoke {:40} {:9.3} ms  {:7.2} GFLOP/s",
            bench.name,
            secs * 1e3,
            bench.flops / secs / 1e9
        );
    }
    println!("benches (smoke test, shapes cut down): ok in {:.1} s", start.elapsed().as_secs_f64());
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return smoke();
    }
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .configure_from_args();
    let mut table = Vec::new();
    for bench in benches(1) {
        // Median per-iteration time over criterion's samples, for the table.
        let samples = Mutex::new(Vec::new());
        let mut group = c.benchmark_group("reference");
        group.throughput(Throughput::BytesDecimal(bench.bytes));
        let long = bench.flops > 1e9;
        group.sample_size(if long { 10 } else { 30 });
        group.measurement_time(Duration::from_secs(if long { 15 } else { 5 }));
        group.bench_function(&bench.name, |b| {
            let run = (bench.make)();
            b.iter_custom(|iters| {
                let t0 = Instant::now();
                for _ in 0..iters {
                    black_box(run());
                }
                let elapsed = t0.elapsed();
                samples.lock().expect("samples").push(elapsed.as_secs_f64() / iters as f64);
                elapsed
            })
        });
        group.finish();
        let mut s = samples.into_inner().expect("samples");
        if !s.is_empty() {
            s.sort_by(f64::total_cmp);
            table.push((bench.name, bench.flops, bench.bytes, s[s.len() / 2]));
        }
    }
    c.final_summary();
    if !table.is_empty() {
        println!("\n{:40} {:>12} {:>10} {:>8}", "benchmark", "median", "GFLOP/s", "GB/s");
        for (name, flops, bytes, secs) in table {
            println!(
                "{name:40} {:>9.2} ms {:>10.2} {:>8.2}",
                secs * 1e3,
                flops / secs / 1e9,
                bytes as f64 / secs / 1e9
            );
        }
    }
}
