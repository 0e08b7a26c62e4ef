//! GGML_OP_RWKV_WKV7 (ggml_rwkv_wkv7): the RWKV-7 state recurrence.
//!
//! With head size S, H heads, C = S·H channels, T tokens in B equal sequences: for each
//! sequence, head and token, with the S×S state St (i = value row, j = key column),
//! sa_i = Σ_j a_j·St[i][j];  St'[i][j] = St[i][j]·w_j + v_i·k_j + sa_i·b_j;  y_i = Σ_j r_j·St'[i][j].
//! dst is (C, T + S·B): rows 0..T are y, then each sequence's final state.

use rayon::prelude::*;

use super::Output;
use crate::tensor::Tensor;
use crate::{DType, Error, Result};

const OP: &str = "rwkv_wkv7";

/// The seven inputs of RWKV_WKV7, as ggml takes them.
#[derive(Debug, Clone, Copy)]
pub struct Wkv7Inputs<'a> {
    /// Receptance (S, H, T).
    pub r: &'a Tensor,
    /// Decay, used directly as a multiplier (S, H, T).
    pub w: &'a Tensor,
    /// Key (S, H, T).
    pub k: &'a Tensor,
    /// Value (S, H, T).
    pub v: &'a Tensor,
    /// In-context learning rate "a" (S, H, T).
    pub a: &'a Tensor,
    /// "b" (S, H, T).
    pub b: &'a Tensor,
    /// Initial state, S·S·H elements per sequence, ne1 = B.
    pub state: &'a Tensor,
}

/// Sizes derived from the inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wkv7Dims {
    /// Head size S.
    pub s: usize,
    /// Heads H.
    pub h: usize,
    /// Tokens T (all sequences).
    pub t: usize,
    /// Sequences B.
    pub seqs: usize,
}

impl Wkv7Inputs<'_> {
    /// Checks ggml's requirements (f32, contiguous, matching shapes, T divisible by B).
    pub fn dims(&self) -> Result<Wkv7Dims> {
        let [s, h, t, _] = self.r.ne();
        for (what, x) in [
            ("r", self.r),
            ("w", self.w),
            ("k", self.k),
            ("v", self.v),
            ("a", self.a),
            ("b", self.b),
            ("state", self.state),
        ] {
            if x.dtype() != DType::F32 {
                return Err(Error::Type {
                    op: OP,
                    what,
                    dtype: x.dtype(),
                });
            }
            if !x.is_contiguous() {
                return Err(Error::Shape {
                    op: OP,
                    reason: format!("{what} must be contiguous"),
                });
            }
            if what != "state" && x.ne() != [s, h, t, 1] {
                return Err(Error::Shape {
                    op: OP,
                    reason: format!("{what} is {:?} but r is {:?}", x.ne(), self.r.ne()),
                });
            }
        }
        let seqs = self.state.ne()[1];
        if self.state.nelements() != s * s * h * seqs {
            return Err(Error::Shape {
                op: OP,
                reason: format!(
                    "state has {} elements, expected S·S·H·B = {}",
                    self.state.nelements(),
                    s * s * h * seqs
                ),
            });
        }
        if t % seqs != 0 {
            return Err(Error::Shape {
                op: OP,
                reason: format!("{t} tokens do not split into {seqs} equal sequences"),
            });
        }
        Ok(Wkv7Dims { s, h, t, seqs })
    }
}

/// The exact recurrence in f64.
pub fn wkv7(inputs: &Wkv7Inputs) -> Result<Output> {
    let Wkv7Dims { s, h, t, seqs } = inputs.dims()?;
    let c = s * h;
    let vals = |x: &Tensor| x.rows();
    let (r, w, k, v, a, b) = (
        vals(inputs.r)?,
        vals(inputs.w)?,
        vals(inputs.k)?,
        vals(inputs.v)?,
        vals(inputs.a)?,
        vals(inputs.b)?,
    );
    let state = vals(inputs.state)?;
    let tokens_per_seq = t / seqs;
    // Each (sequence, head) is independent: compute its y rows and final state.
    let per_head: Vec<(Vec<f64>, Vec<f64>)> = (0..seqs * h)
        .into_par_iter()
        .map(|sh| {
            let (seq, head) = (sh / h, sh % h);
            let mut st = state[seq * c * s + head * s * s..][..s * s].to_vec();
            let mut ys = vec![0.0; tokens_per_seq * s];
            for tt in 0..tokens_per_seq {
                let at = (seq * tokens_per_seq + tt) * c + head * s;
                let [r, w, k, v, a, b] = [&r, &w, &k, &v, &a, &b].map(|x| &x[at..at + s]);
                for i in 0..s {
                    let row = &mut st[i * s..(i + 1) * s];
                    let sa: f64 = row.iter().zip(a).map(|(x, y)| x * y).sum();
                    for j in 0..s {
                        row[j] = row[j] * w[j] + v[i] * k[j] + sa * b[j];
                    }
                    ys[tt * s + i] = row.iter().zip(r).map(|(x, y)| x * y).sum();
                }
            }
            (ys, st)
        })
        .collect();
    let mut values = vec![0.0; c * (t + s * seqs)];
    for (sh, (ys, st)) in per_head.iter().enumerate() {
        let (seq, head) = (sh / h, sh % h);
        for tt in 0..tokens_per_seq {
            let row = seq * tokens_per_seq + tt;
            values[row * c + head * s..][..s].copy_from_slice(&ys[tt * s..(tt + 1) * s]);
        }
        values[t * c + seq * c * s + head * s * s..][..s * s].copy_from_slice(st);
    }
    Ok(Output {
        ne: [c, t + s * seqs, 1, 1],
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ne: [usize; 4], v: &[f32]) -> Tensor {
        Tensor::from_f32(DType::F32, ne, v).unwrap()
    }

    #[test]
    fn one_token_head_size_two_by_hand() {
        // S = 2, H = 1, T = 1, B = 1; state rows [1, 2], [3, 4].
        let (r, w, k, v, a, b) = (
            t([2, 1, 1, 1], &[1., 0.5]),
            t([2, 1, 1, 1], &[0.5, 1.]),
            t([2, 1, 1, 1], &[1., 2.]),
            t([2, 1, 1, 1], &[1., -1.]),
            t([2, 1, 1, 1], &[1., 1.]),
            t([2, 1, 1, 1], &[0., 1.]),
        );
        let state = t([4, 1, 1, 1], &[1., 2., 3., 4.]);
        let out = wkv7(&Wkv7Inputs {
            r: &r,
            w: &w,
            k: &k,
            v: &v,
            a: &a,
            b: &b,
            state: &state,
        })
        .unwrap();
        // row 0: sa = 3; St' = [1·.5 + 1·1 + 3·0, 2·1 + 1·2 + 3·1] = [1.5, 7]; y = 1.5 + 3.5 = 5
        // row 1: sa = 7; St' = [3·.5 − 1 + 0, 4 − 2 + 7] = [0.5, 9]; y = 0.5 + 4.5 = 5
        assert_eq!(out.ne, [2, 1 + 2, 1, 1]);
        assert_eq!(out.values, vec![5., 5., 1.5, 7., 0.5, 9.]);
    }

    #[test]
    fn sequences_do_not_share_state() {
        let ones = t([1, 1, 2, 1], &[1., 1.]);
        let state = t([1, 2, 1, 1], &[2., 10.]);
        let out = wkv7(&Wkv7Inputs {
            r: &ones,
            w: &ones,
            k: &ones,
            v: &ones,
            a: &ones,
            b: &ones,
            state: &state,
        })
        .unwrap();
        // S = 1: sa = st, st' = st + 1 + st = 2·st + 1, y = st'.
        assert_eq!(out.values, vec![5., 21., 5., 21.]);
    }

    #[test]
    fn uneven_sequences_are_rejected() {
        let x = t([1, 1, 3, 1], &[1.; 3]);
        let state = t([1, 2, 1, 1], &[0.; 2]);
        let err = wkv7(&Wkv7Inputs {
            r: &x,
            w: &x,
            k: &x,
            v: &x,
            a: &x,
            b: &x,
            state: &state,
        })
        .unwrap_err();
        assert!(
            err.to_string().contains("3 tokens do not split into 2"),
            "{err}"
        );
    }
}
