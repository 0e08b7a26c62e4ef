//! `vkdiff bench --ggml-cpu DIR`: the exact reference (`vkdiff-reference`, f64, rayon on every
//! core) timed against ggml's own CPU backend built from the same tree (f32, f16 and int8
//! arithmetic: `build::build_cpu`), row by row on the same inputs and the same thread count. No
//! GPU is opened.
//!
//! A row regenerates the bench case's inputs from its seed, then runs `rounds` rounds, each
//! timing the two sides back to back, each on its second call in a row: the reference's op
//! function (the call a standalone user makes: `mul_mat`, `mul_mat_id`, `flash_attn_ext` with
//! its row terms, `wkv7`; no error bounds) after an untimed call, then one
//! `ggml_backend_graph_compute` of the op as a one-op graph after an untimed compute of it.
//! Each side's median round is reported, and their ratio. On a shared machine the rounds
//! interleave the two sides so that both see the same load.
//!
//! The rows: without `--all`, the decode mat-vec rows of f16, q4_0 and q4_K (one column), the
//! f16 and q4_0 mul_mm rows at 4096×512×4096, flash attention with D = 128 and KV = 4096 at
//! N = 1 and N = 512, and both wkv7 rows; with `--all`, every bench row of these kernels and
//! the MoE rows. A shader-path variant (cm1, cm2) computes the same op on the host: only the
//! scalar variant of each shape is timed. `--row`, `-o`, `--variant` narrow as elsewhere.
//!
//! The last column compares the two results, max |ggml − ref| over max |ref|: a check that both
//! sides computed the same op on the same data, not a judgement (ggml-cpu rounds B to f16 or
//! q8 before its dot products; the judged comparisons are `vkdiff run`'s).

use std::path::Path;
use std::time::Instant;

use vkdiff_gpu::runners::flash_attn::Path as FaPath;
use vkdiff_reference::ops::flash_attn::{flash_attn, flash_attn_ext, FlashAttnInputs};
use vkdiff_reference::ops::{mul_mat, mul_mat_id, wkv7, Output};
use vkdiff_reference::DType;

use super::BenchCase;
use crate::cases::Case;
use crate::ggml::ffi::{process_cpu_s, Ggml, Refusal, Timing};
use crate::model::driver::GraphOp;

/// The two sides of one row: each side's seconds per round, and the results' distance.
#[derive(Debug, Clone, Default)]
pub struct RowTiming {
    /// The reference's wall seconds, one per round.
    pub reference_s: Vec<f64>,
    /// ggml-cpu's `graph_compute` wall seconds, one per round.
    pub ggml_s: Vec<f64>,
    /// The process's CPU seconds (every thread) during the reference, one per round.
    pub reference_cpu_s: Vec<f64>,
    /// The process's CPU seconds during the timed `graph_compute`, one per round.
    pub ggml_cpu_s: Vec<f64>,
    /// max |ggml − ref| / max |ref| over the finite elements (None: layouts differ).
    pub rel_diff: Option<f64>,
}

/// The median of `xs` (the upper one of an even count), NaN when empty.
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Whether the default selection (no `--all`) keeps the row (`quick`: its shrunken shape).
fn default_row(b: &BenchCase, quick: bool) -> bool {
    let dim = |x| if quick { super::quick_dim(x) } else { x };
    match &b.case {
        Case::MulMatVec(c) => {
            c.n == 1 && matches!(c.a_type, DType::F16 | DType::Q4_0 | DType::Q4_K)
        }
        Case::MulMm(c) => {
            c.m == dim(4096) && c.k == dim(4096) && matches!(c.a_type, DType::F16 | DType::Q4_0)
        }
        Case::FlashAttn(c) => c.d == 128 && c.kv == dim(4096),
        Case::Wkv7(_) => true,
        _ => false,
    }
}

/// Whether the row is one of a shape's shader-path duplicates (same op on the host).
fn path_duplicate(case: &Case) -> bool {
    match case {
        Case::MulMm(c) => c.cm1 || c.cm2,
        Case::MulMmId(c) => c.cm1 || c.cm2,
        Case::FlashAttn(c) => c.path != FaPath::Scalar,
        _ => false,
    }
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// One ggml compute of `op`, timed (after the untimed one [`Ggml::run`] makes first); also
/// returns dst.
fn ggml_round(ggml: &Ggml, op: &GraphOp) -> Result<(f64, f64, Vec<f32>), String> {
    let timing = Timing {
        warmup: 0,
        repeats: 1,
        heater: None,
    };
    match ggml.run(op, Some(timing)) {
        Ok(run) => Ok((
            run.compute_ns.unwrap_or(f64::NAN) / 1e9,
            run.compute_cpu_s.unwrap_or(f64::NAN),
            run.values,
        )),
        Err(Refusal::Unsupported(why)) => Err(format!("ggml-cpu does not run it: {why}")),
        Err(Refusal::Error(e)) => Err(format!("ggml-cpu: {e}")),
    }
}

/// max |g − r| / max |r| over the elements where both are finite; +∞ where one side is
/// finite and the other is not (an element ggml never wrote still holds the poison NaN).
fn rel_diff(want: &Output, got: &[f32]) -> Option<f64> {
    if want.values.len() != got.len() {
        return None;
    }
    let (mut diff, mut scale) = (0f64, 0f64);
    for (&r, &g) in want.values.iter().zip(got) {
        let g = g as f64;
        if r.is_finite() != g.is_finite() {
            return Some(f64::INFINITY);
        }
        if r.is_finite() {
            diff = diff.max((g - r).abs());
            scale = scale.max(r.abs());
        }
    }
    Some(if scale > 0.0 { diff / scale } else { diff })
}

/// Times `rounds` rounds of the reference `reference` and ggml's `op`, back to back.
fn rounds_of(
    ggml: &Ggml,
    op: &GraphOp,
    rounds: u32,
    reference: impl Fn() -> Result<Output, String>,
) -> Result<RowTiming, String> {
    let mut t = RowTiming::default();
    let mut last = None;
    for _ in 0..rounds.max(1) {
        // Untimed first, as ggml's side is (its timed compute follows the judged one): both
        // sides are timed on their second call in a row, caches and threads warm. Cold, the
        // reference's first call after ggml's ran 1.9–3.3 ms on 4096×4096 q4_0 (2-core VM)
        // against 1.6 ms warm: its second thread started late on an idle core.
        std::hint::black_box(reference()?);
        let (s, cpu) = (Instant::now(), process_cpu_s());
        let want = std::hint::black_box(reference()?);
        t.reference_s.push(secs(s));
        t.reference_cpu_s.push(process_cpu_s() - cpu);
        let (g, g_cpu, values) = ggml_round(ggml, op)?;
        t.ggml_s.push(g);
        t.ggml_cpu_s.push(g_cpu);
        last = Some((want, values));
    }
    if let Some((want, values)) = last {
        t.rel_diff = rel_diff(&want, &values);
    }
    Ok(t)
}

/// Times one row (see the module notes): one timing, or for flash attention two, `flash_attn`
/// (the values) and `flash_attn_ext` (the values and every row's terms, as vkdiff's judgements
/// call it), each with a label to add to the row's.
pub fn time_row(
    ggml: &Ggml,
    case: &Case,
    rounds: u32,
) -> Result<Vec<(&'static str, RowTiming)>, String> {
    let one = |t: Result<RowTiming, String>| t.map(|t| vec![("", t)]);
    let err = |e: vkdiff_reference::Error| e.to_string();
    match case {
        Case::MulMatVec(c) => {
            let (a, b) = c.inputs()?;
            let op = GraphOp::MulMat {
                a: &a,
                b: &b,
                prec_f32: false,
            };
            one(rounds_of(ggml, &op, rounds, || {
                mul_mat::mul_mat(&a, &b).map_err(err)
            }))
        }
        Case::MulMm(c) => {
            let (a, b) = c.inputs()?;
            let op = GraphOp::MulMat {
                a: &a,
                b: &b,
                prec_f32: false,
            };
            one(rounds_of(ggml, &op, rounds, || {
                mul_mat::mul_mat(&a, &b).map_err(err)
            }))
        }
        Case::MulMatVecId(c) => {
            let (a, b, ids) = c.inputs()?;
            let op = GraphOp::MulMatId {
                a: &a,
                b: &b,
                ids: &ids,
                prec_f32: false,
            };
            one(rounds_of(ggml, &op, rounds, || {
                mul_mat_id::mul_mat_id(&a, &b, &ids).map_err(err)
            }))
        }
        Case::MulMmId(c) => {
            let (a, b, ids) = c.inputs()?;
            let op = GraphOp::MulMatId {
                a: &a,
                b: &b,
                ids: &ids,
                prec_f32: false,
            };
            one(rounds_of(ggml, &op, rounds, || {
                mul_mat_id::mul_mat_id(&a, &b, &ids).map_err(err)
            }))
        }
        Case::FlashAttn(c) => {
            let (q, k, v, mask) = c.inputs()?;
            let sinks = c.sinks.then(|| c.sinks_tensor());
            let inputs = FlashAttnInputs {
                q: &q,
                k: &k,
                v: &v,
                mask: mask.as_ref(),
                sinks: sinks.as_ref(),
                params: c.params(),
            };
            let op = GraphOp::FlashAttn {
                q: &q,
                k: &k,
                v: &v,
                mask: mask.as_ref(),
                sinks: sinks.as_ref(),
                scale: inputs.params.scale,
                max_bias: inputs.params.max_bias,
                softcap: inputs.params.logit_softcap,
                prec_f32: c.prec_f32,
            };
            let values = rounds_of(ggml, &op, rounds, || flash_attn(&inputs).map_err(err))?;
            let terms = rounds_of(ggml, &op, rounds, || {
                flash_attn_ext(&inputs).map(|f| f.out).map_err(err)
            })?;
            Ok(vec![("", values), (" (flash_attn_ext)", terms)])
        }
        Case::Wkv7(c) => {
            let [r, w, k, v, a, b, state] = c.inputs();
            let op = GraphOp::Wkv7([&r, &w, &k, &v, &a, &b, &state]);
            let inputs = wkv7::Wkv7Inputs {
                r: &r,
                w: &w,
                k: &k,
                v: &v,
                a: &a,
                b: &b,
                state: &state,
            };
            one(rounds_of(ggml, &op, rounds, || {
                wkv7::wkv7(&inputs).map_err(err)
            }))
        }
        #[allow(unreachable_patterns)]
        _ => Err(format!(
            "{}: no ggml-cpu timing for this kernel (src/bench/ggml_cpu.rs)",
            case.kernel()
        )),
    }
}

/// The selected rows (see the module notes).
pub fn rows(
    ops: &[String],
    variant: Option<&str>,
    row: Option<&str>,
    quick: bool,
    all: bool,
) -> Vec<BenchCase> {
    super::cases(quick, all, None)
        .into_iter()
        .filter(|b| {
            (ops.is_empty() || ops.iter().any(|o| o == b.kernel))
                && crate::kernels::name_matches(variant, &b.case.variant())
                && row.is_none_or(|f| b.label.contains(f))
                && !path_duplicate(&b.case)
                && (all || default_row(b, quick))
        })
        .collect()
}

/// `vkdiff bench --ggml-cpu DIR`: builds (or finds) ggml's CPU backend from DIR and prints one
/// line per selected row.
pub fn run(
    dir: &Path,
    ops: &[String],
    variant: Option<&str>,
    row: Option<&str>,
    quick: bool,
    all: bool,
    rounds: u32,
) -> Result<(), String> {
    let build = crate::ggml::build::build_cpu(dir)?;
    let threads = rayon::current_num_threads();
    let ggml = Ggml::open_cpu(&build.lib_dir, threads)?;
    println!(
        "reference (rayon) against ggml-cpu {} (build {}): {threads} threads each, {} rounds per row, medians",
        build.root.display(),
        build.key,
        rounds.max(1)
    );
    println!("| kernel | row | op GFLOP | ref s | ggml-cpu s | ref / ggml-cpu | ref CPU s | ggml-cpu CPU s | CPU ratio | ref GFLOP/s | ggml-cpu GFLOP/s | max diff / max |ref| |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for b in rows(ops, variant, row, quick, all) {
        let flops = b.case.model().work().map_or(0.0, |w| w.flops);
        match time_row(&ggml, &b.case, rounds) {
            Ok(parts) => {
                for (what, t) in parts {
                    let (r, g) = (median(&t.reference_s), median(&t.ggml_s));
                    let (rc, gc) = (median(&t.reference_cpu_s), median(&t.ggml_cpu_s));
                    println!(
                        "| {} | {}{what} | {:.2} | {:.4} | {:.4} | {:.2} | {:.4} | {:.4} | {:.2} | {:.1} | {:.1} | {} |",
                        b.kernel,
                        b.label,
                        flops / 1e9,
                        r,
                        g,
                        r / g,
                        rc,
                        gc,
                        rc / gc,
                        flops / r / 1e9,
                        flops / g / 1e9,
                        t.rel_diff.map_or("—".into(), |d| format!("{d:.1e}")),
                    );
                }
            }
            Err(e) => println!("| {} | {} | error: {e} |", b.kernel, b.label),
        }
    }
    Ok(())
}
