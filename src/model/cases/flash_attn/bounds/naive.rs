//! The flash-attention bound as first written (tests only): one row at a time, keys outer and
//! elements inner, every per-key factor taken where it is used. [`super::flash_attn_bounds`]
//! computes the same numbers faster (rows of one V head together, the element loops
//! vectorized); `tests` in the parent module compare the two bit for bit.

#[allow(unused_imports)]
use crate::tolerance::*;

use super::{alibi_slope_error, tanh_error, FaArith, FaRowData, FlashAttnShape};

/// [`super::flash_attn_bounds`] by its first, plain implementation.
pub fn flash_attn_bounds_plain(
    shape: &FlashAttnShape,
    fa: &vkdiff_reference::ops::flash_attn::FlashAttn,
    v_values: &[f64],
    v_ne: [usize; 4],
    extra: Option<(&[FaRowData], &[f64])>,
) -> Vec<f64> {
    let FlashAttnShape {
        d,
        kv,
        bc,
        wg,
        d_split,
        split_k,
        split_kv,
        softcap,
        alibi,
        arith,
        sinks,
        decode_roundings: [k_round, v_round],
    } = *shape;
    let (cm1, cm2, f16acc) = match arith {
        FaArith::Scalar => (false, false, false),
        FaArith::Cm1 { f16acc, .. } => (true, false, f16acc),
        FaArith::Cm2 { f16acc } => (false, true, f16acc),
        FaArith::ScalarF16 => (true, false, true),
    };
    let coop = cm1 || cm2;
    // ACC_TYPE's unit roundoff, and γ for it.
    let e = if f16acc { U16 } else { U32 };
    let gamma_e = |n: f64| gamma_of(e, n);
    let gamma_h = |n: f64| gamma_of(U16, n);
    let d_split = d_split.max(1);
    let log_split = (d_split as f64).log2().ceil();
    // A sink rescales every term once more, as one more tile would.
    let sink_tile = if sinks { 1.0 } else { 0.0 };
    let tiles = kv.div_ceil(bc.max(1) as usize) as f64 + sink_tile;
    // One workgroup's keys and tiles: the depth of a key's chains before the split-k reduce.
    let chain_keys = if split_k > 1 { split_kv.min(kv) } else { kv };
    let chain_tiles = chain_keys.div_ceil(bc.max(1) as usize) as f64 + sink_tile;
    let groups = (wg / d_split).max(1) as f64;
    // With split-k the reduce applies the sink: L·ms + vs and O·ms, two more roundings.
    let split_depth = if split_k > 1 {
        split_k as f64 + 1.0 + 2.0 * sink_tile
    } else {
        0.0
    };
    // Logit: relative factor on |s'|Σ|q·k| (scalar: the f32 split dot product).
    let rho_q = if cm1 {
        (1.0 + U32) * (1.0 + U16) - 1.0
    } else {
        (1.0 + U16).powi(3) - 1.0
    };
    let acc_dot = gamma_e(d as f64 + 1.0);
    let g_dot = if coop {
        (1.0 + rho_q) * (1.0 + acc_dot) - 1.0
    } else {
        gamma((d / d_split as usize) as f64 + log_split + 5.0 + k_round as f64)
    };
    // exp's unit and the per-rescale error.
    let ex = if cm1 { U32 } else { e };
    let rescale = if coop {
        (6.0 * ex + e) * (chain_tiles + 3.0)
    } else {
        6.0 * U32 * (chain_tiles + 3.0)
    };
    let (g_pv, g_l) = if cm1 {
        // The partial sums of an element's key groups are added at the end (`groups`: at
        // most WorkGroupSize/D_split of them, see the Sums paragraph). O's keys: one rounding
        // each in upstream's chain; ours sums a subgroup's share of every tile on the tensor
        // cores, 2 (directed) a key plus 2 for the product, over at most sg_keys a tile.
        let depth = chain_keys as f64 + chain_tiles + groups + 2.0;
        let sg_keys = bc.max(1) as usize * 32 / (wg as usize).max(32);
        let tensor_keys = 2.0 * (chain_keys.min(sg_keys * chain_tiles as usize) + 1) as f64;
        let pv_depth = depth - chain_keys as f64 + tensor_keys.max(chain_keys as f64);
        (gamma_e(pv_depth), gamma(depth))
    } else if cm2 {
        (
            (1.0 + gamma_h(bc as f64 + 1.0)) * (1.0 + gamma_e(chain_tiles + 2.0)) - 1.0,
            // A tile's row sum as P times ones on the tensor cores: truncating adds, each
            // within 2e (see the Sums paragraph).
            gamma_e(2.0 * bc as f64 + chain_tiles + 2.0),
        )
    } else {
        let depth = chain_keys as f64 + chain_tiles + groups + 2.0 + split_depth;
        (gamma(depth + v_round as f64), gamma(depth))
    };
    // The split-k reduce's f32 chain on top (the scalar depth already has it).
    let (g_pv, g_l) = if coop && split_k > 1 {
        let r = gamma(split_depth);
        (
            (1.0 + g_pv) * (1.0 + r) - 1.0,
            (1.0 + g_l) * (1.0 + r) - 1.0,
        )
    } else {
        (g_pv, g_l)
    };
    let fin = if !coop {
        6.0 * U32
    } else if split_k > 1 {
        6.0 * U32 + 2.0 * U16
    } else if cm1 {
        5.0 * U32 + U16 + e + 2.0 * U16
    } else {
        6.0 * e + 2.0 * U16
    };
    let f16_o_flush = cm2 || (cm1 && f16acc);
    // Flushes of an f16 O's rescales and adds: per partial sum (cm1 keeps up to `groups` of
    // them per element), and one for each addition of two.
    let partials = if cm1 { groups } else { 1.0 };
    let o16 = if f16acc {
        ((2.0 * tiles + 2.0) * partials + partials - 1.0) * F16_MIN_NORMAL
    } else {
        0.0
    };
    let cap = softcap as f64;
    let floor_dot = subnormal_floor(d);
    let floor_out = subnormal_floor(kv + d);
    let dv = fa.out.ne[0];
    let mut bounds = vec![0.0; fa.out.values.len()];
    // Rows are independent: one rayon task each.
    use rayon::prelude::*;
    bounds.par_chunks_exact_mut(dv).zip(&fa.rows).enumerate().for_each(|(r, (out, row))| {
        if row.fully_masked || row.non_finite {
            // Exactly 0 (the reference skips masked keys), but a coopmat P·V multiplies the
            // masked keys' zero weights by their decoded V: one beyond f16 range or NaN makes
            // its element NaN, unjudged.
            let v_range = cm2
                || arith == FaArith::ScalarF16
                || matches!(arith, FaArith::Cm1 { v_decoded: true, .. });
            if coop && v_range {
                let (iv2, iv3) = row.v_index;
                let v_at = |j: usize| ((iv3 * v_ne[2] + iv2) * v_ne[1] + j) * v_ne[0];
                for (i, b) in out.iter_mut().enumerate() {
                    if (0..kv).any(|j| {
                        let v = v_values[v_at(j) + i];
                        v.is_nan() || v.abs() > F16_MAX
                    }) {
                        *b = f64::NAN;
                    }
                }
            }
            return;
        }
        let live = |j: &usize| row.logits[*j] != f64::NEG_INFINITY;
        let data = extra.map(|(rows, _)| &rows[r]);
        let s_abs = data.map_or(0.0, |x| x.s_abs);
        // f16 range of the inputs the coopmat paths convert.
        if let Some(x) = data {
            let q_over = if cm2 {
                x.q_max > F16_MAX || x.q_max * s_abs > F16_MAX
            } else {
                x.q_max * s_abs > F16_MAX
            };
            // Masked keys too: the coopmat S = Q·Kᵀ covers whole tiles, and an ∞ in k̂ makes
            // S_j ±∞ or NaN, which the −∞ mask turns into NaN (∞ − ∞), not −∞ (0.1.161's cm1
            // on the H100 clamped that NaN row to −65504).
            let k_over = (0..kv).any(|j| x.k_max[j] > F16_MAX);
            // Every partial sum of the f16 logit is at most its terms' Σ|q̂·k̂| grown by the
            // roundings on its way, (1 + g_dot)·(|s'|Σ|q·k| + K's decode error), and the
            // bias sum adds at most |S_j|.
            let s_over = f16acc
                && (0..kv).filter(live).any(|j| {
                    (row.dot_magnitude[j] + x.k_err[j]) * (1.0 + g_dot) + row.logits[j].abs()
                        > F16_MAX
                });
            if q_over || k_over || s_over {
                out.fill(f64::NAN);
                return;
            }
        }
        let slope_err = if alibi.max_bias > 0.0 {
            let (base, e) = alibi.slope_parts(row.h);
            alibi_slope_error(base, e)
        } else {
            0.0
        };
        let sigma: Vec<f64> = (0..kv)
            .map(|j| {
                if row.logits[j] == f64::NEG_INFINITY {
                    return 0.0;
                }
                let s_dot = match data {
                    Some(x) => {
                        let c_q = if cm2 { 1.0 + s_abs } else { 1.0 };
                        g_dot * row.dot_magnitude[j]
                            + (1.0 + g_dot) * x.k_err[j]
                            // A flushed q̂ or k̂ (< 2⁻¹⁴) drops its product with a partner
                            // that is rounded ((1 + ρq)) and then carried through the
                            // sum's roundings: (1 + g_dot) in all.
                            + (1.0 + g_dot) * F16_MIN_NORMAL * (c_q * x.k_abs[j] + x.q_abs)
                            + if f16acc {
                                (d as f64 + 1.0) * F16_MIN_NORMAL
                            } else {
                                0.0
                            }
                    }
                    None => g_dot * row.dot_magnitude[j] + floor_dot,
                };
                let mut s = if cap != 0.0 {
                    let t = row.x[j].tanh();
                    let (t_err, round) = if coop {
                        (tanh_error(row.x[j].abs() + s_dot) * e / U32, U32 + e)
                    } else {
                        (tanh_error(row.x[j].abs() + s_dot), U32)
                    };
                    cap.abs() * (s_dot + t_err) + round * (cap * t).abs()
                } else {
                    s_dot
                };
                if row.mask[j] != 0.0 {
                    let bias = (row.slope * row.mask[j]).abs();
                    s += if coop {
                        bias * (slope_err + 3.0 * e) + 2.0 * e * row.logits[j].abs()
                    } else {
                        bias * (slope_err + U32) + U32 * row.logits[j].abs()
                    };
                }
                s
            })
            .collect();
        let max = (0..kv)
            .filter(live)
            .map(|j| row.logits[j])
            .fold(f64::NEG_INFINITY, f64::max);
        let sigma_max = (0..kv).filter(live).map(|j| sigma[j]).fold(0.0, f64::max);
        let lambda: Vec<f64> = (0..kv)
            .map(|j| {
                let dj = max - row.logits[j] + 2.0 * sigma_max;
                let mut l = sigma[j] + rescale + 10.0 * ex * dj;
                if coop {
                    l += U16;
                    // P_j ≥ e^(S_j − M)·e^(−l) (the running maximum is never above M): it
                    // can fall below 2⁻¹⁴ only if M − S_j + l ≥ 14·ln 2 (= 9.704).
                    if max - row.logits[j] + l >= 14.0 * std::f64::consts::LN_2 {
                        l += std::f64::consts::LN_2;
                    }
                }
                // Unclamped: e^λ may be ∞ below. A candidate that becomes ∞ loses every
                // `min`, and one that becomes NaN (0·∞: a weight that underflowed f64) is
                // dropped by f64::min, so the caps decide; clamping λ would shrink a
                // candidate below what the derivation gives.
                l
            })
            .collect();
        let den: f64 = (0..kv)
            .filter(live)
            .map(|j| row.weights[j] * (-lambda[j]).exp())
            .sum();
        let top = (0..kv)
            .filter(live)
            .find(|&j| row.logits[j] == max)
            .expect("a live key");
        let (p_top, l_top) = (row.weights[top], lambda[top]);
        let (iv2, iv3) = row.v_index;
        let v_at = |j: usize| ((iv3 * v_ne[2] + iv2) * v_ne[1] + j) * v_ne[0];
        let first = r * dv;
        let v_err = extra.map(|(_, e)| e);
        // Keys outer, elements inner: each key's V row is contiguous over the elements, and
        // its weight factors (exp of λ) are taken once per key, not once per element. Every
        // element's sums still add the keys in ascending order with the same products, so
        // the bounds are the same numbers as an element-by-element walk.
        //
        // First pass: the largest |v_jd| over the live keys, which |v_jd − O_d|'s f64
        // rounding term needs, and f16-range overflow of decoded V (any key, masked or not).
        let mut vmax = vec![0.0f64; dv];
        let mut v_over = vec![false; dv];
        let v_range = cm2
            || arith == FaArith::ScalarF16
            || matches!(arith, FaArith::Cm1 { v_decoded: true, .. });
        for j in 0..kv {
            let vrow = &v_values[v_at(j)..v_at(j) + dv];
            if live(&j) {
                for (m, v) in vmax.iter_mut().zip(vrow) {
                    *m = m.max(v.abs());
                }
            }
            if v_range {
                for (o, v) in v_over.iter_mut().zip(vrow) {
                    *o |= v.is_nan() || v.abs() > F16_MAX;
                }
            }
        }
        // |v_jd − O_d| as f64 numbers: the reference's O (a KV-term f64 sum) and the
        // difference carry f64 roundings, γ₆₄(KV + 3)·(|v| + max|v|). When one key
        // dominates, v_t − O is below f64's resolution and rounds to 0 while e^λ_t may be
        // 10⁵¹ (a softcap argument past 88, where tanh is only known to lie in [−1, 1]):
        // the exact product is not 0 (the emulation in tests/bounds_soundness.rs found it).
        let g64 = (kv as f64 + 3.0) * 2f64.powi(-53);
        let out_row = &fa.out.values[first..first + dv];
        let zeros = vec![0.0f64; dv];
        let mut a = zeros.clone();
        let mut s1 = zeros.clone();
        let mut a_top = zeros.clone();
        let mut s1_top: Vec<f64> = v_values[v_at(top)..v_at(top) + dv]
            .iter()
            .map(|v| v.abs())
            .collect();
        let (mut vdec, mut flush_prod, mut v_sum) = (zeros.clone(), zeros.clone(), zeros.clone());
        let (mut a_cap, mut v_err_max) = (zeros.clone(), zeros.clone());
        // Per tile: Σ of the normalised weighted |v| (f16 flushes of O's adds) and Σ|v̂| (the
        // range of cm2's per-tile f16 P·V), folded into `adds` and `tile_over` as each tile
        // ends.
        let (mut tile_sum, mut tile_abs) = (zeros.clone(), zeros.clone());
        let mut adds = zeros.clone();
        let mut tile_over = vec![false; dv];
        let bc_keys = bc.max(1) as usize;
        let p_max = 1.0 + 6.0 * ex;
        // cm2's per-tile f16 P·V grows by its roundings, γ_h(Bc + 1).
        let tile_growth = 1.0 + gamma_h(bc as f64 + 1.0);
        let close_tile = |tile_sum: &mut [f64], tile_abs: &mut [f64], adds: &mut [f64], over: &mut [bool]| {
            for i in 0..dv {
                adds[i] += tile_sum[i].min(bc as f64 * F16_MIN_NORMAL);
                over[i] |= cm2 && p_max * tile_abs[i] * tile_growth > F16_MAX;
            }
            tile_sum.fill(0.0);
            tile_abs.fill(0.0);
        };
        let mut tile = 0;
        for j in (0..kv).filter(live) {
            if coop && j / bc_keys != tile {
                close_tile(&mut tile_sum, &mut tile_abs, &mut adds, &mut tile_over);
                tile = j / bc_keys;
            }
            let p = row.weights[j];
            let grow = lambda[j].exp();
            let (p_em1, p_e) = (p * lambda[j].exp_m1(), p * grow);
            let rel = lambda[j] + l_top;
            let (p_em1_top, p_e_top) = (p * rel.exp_m1(), p * rel.exp());
            let w_rel = p / p_top * grow;
            let vrow = &v_values[v_at(j)..v_at(j) + dv];
            let erow = v_err.map(|e| &e[v_at(j)..v_at(j) + dv]);
            for i in 0..dv {
                let v = vrow[i];
                let diff = (v - out_row[i]).abs() + g64 * (v.abs() + vmax[i]);
                a_cap[i] = a_cap[i].max(diff);
                a[i] += p_em1 * diff;
                s1[i] += p_e * v.abs();
                if j != top {
                    a_top[i] += p_em1_top * diff;
                    s1_top[i] += p_e_top * v.abs() / p_top;
                }
                if coop {
                    let dec = erow.map_or(0.0, |e| e[i]);
                    if erow.is_some() {
                        vdec[i] += p_e * dec;
                        v_err_max[i] = v_err_max[i].max(dec);
                    }
                    let w = w_rel * v.abs();
                    flush_prod[i] += w.min(F16_MIN_NORMAL);
                    tile_sum[i] += w;
                    // For the f16 range of O: P̂_j = exp(Ŝ_j − M̂) ≤ 1 + 6·ε_x (its argument
                    // is ≤ 0; exp(0) within 3 ULP), times |v̂_j| ≤ |v_jd| + its decode error.
                    let v_hat = v.abs() + dec;
                    tile_abs[i] += v_hat;
                    v_sum[i] += v_hat;
                }
            }
        }
        if coop {
            close_tile(&mut tile_sum, &mut tile_abs, &mut adds, &mut tile_over);
        }
        for (i, b) in out.iter_mut().enumerate() {
            let o = out_row[i];
            // cm2 decodes every key of a tile, masked ones too, and multiplies their zero
            // weights in the f16 P·V: a decoded V element beyond f16 range (∞), or NaN, makes
            // that product 0·∞ or 0·NaN = NaN whether or not the key is masked (ggml's CPU
            // path skips masked keys, so its result is finite there).
            // O's partial sums are at most (1 + 6ε_x)·Σ|v̂_j| grown by their roundings
            // (1 + g_pv); cm2's per-tile f16 P·V by γ_h(Bc + 1).
            if coop
                && (v_over[i] || (f16acc && p_max * v_sum[i] * (1.0 + g_pv) > F16_MAX) || tile_over[i])
            {
                *b = f64::NAN;
                continue;
            }
            // The kernel's result is a convex combination of the v_j (non-negative weights over
            // their own sum), so it is never further than max_j |v_jd − O_d| from O (its
            // rounding aside), and its weighted |v| is at most max_j |v_jd|: caps for rows whose
            // logit errors leave the weights undetermined.
            let a = (a[i] / den).min(a_top[i] / p_top).min(a_cap[i]);
            let s1 = (s1[i] / den).min(s1_top[i]).min(vmax[i]);
            let ow = o.abs() + a;
            let mut extra_abs = 0.0;
            if coop {
                // Both also capped by the convex-combination argument: at most the largest
                // decode error, and 2⁻¹⁴ per f16 rounding over an L of at least 1 (the key at
                // the kernel's maximum has weight exp(0) = 1).
                extra_abs += (vdec[i] / den).min(v_err_max[i]);
                if f16_o_flush {
                    let den_w = den / p_top;
                    let cap = (2.0 * kv as f64 + 2.0) * F16_MIN_NORMAL + o16;
                    extra_abs += ((flush_prod[i] + adds[i] + o16) / den_w).min(cap);
                }
            }
            let bound = a
                + extra_abs
                + (g_pv * s1 + g_l * ow) * (1.0 + fin) / (1.0 - g_l)
                + fin * ow
                + floor_out * (1.0 + 2.0 * vmax[i]);
            // Not finite only through an infinite γ (an f16 chain whose worst case bounds
            // nothing): not judged, and counted, rather than passed by an infinite bound.
            *b = if bound.is_finite() { bound } else { f64::NAN };
        }
    });
    bounds
}
