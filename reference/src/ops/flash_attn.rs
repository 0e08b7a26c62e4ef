//! GGML_OP_FLASH_ATTN_EXT (`ggml_flash_attn_ext(ctx, q, k, v, mask, scale, max_bias,
//! logit_softcap)`), exact, with ggml's semantics (§9.1 of docs/interface.md):
//!
//! | tensor | shape (ne0, ne1, ne2, ne3) |
//! |---|---|
//! | q | (DK, N, H, ne3), float |
//! | k | (DK, KV, H_k, ne3), any type (f16, q4_0, q8_0, q4_1, q5_0, q5_1, iq4_nl, ...) |
//! | v | (DV, KV, H_v, ne3), not transposed |
//! | mask (optional) | (≥ KV, N_pad ≥ N, ne32, ne33), f16 |
//! | sinks (optional, `ggml_flash_attn_ext_add_sinks`) | (H), f32 |
//! | dst | (DV, H, N, ne3), permuted: element (d, h, q, i3) at ((i3·N + q)·H + h)·DV + d |
//!
//! For query row q of head h in batch i3, with K/V head ⌊h/(H/H_k)⌋ (resp. H_v) and mask plane
//! (h mod ne32, i3 mod ne33):
//!
//! * s' = scale, or scale/logit_softcap **rounded to f32** when logit_softcap ≠ 0 (ggml and the
//!   Vulkan host both divide in f32 before anything else, §12 item 6);
//! * x_j = s'·(q · k_j); S_j = x_j, or logit_softcap·tanh(x_j) with a softcap;
//! * S_j += slope(h)·`mask[q][j]`, slope(h) = m0^(h+1) for h < n_head_log2, else
//!   m1^(2(h − n_head_log2) + 1), 1 without ALiBi; n_head_log2 = 2^⌊log₂ H⌋ (the power itself,
//!   §12 item 7) and m0 = 2^(−max_bias/n_head_log2), m1 = 2^(−max_bias/2/n_head_log2) computed
//!   in f32 with `powf` as ggml's host does; the reference then takes m0^(h+1) exactly (f64);
//! * O = Σ_j softmax(S)_j · v_j, over the keys whose mask term is not −∞.
//!
//! K and V are decoded independently: they may be of different types (recent ggml accepts any
//! pair of its flash-attention types but bf16 with another).
//!
//! **Sinks** (later ggml): one f32 logit σ_h per head joins the softmax's maximum and
//! denominator as a key without a value: O = Σ_j e^(S_j − M)·v_j / (Σ_j e^(S_j − M) + e^(σ_h − M))
//! with M = max(max_j S_j, σ_h). It is not scaled, capped, masked nor biased. A row whose keys
//! are all masked then has the sink alone in its denominator and is exactly 0 (ggml's CPU path:
//! its accumulator 0 scaled by 1/1), not NaN.
//!
//! The CPU backend rounds q to K's vec-dot type (f16, or q8_0 for quantized K) and accumulates
//! V·P in f16 for f16 V; those are the CPU's own roundings, not the op: the reference keeps every
//! input value exact and accumulates in f64 (dot products of ≤ 1024 terms of ≤ 43-bit products,
//! exact up to f64 rounding).
//!
//! **A fully masked row** (every mask term −∞, e.g. a causal row with no visible key): ggml's CPU
//! path skips each key whose mask term is −∞, so its running sum stays S = 0 and its accumulator
//! stays 0; at the pinned commit it then scales by 1/S = +∞ and every element of the row becomes
//! 0·∞ = **NaN**. (Later ggml, with the attention-sinks change, guards S = 0 and writes 0.) The
//! reference returns NaN for such rows, flags them in [`RowTerms::fully_masked`], and vkdiff
//! reports a divergence there as its own finding ("fully masked row"), apart from ordinary
//! out-of-bound elements.
//!
//! **NaN or ±∞ inputs** (fuzzed block scales): a masked key is skipped whatever its K and V
//! hold (as the CPU path does); an unmasked key with a non-finite logit makes its whole row NaN
//! ([`RowTerms::non_finite`]), one with a non-finite V element makes that output element NaN.
//! Such values have no defined result on Vulkan and are not judged.

use rayon::prelude::*;

use super::kernel::{block, decode_fast, exact_products, fast_format, pack_panel, zeroed, Values};
use super::prim::LANES;
use super::Output;
use crate::formats::dequantize_into;
use crate::tensor::{AsTensorView, Tensor, TensorView};
use crate::{DType, Error, Result};

const OP: &str = "flash_attn_ext";

/// GGML_KQ_MASK_PAD: at the pinned commit ggml asserts mask.ne1 ≥ GGML_PAD(N, 64) (later ggml
/// accepts any mask.ne1 ≥ N; the reference accepts both).
pub const KQ_MASK_PAD: usize = 64;

/// The op parameters (op_params 0..2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlashAttnParams {
    /// Scale applied to q·k.
    pub scale: f32,
    /// ALiBi maximum bias (0: no ALiBi).
    pub max_bias: f32,
    /// Logit soft-capping value (0: none).
    pub logit_softcap: f32,
}

impl FlashAttnParams {
    /// s', the factor applied to q·k before the softcap: `scale`, or `scale / logit_softcap`
    /// rounded to f32 (what ggml's CPU path and the Vulkan host push, §12 item 6).
    pub fn dot_scale(&self) -> f32 {
        if self.logit_softcap != 0.0 {
            self.scale / self.logit_softcap
        } else {
            self.scale
        }
    }
}

/// The ALiBi constants ggml's host derives from max_bias and the head count (push constants
/// 26..28 of the Vulkan kernel).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Alibi {
    /// max_bias; slopes are 1 when it is not positive.
    pub max_bias: f32,
    /// 2^⌊log₂ H⌋ (the power of two, not its logarithm).
    pub n_head_log2: u32,
    /// 2^(−max_bias/n_head_log2), in f32 as ggml computes it.
    pub m0: f32,
    /// 2^(−(max_bias/2)/n_head_log2), in f32.
    pub m1: f32,
}

impl Alibi {
    /// The constants for `n_head` heads (H = q.ne2), computed as ggml's host does: f32 `powf`.
    pub fn new(max_bias: f32, n_head: usize) -> Alibi {
        let n_head_log2 = if n_head == 0 {
            0
        } else {
            1u32 << (usize::BITS - 1 - n_head.leading_zeros())
        };
        let n = n_head_log2 as f32;
        Alibi {
            max_bias,
            n_head_log2,
            m0: 2.0f32.powf(-max_bias / n),
            m1: 2.0f32.powf(-(max_bias / 2.0) / n),
        }
    }

    /// Head h's slope as (base, exponent): slope = base^exponent. (1, 1) without ALiBi.
    pub fn slope_parts(&self, h: usize) -> (f32, u32) {
        if self.max_bias <= 0.0 {
            return (1.0, 1);
        }
        let n = self.n_head_log2 as usize;
        // Exponents saturate at u32::MAX (2^32 heads and more: no overflow panic).
        let exp = |e: usize| u32::try_from(e).unwrap_or(u32::MAX);
        if h < n {
            (self.m0, exp(h.saturating_add(1)))
        } else {
            (self.m1, exp((h - n).saturating_mul(2).saturating_add(1)))
        }
    }

    /// Head h's slope, base^exponent from the f32 base, in f64.
    pub fn slope(&self, h: usize) -> f64 {
        let (base, e) = self.slope_parts(h);
        (base as f64).powi(i32::try_from(e).unwrap_or(i32::MAX))
    }
}

/// The inputs of one FLASH_ATTN_EXT. `T` is [`Tensor`] or [`TensorView`] (anything
/// [`AsTensorView`]).
#[derive(Debug)]
pub struct FlashAttnInputs<'a, T: ?Sized = Tensor> {
    /// Queries (DK, N, H, ne3).
    pub q: &'a T,
    /// Keys (DK, KV, H_k, ne3).
    pub k: &'a T,
    /// Values (DV, KV, H_v, ne3).
    pub v: &'a T,
    /// Optional f16 mask (≥ KV, ≥ N, ne32, ne33).
    pub mask: Option<&'a T>,
    /// Optional f32 sinks (H): one logit per query head (see the module notes).
    pub sinks: Option<&'a T>,
    /// scale, max_bias, logit_softcap.
    pub params: FlashAttnParams,
}

impl<T: ?Sized> Clone for FlashAttnInputs<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for FlashAttnInputs<'_, T> {}

/// The inputs as views.
struct Views<'a> {
    q: TensorView<'a>,
    k: TensorView<'a>,
    v: TensorView<'a>,
    mask: Option<TensorView<'a>>,
    sinks: Option<TensorView<'a>>,
    params: FlashAttnParams,
}

impl<'a, T: AsTensorView + ?Sized> FlashAttnInputs<'a, T> {
    fn views(&self) -> Views<'a> {
        Views {
            q: self.q.view(),
            k: self.k.view(),
            v: self.v.view(),
            mask: self.mask.map(|m| m.view()),
            sinks: self.sinks.map(|s| s.view()),
            params: self.params,
        }
    }
}

/// The exact terms of one output row (query q of head h in batch i3): what the op computes
/// along the way, kept for the error model.
#[derive(Debug, Clone, PartialEq)]
pub struct RowTerms {
    /// Query row.
    pub q: usize,
    /// Head.
    pub h: usize,
    /// Batch (dim 3).
    pub i3: usize,
    /// V's (head, batch) for this row.
    pub v_index: (usize, usize),
    /// x_j = s'·(q · k_j), before the softcap.
    pub x: Vec<f64>,
    /// |s'|·Σ_d |q_d·k_jd|: what the rounding error of x_j scales with.
    pub dot_magnitude: Vec<f64>,
    /// `mask[q][j]` (0 without a mask; −∞ where masked).
    pub mask: Vec<f64>,
    /// S_j, the logits the softmax takes (−∞ where masked).
    pub logits: Vec<f64>,
    /// softmax(S)_j (0 where masked; all 0 when the row is fully masked).
    pub weights: Vec<f64>,
    /// The head's ALiBi slope (1 without ALiBi).
    pub slope: f64,
    /// The head's sink logit σ_h, if the op has sinks.
    pub sink: Option<f64>,
    /// The sink's softmax weight e^(σ_h − M)/(Σ_j e^(S_j − M) + e^(σ_h − M)) (0 without a sink;
    /// 1 in a fully masked row with a sink).
    pub sink_weight: f64,
    /// Every key masked: the output row is NaN, or exactly 0 with a sink (see the module
    /// notes).
    pub fully_masked: bool,
    /// An unmasked key has a NaN or infinite logit (from NaN or ±∞ in its K row): the row has
    /// no defined value and is NaN.
    pub non_finite: bool,
}

/// The result: dst and, for each of its rows (same order: ((i3·N + q)·H + h)), the exact terms.
#[derive(Debug, Clone, PartialEq)]
pub struct FlashAttn {
    /// dst (DV, H, N, ne3).
    pub out: Output,
    /// One entry per dst row.
    pub rows: Vec<RowTerms>,
}

impl FlashAttn {
    /// The row terms of flat dst position `i`.
    ///
    /// # Panics
    /// If `i` is not a position of dst (`i ≥ out.values.len()`).
    pub fn row_of(&self, i: usize) -> &RowTerms {
        &self.rows[i / self.out.ne[0]]
    }
}

fn shape(reason: String) -> Error {
    Error::Shape { op: OP, reason }
}

/// Checks ggml's rules (ggml_flash_attn_ext's asserts) and returns dst's shape (DV, H, N, ne3).
pub fn check<T: AsTensorView + ?Sized>(inputs: &FlashAttnInputs<'_, T>) -> Result<[usize; 4]> {
    check_views(&inputs.views())
}

fn check_views(inputs: &Views) -> Result<[usize; 4]> {
    let Views {
        q,
        k,
        v,
        mask,
        sinks,
        ..
    } = inputs;
    let (nq, nk, nv) = (q.ne(), k.ne(), v.ne());
    for (what, t) in [("q", q), ("k", k), ("v", v)] {
        if t.dtype() == DType::I32 || t.dtype() == DType::Q8_1 {
            return Err(Error::Type {
                op: OP,
                what,
                dtype: t.dtype(),
            });
        }
    }
    if q.dtype().is_quantized() {
        return Err(Error::Type {
            op: OP,
            what: "q",
            dtype: q.dtype(),
        });
    }
    if nk[0] != nq[0] {
        return Err(shape(format!(
            "k rows have {} elements but q rows {}",
            nk[0], nq[0]
        )));
    }
    if nv[1] != nk[1] {
        return Err(shape(format!("v has {} keys but k has {}", nv[1], nk[1])));
    }
    if nq[2] % nk[2] != 0 || nq[2] % nv[2] != 0 {
        return Err(shape(format!(
            "heads: q has {}, k {}, v {}; q's must be a multiple of both",
            nq[2], nk[2], nv[2]
        )));
    }
    if nq[3] != nk[3] || nq[3] != nv[3] {
        return Err(shape(format!(
            "dim 3: q {}, k {}, v {} must be equal",
            nq[3], nk[3], nv[3]
        )));
    }
    if let Some(m) = mask {
        if m.dtype() != DType::F16 {
            return Err(Error::Type {
                op: OP,
                what: "mask",
                dtype: m.dtype(),
            });
        }
        if !m.is_contiguous() {
            return Err(shape("the mask must be contiguous".into()));
        }
        let nm = m.ne();
        if nm[0] < nk[1] || nm[1] < nq[1] {
            return Err(shape(format!(
                "mask {nm:?} is smaller than KV × N = {} × {}",
                nk[1], nq[1]
            )));
        }
        if nq[2] % nm[2] != 0 || nq[3] % nm[3] != 0 {
            return Err(shape(format!(
                "mask planes {}×{} do not divide q's {}×{}",
                nm[2], nm[3], nq[2], nq[3]
            )));
        }
    } else if inputs.params.max_bias > 0.0 {
        return Err(shape("ALiBi (max_bias > 0) needs a mask".into()));
    }
    if let Some(s) = sinks {
        if s.dtype() != DType::F32 {
            return Err(Error::Type {
                op: OP,
                what: "sinks",
                dtype: s.dtype(),
            });
        }
        if s.ne() != [nq[2], 1, 1, 1] || !s.is_contiguous() {
            return Err(shape(format!(
                "sinks {:?} must be a dense vector of one logit per query head ({})",
                s.ne(),
                nq[2]
            )));
        }
    }
    Ok([nv[0], nq[2], nq[1], nq[3]])
}

/// The exact op, with the terms of every row (what an error model needs). The output values are
/// bit-identical to [`flash_attn`]'s; this keeps five KV-long vectors per dst row, so prefer
/// [`flash_attn`] when only the values are wanted.
pub fn flash_attn_ext<T: AsTensorView + ?Sized>(
    inputs: &FlashAttnInputs<'_, T>,
) -> Result<FlashAttn> {
    let (out, rows) = run(&inputs.views(), true)?;
    Ok(FlashAttn { out, rows })
}

/// The exact op: dst (DV, H, N, ne3), permuted as ggml's (see the module notes).
///
/// ```
/// use vkdiff_reference::ops::flash_attn::{flash_attn, FlashAttnInputs, FlashAttnParams};
/// use vkdiff_reference::tensor::Tensor;
/// use vkdiff_reference::DType;
///
/// // D = 1, one query, two keys: q = 1, k = (1, 2), v = (3, 5), scale 1. S = (1, 2) and
/// // O = (3·e¹ + 5·e²) / (e¹ + e²).
/// let q = Tensor::from_f32(DType::F32, [1, 1, 1, 1], &[1.0])?;
/// let k = Tensor::from_f32(DType::F16, [1, 2, 1, 1], &[1.0, 2.0])?;
/// let v = Tensor::from_f32(DType::F16, [1, 2, 1, 1], &[3.0, 5.0])?;
/// let params = FlashAttnParams { scale: 1.0, max_bias: 0.0, logit_softcap: 0.0 };
/// let out = flash_attn(&FlashAttnInputs { q: &q, k: &k, v: &v, mask: None, sinks: None, params })?;
/// assert_eq!(out.ne, [1, 1, 1, 1]);
/// let e = std::f64::consts::E;
/// assert!((out.values[0] - (3.0 + 5.0 * e) / (1.0 + e)).abs() < 1e-15);
/// # Ok::<(), vkdiff_reference::Error>(())
/// ```
pub fn flash_attn<T: AsTensorView + ?Sized>(inputs: &FlashAttnInputs<'_, T>) -> Result<Output> {
    Ok(run(&inputs.views(), false)?.0)
}

/// Query rows per parallel task.
const QB: usize = 64;

/// Keys per block of the V product (the decoded V block stays in L2).
const KVB: usize = 256;

/// Keys per block of the V product where V is decoded as it is used ([`KvHead::Streamed`]).
const KVB_STREAMED: usize = 32;

/// The first mask value without a defined result (NaN or +∞), in the order the op visits rows
/// ((i3·N + q)·H + h) and keys, as [`Error::Value`].
fn check_mask(ms: &[f64], mne: [usize; 4], [_, h, n, ne3]: [usize; 4], kv: usize) -> Result<()> {
    let bad = |m: f64| m.is_nan() || m == f64::INFINITY;
    // First bad key of every mask row, then the first dst row that reads a bad one.
    let first_bad: Vec<Option<usize>> = ms
        .chunks_exact(mne[0])
        .map(|row| row[..kv].iter().position(|&m| bad(m)))
        .collect();
    for i3 in 0..ne3 {
        for iq in 0..n {
            for ih in 0..h {
                let at = ((i3 % mne[3]) * mne[2] + ih % mne[2]) * mne[1] + iq;
                if let Some(j) = first_bad[at] {
                    let m = ms[at * mne[0] + j];
                    return Err(Error::Value {
                        op: OP,
                        reason: format!(
                            "mask[{iq}][{j}] = {m}: only finite values and −∞ have a defined result"
                        ),
                    });
                }
            }
        }
    }
    Ok(())
}

/// The per-row part of the op, in the reference's exact order: logits from the dot products
/// (`dots[j]` = q·k_j summed in d order from +0, `mags[j]` the same over |q|·|k|) and the mask
/// row, then the softmax weights. Fills `t` (whose vectors are KV long).
fn softmax_row(
    dots: &[f64],
    mags: Option<&[f64]>,
    mask: Option<&[f64]>,
    sp: f64,
    cap: f64,
    t: &mut RowTerms,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked just above).
            return unsafe { softmax_row_avx512(dots, mags, mask, sp, cap, t) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { softmax_row_avx2(dots, mags, mask, sp, cap, t) };
        }
    }
    softmax_row_body(dots, mags, mask, sp, cap, t)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn softmax_row_avx512(
    dots: &[f64],
    mags: Option<&[f64]>,
    mask: Option<&[f64]>,
    sp: f64,
    cap: f64,
    t: &mut RowTerms,
) {
    softmax_row_body(dots, mags, mask, sp, cap, t)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn softmax_row_avx2(
    dots: &[f64],
    mags: Option<&[f64]>,
    mask: Option<&[f64]>,
    sp: f64,
    cap: f64,
    t: &mut RowTerms,
) {
    softmax_row_body(dots, mags, mask, sp, cap, t)
}

/// [`softmax_row`]'s work (no closures: they would not get the target features).
#[inline(always)]
fn softmax_row_body(
    dots: &[f64],
    mags: Option<&[f64]>,
    mask: Option<&[f64]>,
    sp: f64,
    cap: f64,
    t: &mut RowTerms,
) {
    let kv = dots.len();
    let slope = t.slope;
    let x = &mut t.x[..kv];
    for (x, &d) in x.iter_mut().zip(dots) {
        *x = sp * d;
    }
    match mags {
        Some(m) => {
            for (o, &m) in t.dot_magnitude[..kv].iter_mut().zip(m) {
                *o = sp.abs() * m;
            }
        }
        None => t.dot_magnitude[..kv].fill(0.0),
    }
    let mk = &mut t.mask[..kv];
    match mask {
        Some(m) => mk.copy_from_slice(&m[..kv]),
        None => mk.fill(0.0),
    }
    // S_j = x_j (or cap·tanh x_j) + slope·mask_j, −∞ where masked; written branch-free so the
    // common case vectorizes (the same operations on the same operands as a branchy loop).
    let logits = &mut t.logits[..kv];
    let (mut live, mut bad) = (false, false);
    for ((l, &x), &m) in logits.iter_mut().zip(x.iter()).zip(mk.iter()) {
        let s = if cap != 0.0 { cap * x.tanh() } else { x };
        let v = s + slope * m;
        let masked = m == f64::NEG_INFINITY;
        *l = if masked { f64::NEG_INFINITY } else { v };
        live |= !masked;
        bad |= !masked & !v.is_finite();
    }
    t.fully_masked = !live;
    t.non_finite = bad;
    t.sink_weight = 0.0;
    let weights = &mut t.weights[..kv];
    if t.fully_masked || t.non_finite {
        weights.fill(0.0);
        // The sink alone: its weight is 1 and O = 0.
        if t.fully_masked && !t.non_finite && t.sink.is_some() {
            t.sink_weight = 1.0;
        }
        return;
    }
    // The largest logit. f64::max is associative and commutative over these values (finite or
    // −∞) up to the sign of a zero maximum, and that sign cannot change s − max for any s
    // (x − (±0) = x for x ≠ 0; ±0 − (±0) is ±0 and exp(±0) = 1): so lanes in any order.
    let mut lanes = [f64::NEG_INFINITY; 8];
    let mut chunks = logits.chunks_exact(8);
    for c in &mut chunks {
        for i in 0..8 {
            lanes[i] = lanes[i].max(c[i]);
        }
    }
    let mut max = f64::NEG_INFINITY;
    for &x in chunks.remainder().iter().chain(&lanes) {
        max = max.max(x);
    }
    // The sink joins the maximum and (below) the denominator, after the keys.
    if let Some(s) = t.sink {
        max = max.max(s);
    }
    // exp(−∞ − max) = +0 exactly: no need to call exp for a masked key.
    for (w, &s) in weights.iter_mut().zip(logits.iter()) {
        *w = if s == f64::NEG_INFINITY {
            0.0
        } else {
            (s - max).exp()
        };
    }
    let sink = t.sink.map_or(0.0, |s| (s - max).exp());
    // Without a sink, + 0.0 leaves the (positive) key sum's bits as they were.
    let sum: f64 = weights.iter().sum::<f64>() + sink;
    for w in weights.iter_mut() {
        *w /= sum;
    }
    t.sink_weight = sink / sum;
}

/// O = Σ_j w_j·v_j over the unmasked keys in j order, one row at a time, for a V holding NaN or
/// ±∞: such an element makes its output element NaN (the reference's definition).
fn pv_row_checked(t: &RowTerms, vd: &[f64], dvp: usize, out: &mut [f64]) {
    out.iter_mut().for_each(|o| *o = 0.0);
    for (j, &w) in t.weights.iter().enumerate() {
        if t.logits[j] == f64::NEG_INFINITY {
            continue;
        }
        for (o, x) in out.iter_mut().zip(&vd[j * dvp..]) {
            *o = if x.is_finite() { *o + w * x } else { f64::NAN };
        }
    }
}

/// The K and V heads (ik2, iv2) of batch i3 that a GQA group's query rows read.
enum KvHead {
    /// Decoded once, whole, for many query rows (a prefill): every block of rows reads them.
    Whole {
        /// K as panels of [`LANES`] keys (k-major).
        kp: Vec<f64>,
        /// V rows, `dvp` values apart, when V holds NaN or ±∞ (else empty).
        vd: Vec<f64>,
        /// V in d-panels for the tiled product (empty when V holds NaN or ±∞).
        vp: Vec<f64>,
        /// V is finite everywhere.
        v_finite: bool,
    },
    /// For the few rows of a decode step: a K panel, and V a block of keys, decoded where
    /// they are used. Decoded whole, K and V would be written out and read back (4 MiB each
    /// in f64 for 4096 keys of 128) for a handful of products per element.
    Streamed,
}

/// The query heads of each batch grouped by the (K head, V head) they read, in head order:
/// (i3, first head, end) per group.
fn kv_groups(ne: [usize; 4], k_heads: usize, v_heads: usize) -> Vec<(usize, usize, usize)> {
    let [_, h, _, ne3] = ne;
    let kv_of = |ih: usize| (ih / (h / k_heads), ih / (h / v_heads));
    let mut groups = Vec::new();
    for i3 in 0..ne3 {
        let mut start = 0;
        for ih in 1..=h {
            if ih == h || kv_of(ih) != kv_of(start) {
                groups.push((i3, start, ih));
                start = ih;
            }
        }
    }
    groups
}

/// Keys p·LANES .. of K head (ik2, i3) as a panel (k-major, LANES keys wide; zero past KV).
fn k_panel(
    k: &TensorView,
    (ik2, i3): (usize, usize),
    p: usize,
    tmp: &mut [f64],
    panel: &mut [f64],
) -> Result<()> {
    let [dk, kv, ..] = k.ne();
    let j0 = p * LANES;
    let (keys, d) = (LANES.min(kv - j0), (0, dk));
    pack_panel(k, (ik2, i3), j0, keys, d, Values::Exact, tmp, panel)
}

/// V rows j0 .. j0 + jn of head (iv2, i3) decoded into d-panels, `out[(dp·jn + j)·LANES + l]` =
/// V[j0 + j][LANES·dp + l] (zero past DV), through `row` (DV rounded up to LANES values);
/// whether they are all finite.
fn v_panels(
    v: &TensorView,
    (iv2, i3): (usize, usize),
    (j0, jn): (usize, usize),
    row: &mut [f64],
    out: &mut [f64],
) -> Result<bool> {
    let mut finite = true;
    for j in 0..jn {
        v_row(v, (iv2, i3), j0 + j, row)?;
        finite &= row.iter().all(|x| x.is_finite());
        for (dp, lanes) in row.chunks_exact(LANES).enumerate() {
            out[(dp * jn + j) * LANES..(dp * jn + j + 1) * LANES].copy_from_slice(lanes);
        }
    }
    Ok(finite)
}

/// V row j of head (iv2, i3), decoded into `row[..DV]`.
fn v_row(v: &TensorView, (iv2, i3): (usize, usize), j: usize, row: &mut [f64]) -> Result<()> {
    let dv = v.ne()[0];
    match v.row_bytes(j, iv2, i3, 0, dv) {
        Some(bytes) if fast_format(v.dtype()) => decode_fast(v.dtype(), bytes, row, 1),
        _ => v.decode_row(j, iv2, i3, 0, &mut row[..dv], dequantize_into)?,
    }
    Ok(())
}

/// Decodes the K and V heads (ik2, iv2) of batch i3 whole ([`KvHead::Whole`]).
fn kv_head(inputs: &Views, dv: usize, (i3, ik2, iv2): (usize, usize, usize)) -> Result<KvHead> {
    let Views { k, v, .. } = inputs;
    let [dk, kv, ..] = k.ne();
    let mut kp = vec![0.0; kv.div_ceil(LANES) * dk * LANES];
    let mut tmp = vec![0.0; dk];
    for (p, panel) in kp.chunks_exact_mut(dk * LANES).enumerate() {
        k_panel(k, (ik2, i3), p, &mut tmp, panel)?;
    }
    // V straight into d-panels for the tiled product: panel dp holds V[j][16·dp ..] for every
    // key j (k-major, as the tile reads it), so a block of keys is contiguous. Only a V
    // holding NaN or ±∞ is kept as rows too, for the checked product.
    let dvp = dv.div_ceil(LANES) * LANES;
    let mut vp = vec![0.0; kv * dvp];
    let mut row = vec![0.0; dvp];
    let v_finite = v_panels(v, (iv2, i3), (0, kv), &mut row, &mut vp)?;
    let mut vd = Vec::new();
    if !v_finite {
        vp = Vec::new();
        vd = vec![0.0; kv * dvp];
        for (j, row) in vd.chunks_exact_mut(dvp).enumerate() {
            v_row(v, (iv2, i3), j, row)?;
        }
    }
    Ok(KvHead::Whole {
        kp,
        vd,
        vp,
        v_finite,
    })
}

/// `dots[r·P·LANES + j]` = q_r · k_j for every row of `qs` and key j (P key panels), each
/// sequential in d from +0 (the reference's fold); with `q_abs` (|q| rows), the same over |q|
/// and |K| (|x| of each exact value, the padding lanes stay +0) too, from the same panels.
/// `fused`: the products are exact.
fn qk(
    k: &TensorView,
    kh: (usize, usize),
    kvh: &KvHead,
    (qs, q_abs): (&[&[f64]], Option<&[&[f64]]>),
    fused: bool,
) -> Result<(Vec<f64>, Option<Vec<f64>>)> {
    let [dk, kv, ..] = k.ne();
    let panels = kv.div_ceil(LANES);
    let mut dots = vec![0.0; qs.len() * panels * LANES];
    let mut mags = q_abs.map(|_| dots.clone());
    let mut acc = vec![[0.0; LANES]; qs.len()];
    let streamed = matches!(kvh, KvHead::Streamed);
    let mut own = vec![0.0; if streamed { dk * LANES } else { 0 }];
    let mut abs = vec![0.0; if q_abs.is_some() { dk * LANES } else { 0 }];
    let mut tmp = vec![0.0; if streamed { dk } else { 0 }];
    for p in 0..panels {
        let panel = match kvh {
            KvHead::Whole { kp, .. } => &kp[p * dk * LANES..(p + 1) * dk * LANES],
            KvHead::Streamed => {
                k_panel(k, kh, p, &mut tmp, &mut own)?;
                &own[..]
            }
        };
        let mut products = |panel: &[f64], rows: &[&[f64]], out: &mut [f64]| {
            acc.iter_mut().for_each(|a| *a = [0.0; LANES]);
            block(dk, panel, LANES, rows, &mut acc, fused);
            for (r, a) in acc.iter().enumerate() {
                let at = r * panels * LANES + p * LANES;
                out[at..at + LANES].copy_from_slice(a);
            }
        };
        products(panel, qs, &mut dots);
        if let (Some(q_abs), Some(mags)) = (q_abs, mags.as_mut()) {
            for (a, x) in abs.iter_mut().zip(panel) {
                *a = x.abs();
            }
            products(&abs, q_abs, mags);
        }
    }
    Ok((dots, mags))
}

/// O = W · V for finite V: `acc[dp·R + r][l]` = Σ_j `w_r[j]·V[j][LANES·dp + l]`, sequential in
/// j from +0, for the R rows of `w_rows` (KV weights each). None: V is streamed and holds NaN
/// or ±∞ (which only the whole path handles).
fn pv(
    v: &TensorView,
    vh: (usize, usize),
    kvh: &KvHead,
    w_rows: &[&[f64]],
) -> Result<Option<Vec<[f64; LANES]>>> {
    let [dv, kv, ..] = v.ne();
    let d_panels = dv.div_ceil(LANES);
    let qn = w_rows.len();
    let mut acc = vec![[0.0; LANES]; d_panels * qn];
    let streamed = matches!(kvh, KvHead::Streamed);
    // Streamed, a block of keys short enough for its decoded V (32 KiB at DV = 128) to stay in
    // L1 while the rows use it.
    let kvb = if streamed { KVB_STREAMED } else { KVB };
    let mut own = vec![0.0; if streamed { kvb * d_panels * LANES } else { 0 }];
    let mut row = vec![0.0; if streamed { d_panels * LANES } else { 0 }];
    for j0 in (0..kv).step_by(kvb) {
        let jn = kvb.min(kv - j0);
        // Panel dp's rows j0 .. j0 + jn: at vp[(dp·kv + j0)·LANES ..] whole, own[dp·jn·LANES ..]
        // streamed.
        let (src, at): (&[f64], _) = match kvh {
            KvHead::Whole { vp, .. } => (vp, (kv, j0)),
            KvHead::Streamed => {
                if !v_panels(v, vh, (j0, jn), &mut row, &mut own)? {
                    return Ok(None);
                }
                (&own, (jn, 0))
            }
        };
        let w_blk: Vec<&[f64]> = w_rows.iter().map(|w| &w[j0..j0 + jn]).collect();
        for (dp, tile) in acc.chunks_exact_mut(qn).enumerate() {
            block(
                jn,
                &src[(dp * at.0 + at.1) * LANES..],
                LANES,
                &w_blk,
                tile,
                false,
            );
        }
    }
    Ok(Some(acc))
}

/// One output row and (with `keep`) its terms.
type Row = (Vec<f64>, Option<RowTerms>);

/// The op for the query heads `first .. end` of batch i3, whose K and V heads are `kvh` (a
/// GQA group): every query row's output and (with `keep`) terms, head by head, in query order.
/// The rows of all the group's heads are stacked (head-major) and go through the tiles
/// together, so each K and V panel read serves every head of the group (decode: one row per
/// head); every output is still its own sum in the reference's order. None: `kvh` is
/// [`KvHead::Streamed`] and V holds NaN or ±∞ (the whole path handles it).
fn heads(
    inputs: &Views,
    ne: [usize; 4],
    (i3, first, end): (usize, usize, usize),
    ms: Option<&[f64]>,
    sinks: Option<&[f64]>,
    keep: bool,
    kvh: &KvHead,
) -> Result<Option<Vec<Row>>> {
    let Views {
        q, k, v, params, ..
    } = inputs;
    let [dv, h, n, _] = ne;
    let (dk, kv) = (q.ne()[0], k.ne()[1]);
    let (ik2, iv2) = (first / (h / k.ne()[2]), first / (h / v.ne()[2]));
    let mne = inputs.mask.map(|m| m.ne()).unwrap_or([0; 4]);
    let alibi = Alibi::new(params.max_bias, h);
    let sp = params.dot_scale() as f64;
    let cap = params.logit_softcap as f64;
    // Stacked row g: head first + g / n, query g % n.
    let rows_total = (end - first) * n;
    // Q rows (and |Q|).
    let mut qd = vec![0.0; rows_total * dk];
    for (g, row) in qd.chunks_exact_mut(dk).enumerate() {
        q.decode_row(g % n, first + g / n, i3, 0, row, dequantize_into)?;
    }
    let qd_abs: Option<Vec<f64>> = keep.then(|| qd.iter().map(|x| x.abs()).collect());
    let (panels, dvp) = (kv.div_ceil(LANES), dv.div_ceil(LANES) * LANES);
    // Q·K is exact term by term for f32 Q and f16 or q8_0 K, say: fused multiply-adds.
    let fused = exact_products(q.dtype(), k.dtype());
    // Only a whole V may hold NaN or ±∞ (`pv` refuses them streamed).
    let (v_checked, vd) = match kvh {
        KvHead::Whole { vd, v_finite, .. } => (!v_finite, &vd[..]),
        KvHead::Streamed => (false, &[][..]),
    };

    let blocks: Vec<Option<Vec<Row>>> = (0..rows_total)
        .step_by(QB)
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|q0| {
            let qn = QB.min(rows_total - q0);
            let span = q0 * dk..(q0 + qn) * dk;
            let q_rows: Vec<&[f64]> = qd[span.clone()].chunks_exact(dk).collect();
            let q_abs: Option<Vec<&[f64]>> = qd_abs
                .as_ref()
                .map(|qs| qs[span].chunks_exact(dk).collect());
            let (dots, mags) = qk(k, (ik2, i3), kvh, (&q_rows, q_abs.as_deref()), fused)?;
            let mut weights = vec![0.0; qn * kv];
            let mut rows: Vec<Row> = Vec::with_capacity(qn);
            let mut computed = vec![false; qn];
            let mut scratch = None;
            for r in 0..qn {
                let (ih, iq) = (first + (q0 + r) / n, (q0 + r) % n);
                let slope = alibi.slope(ih);
                let mut t = scratch.take().unwrap_or_else(|| RowTerms {
                    q: iq,
                    h: ih,
                    i3,
                    v_index: (iv2, i3),
                    x: vec![0.0; kv],
                    dot_magnitude: vec![0.0; kv],
                    mask: vec![0.0; kv],
                    logits: vec![f64::NEG_INFINITY; kv],
                    weights: vec![0.0; kv],
                    slope,
                    sink: None,
                    sink_weight: 0.0,
                    fully_masked: true,
                    non_finite: false,
                });
                // The scratch row may come from another head: its sink too.
                (t.q, t.h, t.slope, t.sink) = (iq, ih, slope, sinks.map(|s| s[ih]));
                let at = r * panels * LANES;
                let mask_row = ms.map(|ms| {
                    let row = ((i3 % mne[3]) * mne[2] + ih % mne[2]) * mne[1] + iq;
                    &ms[row * mne[0]..row * mne[0] + kv]
                });
                softmax_row(
                    &dots[at..at + kv],
                    mags.as_ref().map(|m| &m[at..at + kv]),
                    mask_row,
                    sp,
                    cap,
                    &mut t,
                );
                weights[r * kv..(r + 1) * kv].copy_from_slice(&t.weights);
                // A fully masked row with a sink is computed: exactly 0.
                computed[r] = !t.non_finite && (!t.fully_masked || t.sink.is_some());
                let mut out = vec![f64::NAN; dv];
                if v_checked && computed[r] {
                    pv_row_checked(&t, vd, dvp, &mut out);
                }
                if keep {
                    rows.push((out, Some(t)));
                } else {
                    rows.push((out, None));
                    scratch = Some(t);
                }
            }
            if !v_checked {
                // O = W · V, sequential in j from +0. A masked key has weight 0 and a finite V
                // row, so it adds ±0 to a sum that is never −0: the same bits as skipping it.
                let w_rows: Vec<&[f64]> = weights.chunks_exact(kv).collect();
                let Some(acc) = pv(v, (iv2, i3), kvh, &w_rows)? else {
                    return Ok(None);
                };
                for (r, (out, _)) in rows.iter_mut().enumerate() {
                    if computed[r] {
                        for (d, o) in out.iter_mut().enumerate() {
                            *o = acc[(d / LANES) * qn + r][d % LANES];
                        }
                    }
                }
            }
            Ok(Some(rows))
        })
        .collect::<Result<_>>()?;
    let blocks: Option<Vec<Vec<Row>>> = blocks.into_iter().collect();
    Ok(blocks.map(|b| b.into_iter().flatten().collect()))
}

/// The op on views; with `keep`, the terms of every row too.
fn run(inputs: &Views, keep: bool) -> Result<(Output, Vec<RowTerms>)> {
    let ne = check_views(inputs)?;
    let [dv, h, n, ne3] = ne;
    let kv = inputs.k.ne()[1];
    let ms = inputs.mask.map(|m| m.rows()).transpose()?;
    if let (Some(ms), Some(m)) = (&ms, inputs.mask) {
        check_mask(ms, m.ne(), ne, kv)?;
    }
    let sinks = inputs.sinks.map(|s| s.rows()).transpose()?;
    if let Some(bad) = sinks.iter().flatten().find(|s| !s.is_finite()) {
        return Err(Error::Value {
            op: OP,
            reason: format!("sink logit {bad}: only finite sinks have a defined result"),
        });
    }
    let n_out = dv
        .checked_mul(h)
        .and_then(|x| x.checked_mul(n))
        .and_then(|x| x.checked_mul(ne3));
    let mut values = zeroed(OP, n_out)?;
    // K and V decoded once per GQA group, its query heads' rows together; heads in order.
    let (k_heads, v_heads) = (inputs.k.ne()[2], inputs.v.ne()[2]);
    let groups: Vec<Vec<Vec<Row>>> = kv_groups(ne, k_heads, v_heads)
        .into_par_iter()
        .map(|(i3, first, end)| {
            let kv_index = (i3, first / (h / k_heads), first / (h / v_heads));
            let (ms, sinks) = (ms.as_deref(), sinks.as_deref());
            let group = (i3, first, end);
            // One block of query rows (a decode step) streams K and V: nothing to share.
            let streamed = match (end - first) * n <= QB {
                true => heads(inputs, ne, group, ms, sinks, keep, &KvHead::Streamed)?,
                false => None,
            };
            let rows = match streamed {
                Some(rows) => rows,
                None => {
                    let kvh = kv_head(inputs, dv, kv_index)?;
                    heads(inputs, ne, group, ms, sinks, keep, &kvh)?.expect("whole K and V")
                }
            };
            // Back to one list of rows per head.
            let mut rows = rows.into_iter();
            Ok((first..end)
                .map(|_| rows.by_ref().take(n).collect())
                .collect())
        })
        .collect::<Result<_>>()?;
    let heads = groups.into_iter().flatten();
    let mut terms: Vec<Option<RowTerms>> = if keep {
        vec![None; h * n * ne3]
    } else {
        Vec::new()
    };
    for (g, rows) in heads.into_iter().enumerate() {
        let (i3, ih) = (g / h, g % h);
        for (iq, (out, t)) in rows.into_iter().enumerate() {
            let r = (i3 * n + iq) * h + ih;
            values[r * dv..(r + 1) * dv].copy_from_slice(&out);
            if let Some(t) = t {
                terms[r] = Some(t);
            }
        }
    }
    let terms = terms.into_iter().flatten().collect();
    Ok((Output { ne, values }, terms))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32t(ne: [usize; 4], v: &[f32]) -> Tensor {
        Tensor::from_f32(DType::F32, ne, v).unwrap()
    }

    fn f16t(ne: [usize; 4], v: &[f32]) -> Tensor {
        Tensor::from_f32(DType::F16, ne, v).unwrap()
    }

    fn params(scale: f32) -> FlashAttnParams {
        FlashAttnParams {
            scale,
            max_bias: 0.0,
            logit_softcap: 0.0,
        }
    }

    fn run(
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        m: Option<&Tensor>,
        p: FlashAttnParams,
    ) -> FlashAttn {
        flash_attn_ext(&FlashAttnInputs {
            q,
            k,
            v,
            mask: m,
            sinks: None,
            params: p,
        })
        .unwrap()
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() <= 1e-14 * b.abs().max(1.0), "{a} vs {b}");
    }

    #[test]
    fn d1_two_keys_is_a_two_way_softmax() {
        // q = 1, k = (1, 2), v = (3, 5): S = (1, 2), O = (3 + 5e)/(1 + e).
        let out = run(
            &f32t([1, 1, 1, 1], &[1.0]),
            &f16t([1, 2, 1, 1], &[1.0, 2.0]),
            &f16t([1, 2, 1, 1], &[3.0, 5.0]),
            None,
            params(1.0),
        );
        let e = std::f64::consts::E;
        assert_eq!(out.out.ne, [1, 1, 1, 1]);
        close(out.out.values[0], (3.0 + 5.0 * e) / (1.0 + e));
        close(out.rows[0].weights[1], e / (1.0 + e));
    }

    #[test]
    fn d2_scale_and_dot() {
        // q = (1, 2), keys (1, 0) and (0, 1), scale 0.5: S = (0.5, 1).
        let out = run(
            &f32t([2, 1, 1, 1], &[1.0, 2.0]),
            &f16t([2, 2, 1, 1], &[1.0, 0.0, 0.0, 1.0]),
            &f16t([2, 2, 1, 1], &[1.0, 10.0, -1.0, 20.0]),
            None,
            params(0.5),
        );
        let (a, b) = (0.5f64.exp(), 1f64.exp());
        let (pa, pb) = (a / (a + b), b / (a + b));
        close(out.out.values[0], pa * 1.0 - pb);
        close(out.out.values[1], pa * 10.0 + pb * 20.0);
        close(out.rows[0].x[1], 1.0);
        close(out.rows[0].dot_magnitude[0], 0.5);
    }

    #[test]
    fn masked_key_is_skipped_and_fully_masked_row_is_nan() {
        // N = 2 rows; row 0 masks key 1, row 1 masks both. Mask padded to 64 rows.
        let ninf = f32::NEG_INFINITY;
        let mut m = vec![0.0f32; 2 * 64];
        m[1] = ninf;
        m[2] = ninf;
        m[3] = ninf;
        let out = run(
            &f32t([1, 2, 1, 1], &[1.0, 1.0]),
            &f16t([1, 2, 1, 1], &[1.0, 2.0]),
            &f16t([1, 2, 1, 1], &[3.0, 5.0]),
            Some(&f16t([2, 64, 1, 1], &m)),
            params(1.0),
        );
        // dst (1, H = 1, N = 2, 1): row 0 sees key 0 only.
        close(out.out.values[0], 3.0);
        assert!(out.out.values[1].is_nan());
        assert!(!out.rows[0].fully_masked && out.rows[1].fully_masked);
        assert_eq!(out.rows[1].weights, vec![0.0, 0.0]);
    }

    #[test]
    fn softcap_divides_scale_in_f32_then_applies_tanh() {
        // scale 1, softcap 3: s' = f32(1/3); S_j = 3·tanh(s'·q·k_j).
        let p = FlashAttnParams {
            scale: 1.0,
            max_bias: 0.0,
            logit_softcap: 3.0,
        };
        let sp = (1.0f32 / 3.0) as f64;
        assert_eq!(p.dot_scale() as f64, sp);
        let out = run(
            &f32t([1, 1, 1, 1], &[2.0]),
            &f16t([1, 2, 1, 1], &[1.0, 4.0]),
            &f16t([1, 2, 1, 1], &[0.0, 1.0]),
            None,
            p,
        );
        let (s0, s1) = (3.0 * (sp * 2.0).tanh(), 3.0 * (sp * 8.0).tanh());
        close(out.out.values[0], s1.exp() / (s0.exp() + s1.exp()));
    }

    #[test]
    fn alibi_slopes_follow_n_head_log2_as_a_power_of_two() {
        // H = 3: n_head_log2 = 2; max_bias 8: m0 = 2^-4, m1 = 2^-2.
        let a = Alibi::new(8.0, 3);
        assert_eq!((a.n_head_log2, a.m0, a.m1), (2, 0.0625, 0.25));
        assert_eq!(a.slope(0), 0.0625);
        assert_eq!(a.slope(1), 0.0625 * 0.0625);
        assert_eq!(a.slope(2), 0.25);
        assert_eq!(Alibi::new(0.0, 3).slope(2), 1.0);
        // H = 3 heads, D = 1, one key with mask value −2: S = q·k + slope·(−2); a single key
        // gives O = v whatever S is, so use two keys: mask (0, −2), equal dots.
        let mut m = vec![0.0f32; 2 * 64];
        m[1] = -2.0;
        let out = run(
            &f32t([1, 1, 3, 1], &[1.0, 1.0, 1.0]),
            &f16t([1, 2, 1, 1], &[1.0, 1.0]),
            &f16t([1, 2, 1, 1], &[0.0, 1.0]),
            Some(&f16t([2, 64, 1, 1], &m)),
            FlashAttnParams {
                scale: 1.0,
                max_bias: 8.0,
                logit_softcap: 0.0,
            },
        );
        for (h, slope) in [(0, 0.0625f64), (1, 0.0625 * 0.0625), (2, 0.25)] {
            let w = (-2.0 * slope).exp();
            close(out.out.values[h], w / (1.0 + w));
        }
    }

    #[test]
    fn gqa_heads_share_k_and_dst_is_permuted() {
        // D = 1, N = 2, H = 2, H_k = 1; one key, so O = v, which differs per v head (H_v = 2).
        let q = f32t([1, 2, 2, 1], &[1.0, 1.0, 1.0, 1.0]);
        let k = f16t([1, 1, 1, 1], &[1.0]);
        let v = f16t([1, 1, 2, 1], &[7.0, 9.0]);
        let out = run(&q, &k, &v, None, params(1.0));
        // dst (1, H = 2, N = 2, 1): (d, h, q) at q·2 + h.
        assert_eq!(out.out.ne, [1, 2, 2, 1]);
        assert_eq!(out.out.values, vec![7.0, 9.0, 7.0, 9.0]);
        assert_eq!((out.rows[3].q, out.rows[3].h), (1, 1));
    }

    #[test]
    fn d4_strided_q_matches_contiguous_q() {
        // q stored (D, H, N) and viewed as (D, N, H), as llama.cpp's permuted q.
        let vals: Vec<f32> = (0..4 * 2 * 3).map(|i| (i as f32 * 0.37).sin()).collect();
        let k = f16t([4, 3, 1, 1], &vals[..12]);
        let v = f16t([4, 3, 1, 1], &vals[12..]);
        let stored: Vec<u8> = vals[..16].iter().flat_map(|x| x.to_le_bytes()).collect();
        // Stored order (d, h, n) with H = 2, N = 2: view (D, N, H) has nb1 = 32, nb2 = 16.
        let qv = Tensor::new(DType::F32, [4, 2, 2, 1], [4, 32, 16, 64], stored).unwrap();
        let qc = qv.to_contiguous();
        let a = run(&qv, &k, &v, None, params(0.5));
        let b = run(&qc, &k, &v, None, params(0.5));
        assert_eq!(a.out, b.out);
    }

    #[test]
    fn large_logits_do_not_overflow() {
        // S = (1000, 1001): exp(1000) overflows even f64, the stable form does not.
        let out = run(
            &f32t([1, 1, 1, 1], &[1.0]),
            &f16t([1, 2, 1, 1], &[1000.0, 1001.0]),
            &f16t([1, 2, 1, 1], &[0.0, 1.0]),
            None,
            params(1.0),
        );
        close(out.out.values[0], 1.0 / (1.0 + (-1.0f64).exp()));
    }

    #[test]
    fn quantized_keys_decode_exactly() {
        // q8_0 K and V with D = 32, d = 0.5 (raw blocks): key 0 has every q = 1, key 1 every
        // q = 2, so k_0 = 0.5, k_1 = 1 elementwise; q = 1/32 each gives S = (0.5, 1).
        let block = |d: f32, qs: [i8; 32]| -> Vec<u8> {
            let mut b = half::f16::from_f32(d).to_le_bytes().to_vec();
            b.extend(qs.iter().map(|&x| x as u8));
            b
        };
        let kt = Tensor::from_bytes(
            DType::Q8_0,
            [32, 2, 1, 1],
            [block(0.5, [1; 32]), block(0.5, [2; 32])].concat(),
        )
        .unwrap();
        let mut one = [0i8; 32];
        one[0] = 2;
        let vt = Tensor::from_bytes(
            DType::Q8_0,
            [32, 2, 1, 1],
            [block(0.5, [0; 32]), block(0.5, one)].concat(),
        )
        .unwrap();
        let out = run(
            &f32t([32, 1, 1, 1], &[1.0 / 32.0; 32]),
            &kt,
            &vt,
            None,
            params(1.0),
        );
        // O_0 = weight of key 1 · 1 = e^0.5/(1 + e^0.5).
        let w = 0.5f64.exp();
        close(out.out.values[0], w / (1.0 + w));
    }

    #[test]
    fn masked_keys_ignore_nan_and_live_ones_propagate_it() {
        let nan = f32::NAN;
        let mut m = vec![0.0f32; 2 * 64];
        m[1] = f32::NEG_INFINITY;
        let mask = f16t([2, 64, 1, 1], &m);
        let q = f32t([2, 1, 1, 1], &[1.0, 1.0]);
        // Key 1 (masked) is NaN in K and V: no effect.
        let k = f16t([2, 2, 1, 1], &[1.0, 1.0, nan, nan]);
        let v = f16t([2, 2, 1, 1], &[3.0, 4.0, nan, nan]);
        let out = run(&q, &k, &v, Some(&mask), params(1.0));
        assert_eq!(out.out.values, vec![3.0, 4.0]);
        // Unmasked: a NaN V element spoils its column only, a NaN K the row.
        let v = f16t([2, 2, 1, 1], &[3.0, 4.0, nan, 0.0]);
        let k = f16t([2, 2, 1, 1], &[1.0, 1.0, 0.0, 0.0]);
        let out = run(&q, &k, &v, None, params(1.0));
        assert!(out.out.values[0].is_nan() && out.out.values[1].is_finite());
        let k = f16t([2, 2, 1, 1], &[1.0, 1.0, nan, 0.0]);
        let out = run(&q, &k, &v, None, params(1.0));
        assert!(out.rows[0].non_finite && out.out.values.iter().all(|x| x.is_nan()));
    }

    fn with_sinks(
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        m: Option<&Tensor>,
        sinks: &Tensor,
        p: FlashAttnParams,
    ) -> FlashAttn {
        flash_attn_ext(&FlashAttnInputs {
            q,
            k,
            v,
            mask: m,
            sinks: Some(sinks),
            params: p,
        })
        .unwrap()
    }

    #[test]
    fn a_sink_joins_the_denominator_as_a_key_without_value() {
        // q = 1, k = (1, 2), v = (3, 5), sink σ = 1.5: O = (3e + 5e²)/(e + e² + e^1.5).
        let (q, k, v) = (
            f32t([1, 1, 1, 1], &[1.0]),
            f16t([1, 2, 1, 1], &[1.0, 2.0]),
            f16t([1, 2, 1, 1], &[3.0, 5.0]),
        );
        let out = with_sinks(&q, &k, &v, None, &f32t([1, 1, 1, 1], &[1.5]), params(1.0));
        let e = std::f64::consts::E;
        let den = e + e * e + 1.5f64.exp();
        close(out.out.values[0], (3.0 * e + 5.0 * e * e) / den);
        close(out.rows[0].sink_weight, 1.5f64.exp() / den);
        close(
            out.rows[0].weights.iter().sum::<f64>() + out.rows[0].sink_weight,
            1.0,
        );
        // A sink far above every logit takes the whole softmax (and sets the maximum).
        let out = with_sinks(
            &q,
            &k,
            &v,
            None,
            &f32t([1, 1, 1, 1], &[1000.0]),
            params(1.0),
        );
        assert_eq!(out.out.values[0], 0.0);
        // Without sinks, the bits are those of the op without the field.
        let plain = run(&q, &k, &v, None, params(1.0));
        assert_eq!(plain.rows[0].sink_weight, 0.0);
        close(plain.out.values[0], (3.0 + 5.0 * e) / (1.0 + e));
    }

    #[test]
    fn sinks_are_per_head_and_a_fully_masked_row_with_a_sink_is_zero() {
        // Two heads (sinks 0 and −∞-like −100), N = 2; row 1 masks both keys.
        let ninf = f32::NEG_INFINITY;
        let mut m = vec![0.0f32; 2 * 64];
        m[2] = ninf;
        m[3] = ninf;
        let out = with_sinks(
            &f32t([1, 2, 2, 1], &[1.0, 1.0, 1.0, 1.0]),
            &f16t([1, 2, 1, 1], &[0.0, 0.0]),
            &f16t([1, 2, 1, 1], &[2.0, 4.0]),
            Some(&f16t([2, 64, 1, 1], &m)),
            &f32t([2, 1, 1, 1], &[0.0, -100.0]),
            params(1.0),
        );
        // dst (1, H = 2, N = 2): row (q 0, h 0) = (2 + 4)/3, (q 0, h 1) ≈ 3.
        close(out.out.values[0], 2.0);
        assert!((out.out.values[1] - 3.0).abs() < 1e-40 + 3.0 * (-100.0f64).exp());
        assert_eq!(&out.out.values[2..], &[0.0, 0.0]);
        assert!(out.rows[2].fully_masked && out.rows[2].sink_weight == 1.0);
        // A sink must be finite and one per query head.
        let bad = |s: &Tensor| {
            flash_attn(&FlashAttnInputs {
                q: &f32t([1, 1, 2, 1], &[1.0, 1.0]),
                k: &f16t([1, 1, 1, 1], &[1.0]),
                v: &f16t([1, 1, 1, 1], &[1.0]),
                mask: None,
                sinks: Some(s),
                params: params(1.0),
            })
            .is_err()
        };
        assert!(bad(&f32t([2, 1, 1, 1], &[f32::NAN, 0.0])));
        assert!(bad(&f32t([1, 1, 1, 1], &[0.0])));
        assert!(bad(&f16t([2, 1, 1, 1], &[0.0, 0.0])));
        assert!(!bad(&f32t([2, 1, 1, 1], &[0.0, 0.0])));
    }

    #[test]
    fn k_and_v_of_different_types_decode_each_their_own() {
        // The same values as q8_0 K (d = 0.5, q = 1 and 2) and f32 V, against f16 K and V.
        let block = |d: f32, q: i8| -> Vec<u8> {
            let mut b = half::f16::from_f32(d).to_le_bytes().to_vec();
            b.extend([q as u8; 32]);
            b
        };
        let k8 = Tensor::from_bytes(
            DType::Q8_0,
            [32, 2, 1, 1],
            [block(0.5, 1), block(0.5, 2)].concat(),
        )
        .unwrap();
        let kv: Vec<f32> = [0.5f32; 32].iter().chain(&[1.0f32; 32]).copied().collect();
        let vv: Vec<f32> = (0..64).map(|i| (i as f32 * 0.7).sin()).collect();
        let q = f32t([32, 1, 1, 1], &[1.0 / 32.0; 32]);
        let mixed = run(&q, &k8, &f32t([32, 2, 1, 1], &vv), None, params(1.0));
        let same = run(
            &q,
            &f16t([32, 2, 1, 1], &kv),
            &f16t([32, 2, 1, 1], &vv),
            None,
            params(1.0),
        );
        // f16(v) differs from v: compare with the f32 V's own values.
        let w = 0.5f64.exp() / (1.0 + 0.5f64.exp());
        for d in 0..32 {
            close(
                mixed.out.values[d],
                (1.0 - w) * vv[d] as f64 + w * vv[32 + d] as f64,
            );
        }
        assert_eq!(mixed.rows[0].weights, same.rows[0].weights);
    }

    #[test]
    fn rejects_what_ggml_rejects() {
        let q = f32t([2, 1, 3, 1], &[0.0; 6]);
        let k = f16t([2, 1, 2, 1], &[0.0; 4]);
        let v = f16t([2, 1, 1, 1], &[0.0; 2]);
        let i = FlashAttnInputs {
            q: &q,
            k: &k,
            v: &v,
            mask: None,
            sinks: None,
            params: params(1.0),
        };
        assert!(check(&i).is_err(), "3 heads over 2 K heads");
        let k = f16t([2, 1, 1, 1], &[0.0; 2]);
        let alibi = FlashAttnInputs {
            k: &k,
            params: FlashAttnParams {
                max_bias: 1.0,
                ..params(1.0)
            },
            ..i
        };
        assert!(check(&alibi).is_err(), "ALiBi without a mask");
    }
}
