//! The RWKV_WKV7 error model. Shared arithmetic: [`crate::model::tolerance`].

#[allow(unused_imports)]
use crate::model::tolerance::*;

/// RWKV-7 (interface.md §10): a running error bound on the recurrence, evaluated on the exact
/// values. With E the bound on the state's accumulated error (0 for the f32 input state), every
/// magnitude is taken of the *computed* value (exact magnitude plus its error bound), so the bound
/// is a strict upper bound, not a first-order estimate:
/// * sa_i = Σ_j a_j·St[i][j] (an S-term dot, any order):
///   e_sa = Σ|a_j|·E_ij + γ(S)·Σ|a_j|·(|St_ij| + E_ij)
/// * St'_ij = St_ij·w_j + v_i·k_j + sa_i·b_j (three products, two sums):
///   E'_ij = |w_j|·E_ij + |b_j|·e_sa + γ(3)·((|St_ij| + E_ij)·|w_j| + |v_i·k_j| + (|sa_i| + e_sa)·|b_j|)
/// * y_i = Σ_j r_j·St'_ij: e_y = Σ|r_j|·E'_ij + γ(S)·Σ|r_j|·(|St'_ij| + E'_ij)
///
/// plus a subnormal floor per result (flushing devices). The bound for each y is e_y, and for
/// the final state E. Errors carried by the state are damped or amplified exactly as the
/// recurrence does it (|w|, |b|), so long sequences get the growth they really have and no
/// more. `wkv7_bound_covers_emulated_f32` checks it against the shader's f32 arithmetic.
pub fn wkv7_bounds(s: usize, h: usize, t: usize, seqs: usize, inputs: [&[f64]; 7]) -> Vec<f64> {
    let [r, w, k, v, a, b, state] = inputs;
    let c = s * h;
    let per_seq = t / seqs;
    let (g_dot, g3) = (gamma(s as f64), gamma(3.0));
    let floor = subnormal_floor(s);
    let mut bounds = vec![0.0; c * (t + s * seqs)];
    for seq in 0..seqs {
        for head in 0..h {
            let mut st = state[seq * c * s + head * s * s..][..s * s].to_vec();
            let mut err = vec![0.0f64; s * s];
            for tt in 0..per_seq {
                let tok = seq * per_seq + tt;
                let at = tok * c + head * s;
                let [r, w, k, v, a, b] = [r, w, k, v, a, b].map(|x| &x[at..at + s]);
                for i in 0..s {
                    let (row, e) = (&mut st[i * s..(i + 1) * s], &mut err[i * s..(i + 1) * s]);
                    let sa: f64 = row.iter().zip(a).map(|(x, y)| x * y).sum();
                    let sa_mag: f64 = row
                        .iter()
                        .zip(e.iter())
                        .zip(a)
                        .map(|((x, e), y)| (x.abs() + e) * y.abs())
                        .sum();
                    let e_sa = e.iter().zip(a).map(|(e, y)| e * y.abs()).sum::<f64>()
                        + g_dot * sa_mag
                        + floor;
                    for j in 0..s {
                        let terms = (row[j].abs() + e[j]) * w[j].abs()
                            + (v[i] * k[j]).abs()
                            + (sa.abs() + e_sa) * b[j].abs();
                        e[j] = w[j].abs() * e[j] + b[j].abs() * e_sa + g3 * terms + floor;
                        row[j] = row[j] * w[j] + v[i] * k[j] + sa * b[j];
                    }
                    let y_mag: f64 = row
                        .iter()
                        .zip(e.iter())
                        .zip(r)
                        .map(|((x, e), y)| (x.abs() + e) * y.abs())
                        .sum();
                    bounds[tok * c + head * s + i] =
                        e.iter().zip(r).map(|(e, y)| e * y.abs()).sum::<f64>()
                            + g_dot * y_mag
                            + floor;
                }
            }
            bounds[t * c + seq * c * s + head * s * s..][..s * s].copy_from_slice(&err);
        }
    }
    bounds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wkv7_bound_of_exact_single_step_is_rounding_only() {
        // S = 1, one token: sa = a·st, st' = st·w + v·k + sa·b, y = r·st'.
        let one = [1.0];
        let st = [2.0];
        let b = wkv7_bounds(1, 1, 1, 1, [&one, &one, &one, &one, &one, &one, &st]);
        let fl = subnormal_floor(1);
        let e_sa = gamma(1.0) * 2.0 + fl;
        let e_st = e_sa + gamma(3.0) * (2.0 + 1.0 + (2.0 + e_sa)) + fl;
        assert!((b[1] - e_st).abs() < 1e-20);
        assert!((b[0] - (e_st + gamma(1.0) * (5.0 + e_st) + fl)).abs() < 1e-20);
    }
}
