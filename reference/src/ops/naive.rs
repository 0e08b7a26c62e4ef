//! The plain loops the fast ops must reproduce bit for bit (tests only): every operand decoded
//! up front, one output at a time, each sum a sequential f64 fold in index order. These are the
//! reference's definitions; `tests_fast.rs` compares the tiled, vectorized, parallel paths with
//! them on random shapes.

use super::flash_attn::{Alibi, FlashAttnParams};
use super::Output;
use crate::tensor::Tensor;

/// ggml_mul_mat by definition: dst[i3][i2][n][m] = Σ_k a[i3/r3][i2/r2][m][k]·b[i3][i2][n][k].
pub fn mul_mat(a: &Tensor, b: &Tensor, magnitude: bool) -> Output {
    let (av, bv) = if magnitude {
        (a.magnitudes().unwrap(), b.magnitudes().unwrap())
    } else {
        (a.rows().unwrap(), b.rows().unwrap())
    };
    let [k, m_rows, ne02, ne03] = a.ne();
    let [_, n_rows, ne12, ne13] = b.ne();
    let (r2, r3) = (ne12 / ne02, ne13 / ne03);
    let mut values = Vec::new();
    for i3 in 0..ne13 {
        for i2 in 0..ne12 {
            for n in 0..n_rows {
                let b_row = &bv[((i3 * ne12 + i2) * n_rows + n) * k..][..k];
                let a_mat = ((i3 / r3) * ne02 + i2 / r2) * m_rows;
                for m in 0..m_rows {
                    let a_row = &av[(a_mat + m) * k..][..k];
                    values.push(a_row.iter().zip(b_row).map(|(x, y)| x * y).sum());
                }
            }
        }
    }
    Output {
        ne: [m_rows, n_rows, ne12, ne13],
        values,
    }
}

/// ggml_mul_mat_id by definition: dst[t][e][m] = Σ_k as[ids[t][e]][m][k]·b[t][e mod ne11][k].
pub fn mul_mat_id(as_: &Tensor, b: &Tensor, ids: &Tensor, magnitude: bool) -> Output {
    let (av, bv) = if magnitude {
        (as_.magnitudes().unwrap(), b.magnitudes().unwrap())
    } else {
        (as_.rows().unwrap(), b.rows().unwrap())
    };
    let ids = ids.rows().unwrap();
    let [k, m_rows, ..] = as_.ne();
    let [_, ne11, ..] = b.ne();
    let n_used = ids.len() / b.ne()[2];
    let mut values = Vec::new();
    for (row, &x) in ids.iter().enumerate() {
        let (t, e) = (row / n_used, row % n_used);
        let b_row = &bv[(t * ne11 + e % ne11) * k..][..k];
        for m in 0..m_rows {
            let a_row = &av[(x as usize * m_rows + m) * k..][..k];
            values.push(a_row.iter().zip(b_row).map(|(x, y)| x * y).sum());
        }
    }
    Output {
        ne: [m_rows, n_used, b.ne()[2], 1],
        values,
    }
}

/// RWKV-7 by definition, the state row-major: for each row i, sa = Σ_j St[i][j]·a_j, then
/// St'[i][j] = St[i][j]·w_j + v_i·k_j + sa·b_j and y_i = Σ_j St'[i][j]·r_j.
pub fn wkv7(
    r: &Tensor,
    w: &Tensor,
    k: &Tensor,
    v: &Tensor,
    a: &Tensor,
    b: &Tensor,
    state: &Tensor,
) -> Output {
    let [s, h, t, _] = r.ne();
    let seqs = state.ne()[1];
    let c = s * h;
    let [r, w, k, v, a, b, state] = [r, w, k, v, a, b, state].map(|x| x.rows().unwrap());
    let tokens = t / seqs;
    let mut values = vec![0.0; c * (t + s * seqs)];
    for seq in 0..seqs {
        for head in 0..h {
            let mut st = state[seq * c * s + head * s * s..][..s * s].to_vec();
            for tt in 0..tokens {
                let at = (seq * tokens + tt) * c + head * s;
                let [r, w, k, v, a, b] = [&r, &w, &k, &v, &a, &b].map(|x| &x[at..at + s]);
                for i in 0..s {
                    let row = &mut st[i * s..(i + 1) * s];
                    let sa: f64 = row.iter().zip(a).map(|(x, y)| x * y).sum();
                    for j in 0..s {
                        row[j] = row[j] * w[j] + v[i] * k[j] + sa * b[j];
                    }
                    values[(seq * tokens + tt) * c + head * s + i] =
                        row.iter().zip(r).map(|(x, y)| x * y).sum();
                }
            }
            values[t * c + seq * c * s + head * s * s..][..s * s].copy_from_slice(&st);
        }
    }
    Output {
        ne: [c, t + s * seqs, 1, 1],
        values,
    }
}

/// One flash-attention row by definition.
pub struct NaiveRow {
    /// x_j = s'·(q·k_j).
    pub x: Vec<f64>,
    /// |s'|·Σ_d |q_d·k_jd|.
    pub dot_magnitude: Vec<f64>,
    /// Logits (−∞ where masked).
    pub logits: Vec<f64>,
    /// Softmax weights.
    pub weights: Vec<f64>,
}

/// FLASH_ATTN_EXT by definition, one row ((i3·N + q)·H + h) at a time.
pub fn flash_attn(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    params: FlashAttnParams,
) -> (Output, Vec<NaiveRow>) {
    let [dk, n, h, ne3] = q.ne();
    let [dv, kv, hv, _] = v.ne();
    let hk = k.ne()[2];
    let (qs, ks, vs) = (q.rows().unwrap(), k.rows().unwrap(), v.rows().unwrap());
    let ms = mask.map(|m| m.rows().unwrap());
    let mne = mask.map(Tensor::ne).unwrap_or([0; 4]);
    let alibi = Alibi::new(params.max_bias, h);
    let sp = params.dot_scale() as f64;
    let cap = params.logit_softcap as f64;
    let at = |ne: [usize; 4], i1: usize, i2: usize, i3: usize| (i3 * ne[2] + i2) * ne[1] + i1;
    let mut values = Vec::new();
    let mut rows = Vec::new();
    for r in 0..ne3 * n * h {
        let (i3, iq, ih) = (r / (n * h), (r / h) % n, r % h);
        let (ik2, iv2) = (ih / (h / hk), ih / (h / hv));
        let qrow = &qs[at(q.ne(), iq, ih, i3) * dk..][..dk];
        let slope = alibi.slope(ih);
        let mut x = vec![0.0; kv];
        let mut dot_magnitude = vec![0.0; kv];
        let mut mvals = vec![0.0; kv];
        let mut logits = vec![f64::NEG_INFINITY; kv];
        let mut weights = vec![0.0; kv];
        let (mut fully_masked, mut non_finite) = (true, false);
        for j in 0..kv {
            let krow = &ks[at(k.ne(), j, ik2, i3) * dk..][..dk];
            let (dot, mag) = qrow
                .iter()
                .zip(krow)
                .fold((0.0, 0.0), |(s, m), (a, b)| (s + a * b, m + (a * b).abs()));
            x[j] = sp * dot;
            dot_magnitude[j] = sp.abs() * mag;
            if let Some(ms) = &ms {
                mvals[j] = ms[at(mne, iq, ih % mne[2], i3 % mne[3]) * mne[0] + j];
            }
            if mvals[j] == f64::NEG_INFINITY {
                continue;
            }
            let s = if cap != 0.0 { cap * x[j].tanh() } else { x[j] };
            logits[j] = s + slope * mvals[j];
            non_finite |= !logits[j].is_finite();
            fully_masked = false;
        }
        let mut out = vec![f64::NAN; dv];
        if !fully_masked && !non_finite {
            let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            for (w, &s) in weights.iter_mut().zip(&logits) {
                *w = (s - max).exp();
            }
            let sum: f64 = weights.iter().sum();
            weights.iter_mut().for_each(|w| *w /= sum);
            out.iter_mut().for_each(|o| *o = 0.0);
            for (j, &w) in weights.iter().enumerate() {
                if logits[j] == f64::NEG_INFINITY {
                    continue;
                }
                let vrow = &vs[at(v.ne(), j, iv2, i3) * dv..][..dv];
                for (o, x) in out.iter_mut().zip(vrow) {
                    *o = if x.is_finite() { *o + w * x } else { f64::NAN };
                }
            }
        }
        values.extend(out);
        rows.push(NaiveRow {
            x,
            dot_magnitude,
            logits,
            weights,
        });
    }
    (
        Output {
            ne: [dv, h, n, ne3],
            values,
        },
        rows,
    )
}
