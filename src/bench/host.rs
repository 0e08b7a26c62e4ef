//! `vkdiff bench --host-only`: the host side of every bench row, timed without a GPU. For each
//! row the inputs are generated from the case's seed, then the exact reference and the error
//! bounds are computed by the same functions a judgement calls (each kernel's `evaluate`, in
//! shader mode: one plan, no backend candidates), and timed apart. The device capabilities the
//! plans read are an H100-like cm2 device's ([`planning_caps`]), so the scalar, cm1 and cm2 rows
//! all plan as on the device the bench rows were written for; no device is opened.
//!
//! Each row is set against the machine's f64 FMA rate, measured first ([`fma_gflops`]: every
//! core, independent vector FMA chains), as the time its FLOPs would take at that rate:
//!
//! * **op** FLOPs are the row's [`Work::flops`](super::Work), the kernel's own minimum work
//!   (a multiply-add counts 2): flash attention 2·N·KV·(DK + DV)·H for Q·Kᵀ and P·V, mat-mul
//!   2·M·N·K, wkv7 9·S²·H·T.
//! * **ref** FLOPs add what the reference computes beyond that: Σ|a·b| beside every mat-mul
//!   value (the magnitudes the bounds scale with, 2× the op) and Σ_d|q·k| beside every logit
//!   (flash attention: 2·N·KV·DK·H more).
//! * **bound** FLOPs are counted for flash attention only: per (row, live key, output element)
//!   15 operations (|v − O| with its f64 rounding term, 4; the convex-combination cap, 1; four
//!   weighted sums, 9 with a division; V's maximum, 1), 10 more on the coopmat paths (decode
//!   error, flushes, tile sums, f16 range), and the coopmat row data, 4 per (row, key, d).
//!   Other kernels' bound work is not counted (the mat-mul bounds simulate a rounding chain
//!   per product: "—" in the table).
//!
//! The ratio is the row's host time (reference + bounds, wall) over the FLOP time of op +
//! ref-extra + bound FLOPs: 1 would be every FLOP at the FMA peak of every core. The CPU ratio
//! is the same with CPU time (all threads, from /proc) over the FLOP time on one core: on a
//! machine others are using too, it moves less than the wall-time ratio.

use std::time::Instant;

use vkdiff_gpu::runners;
use vkdiff_gpu::runners::mul_mm::Mode;
use vkdiff_gpu::DeviceCaps;
use vkdiff_reference::ops::flash_attn::{flash_attn_ext, FlashAttnInputs};
use vkdiff_reference::ops::{mul_mat, mul_mat_id, wkv7};
use vkdiff_reference::DType;

use crate::cases::flash_attn::bounds::FaArith;
use crate::cases::mul_mm::{arith_of, cm1_bounds, cm2_bounds, cm2_special_operands, mode_on};
use crate::cases::Case;
use crate::tolerance::{self, Fp};

/// The capabilities the rows plan against: an H100-like device with cooperative matrices
/// (both kinds), subgroup 32 and 48 KiB of shared memory ([`crate::cases::model_devices::h100`]).
pub fn planning_caps() -> DeviceCaps {
    crate::cases::model_devices::h100()
}

/// The host work of one row, timed.
#[derive(Debug, Clone, Default)]
pub struct HostTiming {
    /// Generating (and quantizing) the inputs, seconds.
    pub gen_s: f64,
    /// The reference (values, magnitudes, row terms), seconds.
    pub ref_s: f64,
    /// The bounds (and what they decode), seconds.
    pub bound_s: f64,
    /// CPU seconds of the reference (all threads), where known.
    pub ref_cpu_s: Option<f64>,
    /// CPU seconds of the bounds (all threads), where known.
    pub bound_cpu_s: Option<f64>,
    /// FLOPs the reference computes beyond the op's own.
    pub ref_extra_flops: f64,
    /// FLOPs counted for the bounds (None: not counted for this kernel).
    pub bound_flops: Option<f64>,
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// This process's CPU time so far (user + system, every thread), in seconds, where Linux's
/// /proc tells it (None elsewhere): on a shared machine the wall time of a part depends on the
/// other users, its CPU time much less.
pub fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // USER_HZ is 100 on every Linux configuration that matters here.
    Some(ticks / 100.0)
}

/// Generates a case's inputs and computes its reference and bounds as its judgement does,
/// timing each part.
pub fn time_case(case: &Case, caps: &DeviceCaps) -> Result<HostTiming, String> {
    let err = |e: vkdiff_reference::Error| e.to_string();
    let mut t = HostTiming::default();
    match case {
        Case::MulMatVec(c) => {
            let s = Instant::now();
            let (a, b) = c.inputs()?;
            t.gen_s = secs(s);
            let (s, cpu) = (Instant::now(), cpu_seconds());
            let want = mul_mat::mul_mat(&a, &b).map_err(err)?;
            let magnitude = mul_mat::mul_mat_magnitude(&a, &b).map_err(err)?;
            t.ref_s = secs(s);
            t.ref_cpu_s = cpu_seconds().zip(cpu).map(|(b, a)| b - a);
            let (s, cpu) = (Instant::now(), cpu_seconds());
            let block_size = runners::mul_mat_vec::spec_constants(caps, c.a_type, c.n as u32)[0];
            let mut bounds = crate::cases::mul_mat_vec::bounds::mul_mat_vec_bounds_of(
                &magnitude.values,
                c.k,
                block_size,
                c.a_type,
            );
            let b_rows = b.rows().map_err(err)?;
            let columns = crate::cases::batched_columns(c.n, c.ne02, c.r2, c.ne03, c.m);
            let fmt = |t: DType| match t {
                DType::F16 => Fp::F16,
                DType::Bf16 => Fp::Bf16,
                _ => Fp::F32,
            };
            let formats = (fmt(c.a_type), fmt(c.b_type), Fp::F32);
            let specials = if c.a_type.is_quantized() && b_rows.iter().all(|x| x.is_finite()) {
                let rows = tolerance::rows_with_specials(&a).map_err(err)?;
                tolerance::mul_mat_specials_sparse(
                    &rows, &b_rows, c.k, c.m, &columns, formats, false,
                )
            } else {
                let a_rows = a.rows().map_err(err)?;
                if !c.a_type.is_quantized() {
                    let flush = tolerance::mul_mat_flushable(
                        &a_rows,
                        &b_rows,
                        c.k,
                        c.m,
                        &columns,
                        (formats.0, formats.1),
                    );
                    for (b, f) in bounds.iter_mut().zip(flush) {
                        *b += f;
                    }
                }
                tolerance::mul_mat_specials(
                    &a_rows,
                    &b_rows,
                    c.k,
                    c.m,
                    &columns,
                    formats,
                    !c.a_type.is_quantized(),
                )
            };
            let mut expected = want.values.clone();
            tolerance::apply_specials(&specials, &mut expected, &mut bounds);
            std::hint::black_box(&bounds);
            t.bound_s = secs(s);
            t.bound_cpu_s = cpu_seconds().zip(cpu).map(|(b, a)| b - a);
            t.ref_extra_flops = 2.0 * (c.m * c.k * c.n * c.ne02 * c.r2 * c.ne03) as f64;
        }
        Case::MulMatVecId(c) => {
            let s = Instant::now();
            let (a, b, ids) = c.inputs()?;
            t.gen_s = secs(s);
            let (s, cpu) = (Instant::now(), cpu_seconds());
            let want = mul_mat_id::mul_mat_id(&a, &b, &ids).map_err(err)?;
            let magnitude = mul_mat_id::mul_mat_id_magnitude(&a, &b, &ids).map_err(err)?;
            t.ref_s = secs(s);
            t.ref_cpu_s = cpu_seconds().zip(cpu).map(|(b, a)| b - a);
            let (s, cpu) = (Instant::now(), cpu_seconds());
            let block_size = runners::mul_mat_vec_id::spec_constants(caps, c.a_type)[0];
            let mut bounds = crate::cases::mul_mat_vec::bounds::mul_mat_vec_id_bounds(
                &magnitude.values,
                c.k,
                block_size,
                c.a_type,
            );
            crate::compare::undefined_where_non_finite(&want.values, &mut bounds);
            std::hint::black_box(&bounds);
            t.bound_s = secs(s);
            t.bound_cpu_s = cpu_seconds().zip(cpu).map(|(b, a)| b - a);
            t.ref_extra_flops = 2.0 * (c.m * c.k * c.n_used * c.ne11) as f64;
        }
        Case::MulMm(c) => {
            let s = Instant::now();
            let (a, b) = c.inputs()?;
            t.gen_s = secs(s);
            let mode = mode_on(c.cm1, c.cm2, caps);
            let plan = runners::mul_mm::plan(caps, mode, &a, &b, c.prec, c.force_split_k)?;
            let (s, cpu) = (Instant::now(), cpu_seconds());
            let want = mul_mat::mul_mat(&a, &b).map_err(err)?;
            t.ref_s = secs(s);
            t.ref_cpu_s = cpu_seconds().zip(cpu).map(|(b, a)| b - a);
            let (s, cpu) = (Instant::now(), cpu_seconds());
            let (a_rows, b_rows) = (a.rows().map_err(err)?, b.rows().map_err(err)?);
            let columns = crate::cases::batched_columns(c.n, c.ne02, c.r2, c.ne03, c.m);
            let arith = arith_of(&plan.staging, c.a_type, plan.split_k, plan.k_split);
            let bounds = match mode {
                Mode::Cm2 => {
                    let bk = plan.dispatch.spec[3] as usize;
                    cm2_bounds(
                        &a,
                        &b,
                        &plan.staging,
                        bk,
                        plan.split_k,
                        plan.k_split,
                        &columns,
                    )?
                }
                Mode::Cm1 => {
                    let tk = plan.dispatch.spec[9] as usize;
                    cm1_bounds(&arith, tk, c.k, c.m, &a_rows, &b_rows, &columns)
                }
                Mode::Fp16 | Mode::Fp32 => crate::cases::mul_mm::bounds::mul_mm_bounds(
                    &arith, c.k, c.m, &a_rows, &b_rows, &columns,
                ),
            };
            let a_special = match mode {
                Mode::Cm2 => {
                    std::borrow::Cow::Owned(cm2_special_operands(&a, &b, &plan.staging, &a_rows)?)
                }
                _ => std::borrow::Cow::Borrowed(&a_rows[..]),
            };
            let specials = tolerance::mul_mat_specials(
                &a_special,
                &b_rows,
                c.k,
                c.m,
                &columns,
                (arith.a_operand, arith.b_operand, arith.acc),
                !c.a_type.is_quantized(),
            );
            std::hint::black_box((&want, &bounds, &specials));
            t.bound_s = secs(s);
            t.bound_cpu_s = cpu_seconds().zip(cpu).map(|(b, a)| b - a);
        }
        Case::MulMmId(c) => {
            let s = Instant::now();
            let (a, b, ids) = c.inputs()?;
            t.gen_s = secs(s);
            let mode = mode_on(c.cm1, c.cm2, caps);
            let plan = runners::mul_mm::plan_id(caps, mode, &a, &b, &ids, c.prec)?;
            let (s, cpu) = (Instant::now(), cpu_seconds());
            let want = mul_mat_id::mul_mat_id(&a, &b, &ids).map_err(err)?;
            t.ref_s = secs(s);
            t.ref_cpu_s = cpu_seconds().zip(cpu).map(|(b, a)| b - a);
            let (s, cpu) = (Instant::now(), cpu_seconds());
            let (a_rows, b_rows) = (a.rows().map_err(err)?, b.rows().map_err(err)?);
            let columns: Vec<(usize, usize)> = c
                .ids()
                .iter()
                .enumerate()
                .map(|(col, &x)| {
                    let (tok, e) = (col / c.n_used, col % c.n_used);
                    (x as usize * c.m, tok * c.ne11 + e % c.ne11)
                })
                .collect();
            let spec = |i: usize, default: usize| {
                plan.chunks
                    .first()
                    .map_or(default, |ch| ch.dispatch.spec[i] as usize)
            };
            let arith = arith_of(&plan.staging, c.a_type, 1, c.k);
            let bounds = match mode {
                Mode::Cm2 => cm2_bounds(&a, &b, &plan.staging, spec(3, 16), 1, c.k, &columns)?,
                Mode::Cm1 => cm1_bounds(&arith, spec(9, 16), c.k, c.m, &a_rows, &b_rows, &columns),
                Mode::Fp16 | Mode::Fp32 => crate::cases::mul_mm::bounds::mul_mm_bounds(
                    &arith, c.k, c.m, &a_rows, &b_rows, &columns,
                ),
            };
            std::hint::black_box((&want, &bounds));
            t.bound_s = secs(s);
            t.bound_cpu_s = cpu_seconds().zip(cpu).map(|(b, a)| b - a);
        }
        Case::FlashAttn(c) => {
            let s = Instant::now();
            let (q, k, v, mask) = c.inputs()?;
            t.gen_s = secs(s);
            let inputs = FlashAttnInputs {
                q: &q,
                k: &k,
                v: &v,
                mask: mask.as_ref(),
                sinks: None,
                params: c.params(),
            };
            let (s, cpu) = (Instant::now(), cpu_seconds());
            let want = flash_attn_ext(&inputs).map_err(err)?;
            t.ref_s = secs(s);
            t.ref_cpu_s = cpu_seconds().zip(cpu).map(|(b, a)| b - a);
            let (s, cpu) = (Instant::now(), cpu_seconds());
            let plan = runners::flash_attn::plan(c.path, caps, c.prec_f32, &inputs, c.split_k);
            let v_values = v.rows().map_err(err)?;
            let d_split = runners::flash_attn::d_split(caps, c.d);
            let terms = c.coopmat_terms(&plan, false, &q, &k, &v, &want)?;
            let shape = c.shape(&plan, d_split);
            let bounds = crate::cases::flash_attn::bounds::flash_attn_bounds(
                &shape,
                &want,
                &v_values,
                v.ne(),
                terms.as_ref().map(|(r, v)| (r.as_slice(), v.as_slice())),
            );
            std::hint::black_box(&bounds);
            t.bound_s = secs(s);
            t.bound_cpu_s = cpu_seconds().zip(cpu).map(|(b, a)| b - a);
            let (dk, dv) = (c.d as f64, c.dv() as f64);
            let rows = want.rows.len() as f64;
            let live: f64 = want
                .rows
                .iter()
                .filter(|r| !r.fully_masked && !r.non_finite)
                .map(|r| r.logits.iter().filter(|&&l| l != f64::NEG_INFINITY).count() as f64)
                .sum();
            t.ref_extra_flops = 2.0 * rows * c.kv as f64 * dk;
            let coop = shape.arith != FaArith::Scalar;
            let per_element = if coop { 25.0 } else { 15.0 };
            let terms_flops = if coop {
                4.0 * rows * c.kv as f64 * dk
            } else {
                0.0
            };
            t.bound_flops = Some(per_element * live * dv + terms_flops);
        }
        Case::Wkv7(c) => {
            let s = Instant::now();
            let [r, w, k, v, a, b, state] = c.inputs();
            t.gen_s = secs(s);
            let inputs = wkv7::Wkv7Inputs {
                r: &r,
                w: &w,
                k: &k,
                v: &v,
                a: &a,
                b: &b,
                state: &state,
            };
            let (s, cpu) = (Instant::now(), cpu_seconds());
            let want = wkv7::wkv7(&inputs).map_err(err)?;
            t.ref_s = secs(s);
            t.ref_cpu_s = cpu_seconds().zip(cpu).map(|(b, a)| b - a);
            let (s, cpu) = (Instant::now(), cpu_seconds());
            let all = [&r, &w, &k, &v, &a, &b, &state].map(|t| t.rows().expect("f32"));
            let (sz, h, tok) = (c.head_size, c.heads, c.tokens_per_seq * c.seqs);
            let mut bounds = crate::cases::wkv7::bounds::wkv7_bounds(
                sz,
                h,
                tok,
                c.seqs,
                [
                    &all[0], &all[1], &all[2], &all[3], &all[4], &all[5], &all[6],
                ],
            );
            crate::compare::undefined_where_non_finite(&want.values, &mut bounds);
            std::hint::black_box(&bounds);
            t.bound_s = secs(s);
            t.bound_cpu_s = cpu_seconds().zip(cpu).map(|(b, a)| b - a);
        }
        // A kernel without a host-only path yet (its rows still run on a GPU).
        #[allow(unreachable_patterns)]
        _ => {
            return Err(format!(
                "{}: no host-only timing for this kernel (src/bench/host.rs)",
                case.kernel()
            ))
        }
    }
    Ok(t)
}

/// The machine's f64 FMA throughput in GFLOP/s (an FMA counts 2), on every rayon thread at
/// once: each thread runs 32 independent FMA chains (vector FMA where the CPU has it: AVX-512F,
/// else AVX2 + FMA) for `millis` milliseconds; the best of three runs.
pub fn fma_gflops(millis: u64) -> f64 {
    use rayon::prelude::*;
    let threads = rayon::current_num_threads();
    let mut best: f64 = 0.0;
    for _ in 0..3 {
        let start = Instant::now();
        let flops: f64 = (0..threads)
            .into_par_iter()
            .map(|i| {
                let mut n = 0u64;
                let mut acc = [1.0 + i as f64 * 1e-9; 32];
                let t = Instant::now();
                while t.elapsed().as_millis() < millis as u128 {
                    fma_chains(&mut acc, 1 << 16);
                    n += 1 << 16;
                }
                std::hint::black_box(acc);
                n as f64 * 32.0 * 2.0
            })
            .sum();
        best = best.max(flops / start.elapsed().as_secs_f64() / 1e9);
    }
    best
}

fn fma_chains(acc: &mut [f64; 32], steps: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked just above).
            return unsafe { fma_chains_avx512(acc, steps) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has AVX2 and FMA (checked just above).
            return unsafe { fma_chains_avx2(acc, steps) };
        }
    }
    fma_chains_body(acc, steps)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn fma_chains_avx512(acc: &mut [f64; 32], steps: usize) {
    fma_chains_body(acc, steps)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_chains_avx2(acc: &mut [f64; 32], steps: usize) {
    fma_chains_body(acc, steps)
}

#[inline(always)]
fn fma_chains_body(acc: &mut [f64; 32], steps: usize) {
    let (m, c) = (
        std::hint::black_box(0.999_999_9),
        std::hint::black_box(1e-7),
    );
    for _ in 0..steps {
        for a in acc.iter_mut() {
            *a = a.mul_add(m, c);
        }
    }
}

/// `vkdiff bench --host-only`: every selected bench row's host work, one line each.
pub fn run(
    ops: &[String],
    variant: Option<&str>,
    row: Option<&str>,
    quick: bool,
    all: bool,
) -> Result<(), String> {
    let caps = planning_caps();
    let threads = rayon::current_num_threads();
    let rate = fma_gflops(300);
    println!(
        "host only: {threads} threads, f64 FMA peak {rate:.1} GFLOP/s (measured); plans for an H100-like device"
    );
    println!(
        "| kernel | variant | row | gen s | ref s | bound s | ref+bound s | ref+bound CPU s | op GFLOP | ref extra GFLOP | bound GFLOP | FLOP time s | ratio | CPU ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    // One row's values for a host-cores-free split (the decode rows' split_k follows a device's
    // core count; with none given they run unsplit, as the bench does without one).
    for b in super::cases(quick, all, None) {
        let name = b.case.variant();
        if !(ops.is_empty() || ops.iter().any(|o| o == b.kernel))
            || !crate::kernels::name_matches(variant, &name)
            || row.is_some_and(|f| !b.label.contains(f))
        {
            continue;
        }
        let op = b.case.model().work().map_or(0.0, |w| w.flops);
        match time_case(&b.case, &caps) {
            Ok(t) => {
                let total = t.ref_s + t.bound_s;
                let flops = op + t.ref_extra_flops + t.bound_flops.unwrap_or(0.0);
                let flop_s = flops / (rate * 1e9);
                let cpu = t.ref_cpu_s.zip(t.bound_cpu_s).map(|(r, b)| r + b);
                println!(
                    "| {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {:.2} | {:.2} | {} | {:.3} | {:.1} | {} |",
                    b.kernel,
                    name,
                    b.label,
                    t.gen_s,
                    t.ref_s,
                    t.bound_s,
                    total,
                    cpu.map_or("—".to_string(), |c| format!("{c:.2}")),
                    op / 1e9,
                    t.ref_extra_flops / 1e9,
                    t.bound_flops
                        .map_or("—".to_string(), |f| format!("{:.2}", f / 1e9)),
                    flop_s,
                    total / flop_s,
                    cpu.map_or("—".to_string(), |c| format!(
                        "{:.1}",
                        c / (flop_s * threads as f64)
                    )),
                );
            }
            Err(e) => println!("| {} | {} | {} | error: {e} |", b.kernel, name, b.label),
        }
    }
    Ok(())
}
