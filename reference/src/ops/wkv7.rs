//! GGML_OP_RWKV_WKV7 (ggml_rwkv_wkv7): the RWKV-7 state recurrence.
//!
//! With head size S, H heads, C = S·H channels, T tokens in B equal sequences: for each
//! sequence, head and token, with the S×S state St (i = value row, j = key column),
//! `sa_i = Σ_j a_j·St[i][j]`;  `St'[i][j] = St[i][j]·w_j + v_i·k_j + sa_i·b_j`;
//! `y_i = Σ_j r_j·St'[i][j]`.
//! dst is (C, T + S·B): rows 0..T are y, then each sequence's final state.

use rayon::prelude::*;

use super::kernel::{self, reserved};
use super::prim::sum_init;
use super::Output;
use crate::tensor::{AsTensorView, Tensor, TensorView};
use crate::{DType, Error, Result};

const OP: &str = "rwkv_wkv7";

/// The seven inputs of RWKV_WKV7, as ggml takes them: f32, contiguous. `T` is [`Tensor`] or
/// [`TensorView`] (anything [`AsTensorView`]).
#[derive(Debug)]
pub struct Wkv7Inputs<'a, T: ?Sized = Tensor> {
    /// Receptance (S, H, T).
    pub r: &'a T,
    /// Decay, used directly as a multiplier (S, H, T).
    pub w: &'a T,
    /// Key (S, H, T).
    pub k: &'a T,
    /// Value (S, H, T).
    pub v: &'a T,
    /// In-context learning rate "a" (S, H, T).
    pub a: &'a T,
    /// "b" (S, H, T).
    pub b: &'a T,
    /// Initial state, S·S·H elements per sequence, ne1 = B.
    pub state: &'a T,
}

impl<T: ?Sized> Clone for Wkv7Inputs<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for Wkv7Inputs<'_, T> {}

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

impl<T: AsTensorView + ?Sized> Wkv7Inputs<'_, T> {
    /// The seven inputs as views, in the order r, w, k, v, a, b, state.
    fn views(&self) -> [TensorView<'_>; 7] {
        [self.r, self.w, self.k, self.v, self.a, self.b, self.state].map(|x| x.view())
    }

    /// Checks ggml's requirements (f32, contiguous, matching shapes, T divisible by B).
    pub fn dims(&self) -> Result<Wkv7Dims> {
        let views = self.views();
        let [s, h, t, _] = views[0].ne();
        for (what, x) in ["r", "w", "k", "v", "a", "b", "state"]
            .into_iter()
            .zip(views)
        {
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
                    reason: format!("{what} is {:?} but r is {:?}", x.ne(), views[0].ne()),
                });
            }
        }
        let state = views[6];
        let seqs = state.ne()[1];
        // s·h·t elements exist (r has them), so s·s·h·seqs overflowing means a mismatch.
        let want = s.checked_mul(s * h).and_then(|x| x.checked_mul(seqs));
        if Some(state.nelements()) != want {
            return Err(Error::Shape {
                op: OP,
                reason: format!(
                    "state has {} elements, expected S·S·H·B = {}",
                    state.nelements(),
                    want.map_or("too many".to_string(), |n| n.to_string())
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

/// Element `i` of a contiguous f32 tensor.
#[inline(always)]
fn f32_at(data: &[u8], i: usize) -> f64 {
    f64::from(f32::from_le_bytes(
        data[4 * i..4 * i + 4].try_into().expect("4 bytes"),
    ))
}

/// Tokens ahead whose inputs are prefetched.
const PREFETCH: usize = 4;

/// Hints the CPU to bring `bytes` into cache.
#[inline(always)]
fn prefetch(bytes: &[u8]) {
    for line in bytes.chunks(64) {
        kernel::prefetch(line);
    }
}

/// Lanes of i kept in registers across the loops over j.
const CH: usize = 32;

/// One (sequence, head): its y rows (tokens × S) and final state (S × S, row i = value row).
/// The state is kept transposed (`st[j·S + i]` = `St[i][j]`) so that the S independent
/// per-row sums run side by side across i, each still sequential in j:
/// `sa_i = ((init + St[i][0]·a₀) + St[i][1]·a₁) + …`, `St'[i][j] = (St[i][j]·w_j + v_i·k_j) +
/// sa_i·b_j` and `y_i = ((init + St'[i][0]·r₀) + …)`, exactly the reference's operation order.
#[inline(always)]
fn head_body(data: &[&[u8]; 7], dims: Wkv7Dims, seq: usize, head: usize) -> (Vec<f64>, Vec<f64>) {
    let Wkv7Dims { s, h, t, seqs } = dims;
    let c = s * h;
    let tokens = t / seqs;
    let init = sum_init();
    let base = seq * c * s + head * s * s;
    // (A loop, not an iterator chain: its closure would not get the target features.)
    let mut state = vec![0.0; s * s];
    for (x, b) in state.iter_mut().zip(data[6][4 * base..].chunks_exact(4)) {
        *x = f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    }
    let mut st = vec![0.0; s * s];
    transpose(s, &state, &mut st);
    let mut ys = vec![0.0; tokens * s];
    let mut vecs = vec![0.0; 6 * s];
    let mut sa = vec![0.0; s];
    for tt in 0..tokens {
        let at = (seq * tokens + tt) * c + head * s;
        // A token's S inputs are C·4 bytes after the previous token's: too far apart for the
        // hardware prefetcher (they cross a page every token), so ask for them ahead.
        if tt + PREFETCH < tokens {
            let ahead = 4 * (at + PREFETCH * c);
            for bytes in &data[..6] {
                prefetch(&bytes[ahead..ahead + 4 * s]);
            }
        }
        for (vec, bytes) in vecs.chunks_exact_mut(s).zip(data) {
            for (j, o) in vec.iter_mut().enumerate() {
                *o = f32_at(bytes, at + j);
            }
        }
        let (r, rest) = vecs.split_at(s);
        let (w, rest) = rest.split_at(s);
        let (k, rest) = rest.split_at(s);
        let (v, rest) = rest.split_at(s);
        let (a, b) = rest.split_at(s);
        let y = &mut ys[tt * s..(tt + 1) * s];
        // sa = St · a, with the state before this token.
        let mut i0 = 0;
        while i0 + CH <= s {
            let mut acc = [init; CH];
            for (row, &aj) in st.chunks_exact(s).zip(a) {
                let row: &[f64; CH] = row[i0..i0 + CH].try_into().expect("CH lanes");
                for l in 0..CH {
                    acc[l] += row[l] * aj;
                }
            }
            sa[i0..i0 + CH].copy_from_slice(&acc);
            i0 += CH;
        }
        for i in i0..s {
            let mut acc = init;
            for (row, &aj) in st.chunks_exact(s).zip(a) {
                acc += row[i] * aj;
            }
            sa[i] = acc;
        }
        // St' and y = St' · r.
        let mut i0 = 0;
        while i0 + CH <= s {
            let mut acc = [init; CH];
            // Local copies: no aliasing with the state rows, so everything stays in registers.
            let vc: [f64; CH] = v[i0..i0 + CH].try_into().expect("CH lanes");
            let sc: [f64; CH] = sa[i0..i0 + CH].try_into().expect("CH lanes");
            for (j, row) in st.chunks_exact_mut(s).enumerate() {
                let (wj, kj, bj, rj) = (w[j], k[j], b[j], r[j]);
                let row: &mut [f64; CH] = (&mut row[i0..i0 + CH]).try_into().expect("CH lanes");
                for l in 0..CH {
                    let x = row[l] * wj + vc[l] * kj + sc[l] * bj;
                    row[l] = x;
                    acc[l] += x * rj;
                }
            }
            y[i0..i0 + CH].copy_from_slice(&acc);
            i0 += CH;
        }
        for i in i0..s {
            let mut acc = init;
            for (j, row) in st.chunks_exact_mut(s).enumerate() {
                let x = row[i] * w[j] + v[i] * k[j] + sa[i] * b[j];
                row[i] = x;
                acc += x * r[j];
            }
            y[i] = acc;
        }
    }
    // Back to row-major St[i][j].
    let mut out = state;
    transpose(s, &st, &mut out);
    (ys, out)
}

/// `dst[j·s + i] = src[i·s + j]` for an s × s matrix, in 8 × 8 tiles held as arrays (a
/// plain loop strides one side by s·8 bytes and checks every index), then the edges.
#[inline(always)]
fn transpose(s: usize, src: &[f64], dst: &mut [f64]) {
    let (src, dst) = (&src[..s * s], &mut dst[..s * s]);
    let whole = s / 8 * 8;
    for i0 in (0..whole).step_by(8) {
        for j0 in (0..whole).step_by(8) {
            let mut tile = [[0.0; 8]; 8];
            for (r, t) in tile.iter_mut().enumerate() {
                *t = src[(i0 + r) * s + j0..][..8].try_into().expect("8 values");
            }
            for c in 0..8 {
                let col: &mut [f64; 8] = (&mut dst[(j0 + c) * s + i0..][..8])
                    .try_into()
                    .expect("8 values");
                for r in 0..8 {
                    col[r] = tile[r][c];
                }
            }
        }
    }
    for i in 0..s {
        let from = if i < whole { whole } else { 0 };
        for j in from..s {
            dst[j * s + i] = src[i * s + j];
            dst[i * s + j] = src[j * s + i];
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn head_avx512(
    data: &[&[u8]; 7],
    dims: Wkv7Dims,
    seq: usize,
    head: usize,
) -> (Vec<f64>, Vec<f64>) {
    head_body(data, dims, seq, head)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn head_avx(
    data: &[&[u8]; 7],
    dims: Wkv7Dims,
    seq: usize,
    head: usize,
) -> (Vec<f64>, Vec<f64>) {
    head_body(data, dims, seq, head)
}

fn run_head(data: &[&[u8]; 7], dims: Wkv7Dims, seq: usize, head: usize) -> (Vec<f64>, Vec<f64>) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked just above).
            return unsafe { head_avx512(data, dims, seq, head) };
        }
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the CPU has AVX (checked just above).
            return unsafe { head_avx(data, dims, seq, head) };
        }
    }
    head_body(data, dims, seq, head)
}

/// The exact recurrence in f64: dst (C, T + S·B), rows 0..T the outputs y, then each
/// sequence's final state. Every sum is sequential in j (the reference's order); the
/// (sequence, head) pairs run in parallel.
///
/// ```
/// use vkdiff_reference::ops::wkv7::{wkv7, Wkv7Inputs};
/// use vkdiff_reference::tensor::Tensor;
/// use vkdiff_reference::DType;
///
/// // S = 1, H = 1, T = 2 tokens of one sequence, every input 1, initial state 2:
/// // sa = St, St' = St·1 + 1·1 + sa·1 = 2·St + 1, y = St'.
/// let ones = Tensor::from_f32(DType::F32, [1, 1, 2, 1], &[1.0, 1.0])?;
/// let state = Tensor::from_f32(DType::F32, [1, 1, 1, 1], &[2.0])?;
/// let out = wkv7(&Wkv7Inputs {
///     r: &ones,
///     w: &ones,
///     k: &ones,
///     v: &ones,
///     a: &ones,
///     b: &ones,
///     state: &state,
/// })?;
/// assert_eq!(out.ne, [1, 3, 1, 1]);
/// assert_eq!(out.values, vec![5.0, 11.0, 11.0]); // y₀, y₁, final state
/// # Ok::<(), vkdiff_reference::Error>(())
/// ```
pub fn wkv7<T: AsTensorView + ?Sized>(inputs: &Wkv7Inputs<'_, T>) -> Result<Output> {
    let dims = inputs.dims()?;
    let Wkv7Dims { s, h, t, seqs } = dims;
    let c = s * h;
    let views = inputs.views();
    let data: [&[u8]; 7] = views.map(|x| x.data());
    let tokens_per_seq = t / seqs;
    let n_out = t.checked_add(s * seqs).and_then(|rows| rows.checked_mul(c));
    let mut values = reserved(OP, n_out)?;
    // Each (sequence, head) is independent: compute its y rows and final state.
    let per_head: Vec<(Vec<f64>, Vec<f64>)> = (0..seqs * h)
        .into_par_iter()
        .map(|sh| run_head(&data, dims, sh / h, sh % h))
        .collect();
    // dst in order: each token's row of y (head by head), then each (sequence, head)'s state.
    for heads in per_head.chunks_exact(h) {
        for tt in 0..tokens_per_seq {
            for (ys, _) in heads {
                values.extend_from_slice(&ys[tt * s..(tt + 1) * s]);
            }
        }
    }
    for (_, st) in &per_head {
        values.extend_from_slice(st);
    }
    debug_assert_eq!(Some(values.len()), n_out);
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
