//! Error models: the one place where every per-element bound is defined and justified.
//!
//! The reference gives the exact value `want` of each output element. A GPU result `got` passes
//! when |got − want| ≤ bound, where the bound is a rounding-error analysis of the arithmetic the
//! kernel's interface prescribes, not a tolerance tuned until green:
//!
//! * Every f32 add and multiply on Vulkan is correctly rounded (SPIR-V precision rules), so each
//!   contributes a relative error of at most u = 2⁻²⁴; a fused multiply-add only removes one.
//! * A sum of n terms evaluated in any order along a dependency chain of depth d (the most
//!   roundings any single term goes through) is off by at most γ(d)·Σ|termᵢ|, with
//!   γ(d) = d·u / (1 − d·u) (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1).
//!   Σ|termᵢ| — the *magnitude* — is computed exactly by the reference, so cancellation in the
//!   result never makes the bound unfairly tight.
//! * Inputs are exactly representable where the kernel reads them (f16/bf16 widen exactly to f32,
//!   and d·q of every block format here is exact in f32), so input rounding adds nothing except
//!   for formats with a minimum (d·q + m rounds once: one more level of depth).
//! * An absolute floor of (terms + 1)·2⁻¹²⁶ covers devices that flush f32 subnormals to zero.
//!
//! Each kernel's depth is derived below from the reduction structure its interface fixes.

/// Unit roundoff of f32.
pub const U32: f64 = 1.0 / (1u64 << 24) as f64;

/// γ(d) for f32 arithmetic: the relative error bound of a depth-d chain of roundings.
pub fn gamma(depth: f64) -> f64 {
    let du = depth * U32;
    du / (1.0 - du)
}

/// Floor for flushed subnormals over `terms` terms.
pub fn subnormal_floor(terms: usize) -> f64 {
    (terms as f64 + 1.0) * f32::MIN_POSITIVE as f64
}

/// Mat-vec (§5.7): each of BLOCK_SIZE invocations accumulates a strided share of the K terms
/// sequentially (⌈K/BLOCK_SIZE⌉ additions, plus 3 for reading B in vec4 chunks and the scale
/// multiplication), then the partial sums are combined by a tree of depth ⌈log₂ BLOCK_SIZE⌉.
/// Formats with a minimum round d·q + m once more. Bound = γ(depth)·Σ_k|a_mk·b_nk| + floor.
pub fn mul_mat_vec_depth(k: usize, block_size: u32, has_min: bool) -> f64 {
    let per_invocation = k.div_ceil(block_size.max(1) as usize) as f64;
    let tree = (block_size.max(1) as f64).log2().ceil();
    per_invocation + tree + 3.0 + if has_min { 1.0 } else { 0.0 }
}

/// Bounds for mat-vec outputs from their exact magnitudes Σ|a·b|.
pub fn mul_mat_vec_bounds(
    magnitudes: &[f64],
    k: usize,
    block_size: u32,
    has_min: bool,
) -> Vec<f64> {
    let g = gamma(mul_mat_vec_depth(k, block_size, has_min));
    magnitudes
        .iter()
        .map(|m| g * m + subnormal_floor(k))
        .collect()
}

/// RWKV-7 (§10): a first-order running error analysis of the recurrence, evaluated on the exact
/// values. With E the bound on the state's accumulated error (0 for the f32 input state):
/// * sa_i = Σ_j a_j·St[i][j] (an S-term dot, any order): e_sa = Σ|a_j|·E_ij + γ(S)·Σ|a_j·St_ij|
/// * St'_ij = St_ij·w_j + v_i·k_j + sa_i·b_j (three products, two sums):
///   E'_ij = |w_j|·E_ij + |b_j|·e_sa + γ(3)·(|St_ij·w_j| + |v_i·k_j| + |sa_i·b_j|)
/// * y_i = Σ_j r_j·St'_ij: e_y = Σ|r_j|·E'_ij + γ(S)·Σ|r_j·St'_ij|
///
/// The bound for each y is e_y, and for the final state E. Errors carried by the state are
/// damped or amplified exactly as the recurrence does it (|w|, |b|), so long sequences get the
/// growth they really have and no more.
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
                    let sa_mag: f64 = row.iter().zip(a).map(|(x, y)| (x * y).abs()).sum();
                    let e_sa =
                        e.iter().zip(a).map(|(e, y)| e * y.abs()).sum::<f64>() + g_dot * sa_mag;
                    for j in 0..s {
                        let terms = (row[j] * w[j]).abs() + (v[i] * k[j]).abs() + (sa * b[j]).abs();
                        e[j] = w[j].abs() * e[j] + b[j].abs() * e_sa + g3 * terms + floor;
                        row[j] = row[j] * w[j] + v[i] * k[j] + sa * b[j];
                    }
                    let y_mag: f64 = row.iter().zip(r).map(|(x, y)| (x * y).abs()).sum();
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
    fn gamma_is_about_d_times_u() {
        assert!((gamma(10.0) / (10.0 * U32) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn mat_vec_depth_counts_chain_and_tree() {
        // K = 256 over 32 invocations: 8 sequential adds, a 5-level tree, 3 for vec4 and scale.
        assert_eq!(mul_mat_vec_depth(256, 32, false), 8.0 + 5.0 + 3.0);
        assert_eq!(mul_mat_vec_depth(1, 8, true), 1.0 + 3.0 + 3.0 + 1.0);
    }

    #[test]
    fn wkv7_bound_of_exact_single_step_is_rounding_only() {
        // S = 1, one token: sa = a·st, st' = st·w + v·k + sa·b, y = r·st'.
        let one = [1.0];
        let st = [2.0];
        let b = wkv7_bounds(1, 1, 1, 1, [&one, &one, &one, &one, &one, &one, &st]);
        let e_sa = gamma(1.0) * 2.0;
        let e_st = e_sa + gamma(3.0) * (2.0 + 1.0 + 2.0) + subnormal_floor(1);
        assert!((b[1] - e_st).abs() < 1e-20);
        assert!((b[0] - (e_st + gamma(1.0) * 5.0 + subnormal_floor(1))).abs() < 1e-20);
    }
}
