//! The matrix-matrix error model on NV cooperative matrix 2 (mul_mm_cm2.comp). Shared
//! arithmetic: [`crate::model::tolerance`].
//!
//! § numbers: sections of docs/interface.md.

#[allow(unused_imports)]
use super::bounds::*;
#[allow(unused_imports)]
use crate::model::tolerance::*;

/// One quantized A element as the cm2 decode callback computes it (§3.2, shaders/
/// dequant_funcs_cm2.comp): x = P − M exactly, where P is the scale·q part and M the min part
/// (0 without a min; q4_1/q5_1 store +m, so M = −m), and the smallest nonzero magnitude
/// among the f16 intermediates the callback forms (d, d·sc, dmin, dmin·mn) — below 2⁻¹⁴ one
/// of them may be flushed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodeTerms {
    /// The scale·q part, exact.
    pub p: f64,
    /// The min part, exact (x = p − m).
    pub m: f64,
    /// Smallest nonzero |intermediate| of the f16 chain (∞ when none).
    pub tiny: f64,
    /// Largest exact |intermediate| the chain rounds to f16 before its result (0 when none):
    /// at 65520 and above that intermediate is ±∞, and the result ±∞ or NaN (∞·0, ∞ − ∞)
    /// although the exact value may be small.
    pub huge: f64,
}

fn f16_at(b: &[u8], off: usize) -> f64 {
    half::f16::from_le_bytes([b[off], b[off + 1]]).to_f64()
}

/// Scale and min of q4_K/q5_K sub-block `sb` from the 12 scale bytes (§2.4).
fn scale_min_k4(s: &[u8], sb: usize) -> (f64, f64) {
    if sb < 4 {
        ((s[sb] & 63) as f64, (s[sb + 4] & 63) as f64)
    } else {
        (
            ((s[sb + 4] & 0xF) | ((s[sb - 4] >> 6) << 4)) as f64,
            ((s[sb + 4] >> 4) | ((s[sb] >> 6) << 4)) as f64,
        )
    }
}

/// The decode terms of every element of a quantized A (`bytes` = whole blocks of `dtype`), in
/// element order; None for a type the cm2 decoders do not cover.
pub fn cm2_decode_terms(dtype: vkdiff_reference::DType, bytes: &[u8]) -> Option<Vec<DecodeTerms>> {
    use vkdiff_reference::DType as T;
    let (qk, bb) = (dtype.block_len(), dtype.block_bytes());
    let tiny = |vals: &[f64]| {
        vals.iter()
            .map(|v| v.abs())
            .filter(|&v| v > 0.0)
            .fold(f64::INFINITY, f64::min)
    };
    let mut out = Vec::with_capacity(bytes.len() / bb * qk);
    // The later formats whose decoders are exact (values read from the reference, per block).
    let decoded_whole = matches!(dtype, T::Q1_0 | T::Q2_0 | T::Tq1_0 | T::Tq2_0 | T::Nvfp4);
    let mut exact = vec![0f64; if decoded_whole { qk } else { 0 }];
    for b in bytes.chunks_exact(bb) {
        if decoded_whole {
            vkdiff_reference::formats::dequantize_into(dtype, b, &mut exact).ok()?;
        }
        for e in 0..qk {
            let nib = |qs: usize| {
                let byte = b[qs + e % 16];
                if e < 16 {
                    byte & 0xF
                } else {
                    byte >> 4
                }
            };
            let (n, g, l) = (e / 128, (e % 128) / 32, e % 32);
            let t = match dtype {
                T::Q4_0 | T::Q5_0 | T::Q8_0 | T::Iq4Nl => {
                    let d = f16_at(b, 0);
                    let q = match dtype {
                        T::Q4_0 => nib(2) as f64 - 8.0,
                        T::Q5_0 => {
                            let h = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
                            (nib(6) as u32 | (((h >> e) & 1) << 4)) as f64 - 16.0
                        }
                        T::Q8_0 => b[2 + e] as i8 as f64,
                        _ => IQ4NL[nib(2) as usize],
                    };
                    DecodeTerms {
                        p: d * q,
                        m: 0.0,
                        tiny: tiny(&[d]),
                        huge: 0.0,
                    }
                }
                T::Q4_1 | T::Q5_1 => {
                    let (d, mn) = (f16_at(b, 0), f16_at(b, 2));
                    let q = if dtype == T::Q4_1 {
                        nib(4) as f64
                    } else {
                        let h = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
                        (nib(8) as u32 | (((h >> e) & 1) << 4)) as f64
                    };
                    DecodeTerms {
                        p: d * q,
                        m: -mn,
                        tiny: tiny(&[d, d * q, mn]),
                        huge: (d * q).abs(),
                    }
                }
                T::Iq4Xs => {
                    let d = f16_at(b, 0);
                    let ib = e / 32;
                    let lo = (b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF;
                    let hi = (u16::from_le_bytes([b[2], b[3]]) >> (2 * ib)) & 3;
                    let ls = (lo as u16 | (hi << 4)) as f64 - 32.0;
                    let j = e % 32;
                    let byte = b[8 + 16 * ib + j % 16];
                    let q = IQ4NL[if j < 16 { byte & 0xF } else { byte >> 4 } as usize];
                    DecodeTerms {
                        p: d * ls * q,
                        m: 0.0,
                        tiny: tiny(&[d, d * ls]),
                        huge: (d * ls).abs(),
                    }
                }
                T::Q2_K => {
                    let (d, dmin) = (f16_at(b, 80), f16_at(b, 82));
                    let sc = b[8 * n + 2 * g + l / 16];
                    let q = ((b[16 + 32 * n + l] >> (2 * g)) & 3) as f64;
                    let (s, mn) = ((sc & 0xF) as f64, (sc >> 4) as f64);
                    DecodeTerms {
                        p: d * s * q,
                        m: dmin * mn,
                        tiny: tiny(&[d, d * s, dmin, dmin * mn]),
                        huge: (d * s).abs().max((d * s * q).abs()).max((dmin * mn).abs()),
                    }
                }
                T::Q3_K => {
                    let d = f16_at(b, 108);
                    let is = 8 * n + 2 * g + l / 16;
                    let low = if is < 8 {
                        b[96 + is] & 0xF
                    } else {
                        b[96 + is - 8] >> 4
                    };
                    let high = (b[96 + 8 + is % 4] >> (2 * (is / 4))) & 3;
                    let s = (low | (high << 4)) as f64 - 32.0;
                    let hb = (b[l] >> (4 * n + g)) & 1;
                    let q = ((b[32 + 32 * n + l] >> (2 * g)) & 3) as f64
                        - if hb != 0 { 0.0 } else { 4.0 };
                    DecodeTerms {
                        p: d * s * q,
                        m: 0.0,
                        tiny: tiny(&[d, d * s]),
                        huge: (d * s).abs(),
                    }
                }
                T::Q4_K | T::Q5_K => {
                    let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
                    let sb = e / 32;
                    let (sc, mn) = scale_min_k4(&b[4..16], sb);
                    let qs = if dtype == T::Q4_K { 16 } else { 48 };
                    let byte = b[qs + 32 * (e / 64) + l];
                    let mut q = if sb % 2 == 0 { byte & 0xF } else { byte >> 4 } as f64;
                    if dtype == T::Q5_K {
                        q += 16.0 * ((b[16 + l] >> sb) & 1) as f64;
                    }
                    // q4_K forms its products in f32 (exact): only the result is an f16.
                    let chain = if dtype == T::Q5_K {
                        tiny(&[d, d * sc, dmin, dmin * mn])
                    } else {
                        tiny(&[d, dmin])
                    };
                    DecodeTerms {
                        p: d * sc * q,
                        m: dmin * mn,
                        tiny: chain,
                        huge: if dtype == T::Q5_K {
                            (d * sc).abs().max((dmin * mn).abs())
                        } else {
                            0.0
                        },
                    }
                }
                T::Q6_K => {
                    let d = f16_at(b, 208);
                    let lo = (b[64 * n + l + 32 * (g % 2)] >> (4 * (g / 2))) & 0xF;
                    let hi = (b[128 + 32 * n + l] >> (2 * g)) & 3;
                    let q = (lo | (hi << 4)) as f64 - 32.0;
                    let sc = b[192 + 8 * n + 2 * g + l / 16] as i8 as f64;
                    DecodeTerms {
                        p: d * sc * q,
                        m: 0.0,
                        tiny: tiny(&[d, d * sc]),
                        huge: (d * sc).abs(),
                    }
                }
                // (kv·2^(e − 127))·0.5 in f32, then to f16: the f32 steps are exact unless the
                // scale is an f32 subnormal (`tiny`: flushable, charged in full) or the
                // product passes f32's range (x ≥ 2¹²⁷, far past f16's: ±∞ either way).
                T::Mxfp4 => {
                    let x = vkdiff_reference::formats::mxfp4::e8m0_to_f64(b[0]);
                    let q = f64::from(vkdiff_reference::formats::mxfp4::e2m1_doubled(nib(1))) * 0.5;
                    DecodeTerms {
                        p: x * q,
                        m: 0.0,
                        tiny: if x < f64::from(f32::MIN_POSITIVE) {
                            0.0
                        } else {
                            f64::INFINITY
                        },
                        huge: 0.0,
                    }
                }
                // ±d, (q − 1)·d with q ≤ 3, d·(trit − 1): an f16 d times an integer of
                // magnitude ≤ 2, exact in f16 unless it passes f16's range (the staged
                // operand's overflow test covers that).
                T::Q1_0 | T::Q2_0 | T::Tq1_0 | T::Tq2_0 => {
                    let d = f16_at(b, dtype.f16_fields()[0]);
                    DecodeTerms {
                        p: exact[e],
                        m: 0.0,
                        tiny: tiny(&[d]),
                        huge: 0.0,
                    }
                }
                // kvalue·ue4m3/2 in f32, exact (≥ 2⁻¹¹ when not zero), then to f16, exact
                // (≤ 2688 with at most 4 significant bits).
                T::Nvfp4 => DecodeTerms {
                    p: exact[e],
                    m: 0.0,
                    tiny: f64::INFINITY,
                    huge: 0.0,
                },
                t if T::LATTICE_IQUANTS.contains(&t) => {
                    let parts = vkdiff_reference::formats::iq_grid::parts(t, b, e);
                    DecodeTerms {
                        p: parts.exact(),
                        m: 0.0,
                        tiny: tiny(&[parts.d.to_f64()]),
                        huge: 0.0,
                    }
                }
                _ => return None,
            };
            out.push(t);
        }
    }
    Some(out)
}

const IQ4NL: [f64; 16] = [
    -127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0, 38.0, 53.0, 69.0,
    89.0, 113.0,
];

/// Bound on |decoded − x| of one element by the cm2 decode callback of `dtype` (§3.2, the
/// arithmetic written out in shaders/dequant_funcs_cm2.comp), and whether the f16 result may
/// overflow. With u = 2⁻¹¹ (plus the f32 half-ulp of [`Fp::unit`]) and u₃₂ = 2⁻²⁴:
///
/// * q4_0, q5_0, q8_0, iq4_nl: d·q in f16, one rounding: u·|x|. So too the later q1_0, q2_0,
///   tq1_0, tq2_0 (d times an integer ≤ 2 in magnitude) and nvfp4 (exact in f32 first).
/// * iq1_s … iq3_s: the exact value formed in f32 (iq_decode.comp), one f16 rounding: u·|x|
///   (a subnormal d may still be flushed when read: `tiny` is d).
/// * q3_K, q6_K, iq4_xs: (d·sc)·q in f16: u·|P| for d·sc (carried through the exact ·q), then
///   u·(|x| + u·|P|).
/// * q4_1, q5_1: d·q + m in f16 (or one fma): u·|P| + u·(|x| + u·|P|).
/// * q2_K: ((d·sc)·q) − dmin·mn in f16: (2u + u²)·|P| + u·|M| + u·(|x| + those).
/// * q4_K: everything in f32 — d·sc·q and dmin·mn are exact (≤ 21 significant bits), the
///   difference rounds once (u₃₂·|x|) — then one f16 rounding.
/// * q5_K: d·sc and dmin·mn rounded to f16 (u·|P|, u·|M|), the rest as q4_K.
///
/// An f16 intermediate of 65520 or more ([`DecodeTerms::huge`]) is ±∞, so the result may be
/// ±∞ or NaN (∞·0 where q = 0, ∞ − ∞) however small x is: flagged as a possible overflow
/// (found by the emulation in tests/bounds_soundness.rs: q2_K with d·sc ≥ 65520 and q = 0).
///
/// Charging every rounding relative to the *terms* P and M (not to x) is what keeps the bound
/// honest under cancellation (d·q ≈ −m). Subnormals: an intermediate in (0, 2⁻¹⁴) may be
/// flushed, losing the whole term it feeds (|P| or |M| more), and the f16 result itself may be
/// flushed or subnormal ([`Fp::rounding`]).
pub fn cm2_decode_error(dtype: vkdiff_reference::DType, t: &DecodeTerms) -> (f64, bool) {
    use vkdiff_reference::DType as T;
    let u = Fp::F16.unit();
    let (p, m) = (t.p.abs(), t.m.abs());
    let x = (t.p - t.m).abs();
    let (rp, rm) = match dtype {
        T::Q4_0 | T::Q5_0 | T::Q8_0 | T::Iq4Nl => (0.0, 0.0),
        T::Q3_K | T::Q6_K | T::Iq4Xs | T::Q4_1 | T::Q5_1 => (u, 0.0),
        T::Q2_K => (2.0 * u + u * u, u),
        T::Q4_K => (U32, U32),
        T::Q5_K => (u + U32, u + U32),
        _ => (0.0, 0.0),
    };
    let mut pre = rp * p + rm * m;
    if t.tiny < Fp::F16.min_normal() {
        pre += p + m;
    }
    let (lo, hi) = ((x - pre).max(0.0), x + pre);
    // A second-level intermediate ((d·sc)·q) is formed from a rounded first one: (1 + u).
    let ovf = hi >= Fp::F16.overflow() || t.huge * (1.0 + u) >= Fp::F16.overflow();
    if lo >= Fp::F16.overflow() {
        return (f64::INFINITY, true);
    }
    (pre + Fp::F16.rounding(lo, hi), ovf)
}

/// The arithmetic of one cooperative-matrix dispatch: mul_mm_cm2, or mul_mm's cm1 path (whose
/// TK-deep coopMatMulAdd steps are modelled the same way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cm2Arith {
    /// ACC_TYPE: f16 or f32.
    pub acc: Fp,
    /// K per coopMatMulAdd (cm2: the BK spec constant; cm1: TK, 16).
    pub bk: usize,
    /// K splits (1: none).
    pub split_k: usize,
    /// K range of a split.
    pub k_split: usize,
}

/// Matrix-matrix bounds on the cm2 path (§7.6), and on the cm1 path (§6.6) with BK read as
/// TK (one KHR coopMatMulAdd per 16 values of K, steps from the split's start) and the
/// operand errors of [`staged_operand_errors`].
///
/// **What is computed.** The operands are FLOAT_TYPE values â, b̂ (f16 or bf16): `ea`/`eb`
/// give |â − a| and |b̂ − b| per element against the exact inputs a, b (0 for f16/bf16 data,
/// the host's f32 → f16 conversion error, or [`cm2_decode_error`] for a quantized A), with
/// `None` where an operand may overflow to ±∞. Output (m, n) of split s is the accumulator after
/// the K steps k₀, k₀ + BK, … (ascending: the shader's loop), each step acc ← acc + Σ â·b̂ over
/// its BK products (zeros past end_k) by one coopMatMulAdd.
///
/// **Why not a running sum over k.** Inside a coopMatMulAdd the order, tree shape and internal
/// precision of the additions are the implementation's (NVIDIA's tensor cores align the
/// terms to the largest exponent and truncate; Fasi, Higham, Mikaitis & Pranesh, "Numerical
/// behavior of NVIDIA tensor cores", PeerJ CS 2021). So each step is charged as an arbitrary
/// summation of BK + 1 terms (the accumulator and the products): depth ≤ BK, each rounding
/// directed rather than to nearest (unit u_w = 2u), error ≤ γ_w(BK)·(|acc| + Σ|â·b̂|) with
/// γ_w(n) = n·u_w / (1 − n·u_w), plus u_w·|â·b̂| per product when products are not exact in
/// ACC_TYPE (f16 accumulators; f16·f16 and bf16·bf16 are exact in f32). |acc| is bounded by the
/// exact partial sum plus the error so far, so the bound is a running one over the K steps:
/// an a-priori γ(K)·Σ|a·b| would be meaningless for f16 accumulators (γ₁₆(K) ≥ 1 from
/// K = 512 with u_w), while this one grows with the partial sums actually reached and stays
/// below 1 per step for BK ≤ 64 (γ_w(64) ≈ 0.067 in f16). Splits add their f32 partials in
/// order (the reduce shader).
///
/// **Subnormals and overflow.** A step whose operands or results may lie below ACC_TYPE's
/// smallest normal is charged that normal once per rounding (flush to zero); a step whose
/// intermediate sums may pass the largest finite f16 — anything up to |acc| + Σ|â·b̂|, since
/// the order is free — marks the element [`MulMmBounds::may_overflow`]. (Measured on the
/// H100: an f16 accumulator went to +∞ for an output of 5.4·10⁴ whose step held larger
/// partial sums; upstream has no clamp at this commit, §12 later-changed 7.)
#[allow(clippy::too_many_arguments)]
pub fn mul_mm_cm2_bounds(
    arith: &Cm2Arith,
    k: usize,
    m: usize,
    a_rows: &[f64],
    ea: &[Option<f64>],
    b_rows: &[f64],
    eb: &[Option<f64>],
    columns: &[(usize, usize)],
) -> MulMmBounds {
    use rayon::prelude::*;
    let acc = arith.acc;
    let uw = 2.0 * acc.unit();
    let bk = arith.bk.max(1);
    let depth = bk as f64;
    let gw = gamma_of(uw, depth);
    let exact = acc == Fp::F32;
    let tiny = acc.min_normal();
    let split_k = arith.split_k.max(1);
    let k_split = if split_k > 1 { arith.k_split } else { k };
    let mut bounds = vec![0.0; m * columns.len()];
    let mut may_overflow = vec![false; m * columns.len()];
    bounds
        .par_chunks_mut(m.max(1))
        .zip(may_overflow.par_chunks_mut(m.max(1)))
        .zip(columns.par_iter())
        .for_each(|((out, ovf_out), &(a_first, b_row))| {
            let b = &b_rows[b_row * k..][..k];
            let eb = &eb[b_row * k..][..k];
            for (i, (o, ovf_o)) in out.iter_mut().zip(ovf_out.iter_mut()).enumerate() {
                let a = &a_rows[(a_first + i) * k..][..k];
                let ea = &ea[(a_first + i) * k..][..k];
                let mut ovf = false;
                let (mut total, mut total_err) = (0.0f64, 0.0f64);
                for s in 0..split_k {
                    let (from, to) = ((s * k_split).min(k), ((s + 1) * k_split).min(k));
                    let (mut sum, mut err) = (0.0f64, 0.0f64);
                    let mut step = from;
                    while step < to {
                        let end = (step + bk).min(to);
                        // Σ|â·b̂| bound, operand error, product roundings, flush count.
                        let (mut mag, mut e_in, mut e_p, mut flushes) = (0.0, 0.0, 0.0, 0usize);
                        let mut exact_step = 0.0;
                        for kk in step..end {
                            let (x, y) = (a[kk], b[kk]);
                            let (ex, ey) = match (ea[kk], eb[kk]) {
                                (Some(ex), Some(ey)) if ex.is_finite() && ey.is_finite() => {
                                    (ex, ey)
                                }
                                _ => {
                                    // An operand that may be ±∞: the product is undefined
                                    // (no arithmetic on the bounds: ∞·0 is NaN).
                                    ovf = true;
                                    e_in = f64::INFINITY;
                                    mag = f64::INFINITY;
                                    exact_step += x * y;
                                    continue;
                                }
                            };
                            let (ax, ay) = (x.abs(), y.abs());
                            let hi = (ax + ex) * (ay + ey);
                            let lo = (ax - ex).max(0.0) * (ay - ey).max(0.0);
                            e_in += ax * ey + ay * ex + ex * ey;
                            if !exact {
                                e_p += uw * hi;
                            }
                            if lo < tiny {
                                // The product itself may be flushed (it is at most hi).
                                e_p += hi.min(tiny);
                            }
                            mag += hi * (1.0 + if exact { 0.0 } else { uw });
                            exact_step += x * y;
                        }
                        let acc_mag = sum.abs() + err;
                        sum += exact_step;
                        let mut d = err + e_in + e_p + gw * (acc_mag + mag);
                        if d.is_nan() {
                            d = f64::INFINITY;
                        }
                        if (sum.abs() - d) < tiny || acc_mag < tiny {
                            flushes += 1;
                        }
                        d += flushes as f64 * tiny;
                        // Any partial sum inside the step, in any order, is within
                        // |acc| + Σ|â·b̂| (+ the step's error): f16 may overflow there even
                        // when the step's result is finite.
                        let peak = acc_mag + mag + d;
                        if peak.is_nan() || peak >= acc.overflow() {
                            ovf = true;
                        }
                        err = d;
                        step = end;
                    }
                    (total, total_err) = add_split(split_k == 1, (total, total_err), (sum, err));
                }
                let _ = total;
                *o = total_err;
                *ovf_o = ovf || !total_err.is_finite();
            }
        });
    MulMmBounds {
        bounds,
        may_overflow,
    }
}

#[cfg(test)]
mod cm2_tests {
    use super::*;
    use vkdiff_reference::DType;

    #[test]
    fn decode_terms_match_the_reference_values() {
        use rand::{Rng, SeedableRng};
        let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for &dt in DType::WEIGHT_QUANTS {
            let mut bytes = vec![0u8; 3 * dt.block_bytes()];
            r.fill(&mut bytes[..]);
            for blk in bytes.chunks_exact_mut(dt.block_bytes()) {
                for i in 0..dt.f16_scales() {
                    let v = half::f16::from_f32(r.gen_range(-1.0..1.0));
                    dt.set_f16_scale(blk, i, v);
                }
                if dt == DType::Mxfp4 {
                    blk[0] = r.gen_range(100..150);
                }
            }
            let want =
                vkdiff_reference::formats::dequantize_f32(dt, &bytes, 3 * dt.block_len()).unwrap();
            let terms = cm2_decode_terms(dt, &bytes).unwrap();
            for (i, (t, w)) in terms.iter().zip(&want).enumerate() {
                let x = t.p - t.m;
                assert!(
                    (x - *w as f64).abs() <= 1e-6 * (t.p.abs() + t.m.abs()),
                    "{dt} {i}: {x} vs {w}"
                );
            }
        }
    }

    /// The H100's cm2 q5_K zero (docs/mul-mm-cm2.md): d·13·4 − d·52 with d·13 rounded to f16 and
    /// d·52 kept exact by an fma is about −7·10⁻⁷, inside the decode error the model charges,
    /// so ∞ times that operand is not judged as NaN.
    #[test]
    fn a_cancelled_q5_k_zero_may_decode_nonzero() {
        let d = -(1.0 + 2f64.powi(-10)) * 2f64.powi(-14);
        let f16 = |x: f64| half::f16::from_f64(x).to_f64();
        let device = f16(f16(d * 13.0) * 4.0 - d * 52.0);
        assert!(device < 0.0, "{device}");
        let terms = DecodeTerms {
            p: d * 13.0 * 4.0,
            m: d * 52.0,
            tiny: 1.0,
            huge: 0.0,
        };
        assert_eq!(terms.p - terms.m, 0.0);
        let (e, ovf) = cm2_decode_error(DType::Q5_K, &terms);
        assert!(!ovf && e >= device.abs(), "{e} vs {device}");
        let marked =
            crate::model::cases::mul_mm::uncertain_zeros(&[0.0, 0.0], &[Some(e), Some(0.0)]);
        let sp = |a: f64| {
            crate::model::tolerance::dot_special(
                &[a],
                &[f64::NEG_INFINITY],
                Fp::F16,
                Fp::F32,
                Fp::F32,
                false,
            )
        };
        assert_eq!(sp(marked[0]), crate::model::tolerance::Special::Undefined);
        assert_eq!(
            sp(marked[1]),
            crate::model::tolerance::Special::Nan,
            "a certain zero"
        );
    }

    #[test]
    fn decode_error_charges_terms_not_the_cancelled_result() {
        let t = DecodeTerms {
            p: 1.0,
            m: 1.0,
            tiny: 1.0,
            huge: 0.0,
        };
        let (e, _) = cm2_decode_error(DType::Q2_K, &t);
        assert!(e >= 2.0 * 2f64.powi(-11), "{e}");
        let (e, _) = cm2_decode_error(
            DType::Q4_0,
            &DecodeTerms {
                p: 3.0,
                m: 0.0,
                tiny: 1.0,
                huge: 0.0,
            },
        );
        assert!((e - 3.0 * Fp::F16.unit()).abs() < 1e-12);
    }

    #[test]
    fn a_step_is_charged_gamma_of_bk() {
        let arith = Cm2Arith {
            acc: Fp::F32,
            bk: 2,
            split_k: 1,
            k_split: 0,
        };
        let z = [Some(0.0); 2];
        let b = mul_mm_cm2_bounds(&arith, 2, 1, &[1., 2.], &z, &[1., 1.], &z, &[(0, 0)]);
        let uw = 2.0 * U32;
        let g = 2.0 * uw / (1.0 - 2.0 * uw);
        assert!((b.bounds[0] - g * 3.0).abs() < 1e-20, "{}", b.bounds[0]);
        assert!(!b.may_overflow[0]);
    }
}
