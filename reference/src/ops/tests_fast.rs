//! The fast ops against their definitions ([`super::naive`]): on random shapes, types, strides
//! and values, every output must have exactly the same bits.

use super::flash_attn::{flash_attn, flash_attn_ext, FlashAttnInputs, FlashAttnParams};
use super::mul_mat::{mul_mat, mul_mat_magnitude};
use super::mul_mat_id::{mul_mat_id, mul_mat_id_magnitude};
use super::naive;
use super::wkv7::{wkv7, Wkv7Inputs};
use super::Output;
use crate::tensor::{Tensor, TensorView};
use crate::DType;

/// splitmix64: a small deterministic generator (no dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }

    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Values with both signs, zeros of both signs and a spread of exponents.
    fn value(&mut self) -> f32 {
        match self.below(20) {
            0 => 0.0,
            1 => -0.0,
            2 => (self.unit() - 0.5) * 1e-3,
            3 => (self.unit() - 0.5) * 300.0,
            _ => (self.unit() - 0.5) * 4.0,
        }
    }

    fn values(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.value()).collect()
    }

    /// A dense tensor: float types from values, block formats as raw blocks with random code
    /// bits and finite scales.
    fn tensor(&mut self, dtype: DType, ne: [usize; 4]) -> Tensor {
        let n: usize = ne.iter().product();
        if !dtype.is_quantized() {
            return Tensor::from_f32(dtype, ne, &self.values(n)).unwrap();
        }
        let mut bytes: Vec<u8> = (0..dtype.row_bytes(n).unwrap())
            .map(|_| self.next() as u8)
            .collect();
        for block in bytes.chunks_exact_mut(dtype.block_bytes()) {
            for i in 0..dtype.f16_scales() {
                let d = half::f16::from_f32((self.unit() - 0.3) * 0.05);
                dtype.set_f16_scale(block, i, d);
            }
        }
        Tensor::from_bytes(dtype, ne, bytes).unwrap()
    }

    /// The same values as `t` (a float type) stored with padded rows and, sometimes, reversed
    /// dims 1 and 2 (a permuted view).
    fn restride(&mut self, t: &Tensor) -> Tensor {
        if t.dtype().is_quantized() || self.below(2) == 0 {
            return t.clone();
        }
        let [ne0, ne1, ne2, ne3] = t.ne();
        let size = t.dtype().block_bytes();
        let gap = self.below(3) * size;
        let elem = size + gap; // nb0 with a gap after each element
        let row = ne0 * elem + self.below(2) * 8;
        let permute = self.below(2) == 0;
        // Storage order (i0, i1, i2, i3) or (i0, i2, i1, i3).
        let (nb1, nb2) = if permute {
            (row * ne2, row)
        } else {
            (row, row * ne1)
        };
        let nb3 = row * ne1 * ne2;
        let mut data = vec![0u8; nb3 * ne3];
        let dense = t.data();
        for i3 in 0..ne3 {
            for i2 in 0..ne2 {
                for i1 in 0..ne1 {
                    for i0 in 0..ne0 {
                        let src = (((i3 * ne2 + i2) * ne1 + i1) * ne0 + i0) * size;
                        let dst = i0 * elem + i1 * nb1 + i2 * nb2 + i3 * nb3;
                        data[dst..dst + size].copy_from_slice(&dense[src..src + size]);
                    }
                }
            }
        }
        let s = Tensor::new(t.dtype(), t.ne(), [elem, nb1, nb2, nb3], data).unwrap();
        assert_eq!(s.rows().unwrap(), t.rows().unwrap());
        s
    }
}

fn same_bits(what: &str, got: &Output, want: &Output) {
    assert_eq!(got.ne, want.ne, "{what}: shape");
    same_values(what, &got.values, &want.values);
}

/// The same bits, except that any NaN matches any NaN: which NaN operand's payload an f64 add
/// or multiply passes on is up to the compiler (it may commute the operands), in the naive code
/// as much as in the fast one, so payloads are not part of the reference's value.
fn same_values(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
            "{what}: element {i}: {g:e} ({:#x}) vs the definition's {w:e} ({:#x})",
            g.to_bits(),
            w.to_bits()
        );
    }
}

const A_TYPES: &[DType] = &[
    DType::F32,
    DType::F16,
    DType::Bf16,
    DType::Q4_0,
    DType::Q4_1,
    DType::Q5_0,
    DType::Q5_1,
    DType::Q8_0,
    DType::Q2_K,
    DType::Q3_K,
    DType::Q4_K,
    DType::Q5_K,
    DType::Q6_K,
    DType::Iq1S,
    DType::Iq1M,
    DType::Iq2Xxs,
    DType::Iq2Xs,
    DType::Iq2S,
    DType::Iq3Xxs,
    DType::Iq3S,
    DType::Iq4Nl,
    DType::Iq4Xs,
];

#[test]
fn mul_mat_is_the_definition_bit_for_bit() {
    let mut rng = Rng(1);
    for case in 0..60 {
        let at = rng.pick(A_TYPES);
        let bt = rng.pick(&[DType::F32, DType::F16, DType::Bf16]);
        let blocks = rng.pick(&[1, 1, 2, 3, 9, 17]);
        let k = at.block_len()
            * blocks
            * if at.block_len() == 1 {
                rng.pick(&[1, 7, 32, 300])
            } else {
                1
            };
        let m = rng.pick(&[1, 2, 15, 16, 17, 63, 64, 65, 130]);
        let n = rng.pick(&[1, 1, 2, 3, 4, 5, 9, 300]);
        let (ne02, ne03) = (rng.pick(&[1, 2]), rng.pick(&[1, 2]));
        let (r2, r3) = (rng.pick(&[1, 2]), rng.pick(&[1, 3]));
        if k * m * n * ne02 * ne03 * r2 * r3 > 4_000_000 {
            continue;
        }
        let a = rng.tensor(at, [k, m, ne02, ne03]);
        let b = rng.tensor(bt, [k, n, ne02 * r2, ne03 * r3]);
        let a = rng.restride(&a);
        let b = rng.restride(&b);
        let what = format!("case {case}: {at} {:?} × {bt} {:?}", a.ne(), b.ne());
        same_bits(
            &what,
            &mul_mat(&a, &b).unwrap(),
            &naive::mul_mat(&a, &b, false),
        );
        same_bits(
            &format!("{what} (magnitude)"),
            &mul_mat_magnitude(a.view(), b.view()).unwrap(),
            &naive::mul_mat(&a, &b, true),
        );
    }
}

/// One B column, the mat-vec that decodes A straight into registers where its rows are whole
/// blocks of a vertical format: random formats, lengths and row counts (multiples of 8 below,
/// at and above a task's 64, and not), one or two A matrices.
#[test]
fn mat_vec_is_the_definition_bit_for_bit() {
    let mut rng = Rng(7);
    for case in 0..80 {
        let at = rng.pick(&[
            DType::Q4_0,
            DType::Q4_1,
            DType::Q5_0,
            DType::Q5_1,
            DType::Q8_0,
            DType::Q4_K,
            DType::F16,
        ]);
        let bt = rng.pick(&[DType::F32, DType::F16, DType::Bf16]);
        let k = at.block_len().max(32) * rng.pick(&[1, 2, 3, 5, 8]);
        let m = rng.pick(&[8, 24, 56, 64, 72, 130, 200]);
        let ne02 = rng.pick(&[1, 2]);
        let a = rng.tensor(at, [k, m, ne02, 1]);
        let b = rng.tensor(bt, [k, 1, ne02, 1]);
        let b = rng.restride(&b);
        same_bits(
            &format!("case {case}: {at} {:?} × {bt} {:?}", a.ne(), b.ne()),
            &mul_mat(&a, &b).unwrap(),
            &naive::mul_mat(&a, &b, false),
        );
    }
}

#[test]
fn mul_mat_of_all_negative_zero_products_keeps_the_sums_sign() {
    // Every product −0: the sum is Σ's empty value plus −0s, whatever that is, in both paths.
    let a = Tensor::from_f32(DType::F32, [3, 20, 1, 1], &[-0.0; 60]).unwrap();
    let b = Tensor::from_f32(DType::F32, [3, 2, 1, 1], &[0.0; 6]).unwrap();
    same_bits(
        "−0",
        &mul_mat(&a, &b).unwrap(),
        &naive::mul_mat(&a, &b, false),
    );
}

#[test]
fn mul_mat_id_is_the_definition_bit_for_bit() {
    let mut rng = Rng(2);
    for case in 0..40 {
        let at = rng.pick(A_TYPES);
        let bt = rng.pick(&[DType::F32, DType::F16]);
        let k = at.block_len() * rng.pick(&[1, 2, 5]) * if at.block_len() == 1 { 33 } else { 1 };
        let m = rng.pick(&[1, 7, 16, 17, 70]);
        let n_as = rng.pick(&[1, 2, 5, 8]);
        let n_used = rng.pick(&[1, 2, 4]);
        let ne11 = if rng.below(2) == 0 { 1 } else { n_used };
        let tokens = rng.pick(&[1, 3, 12]);
        let as_ = rng.tensor(at, [k, m, n_as, 1]);
        let b = rng.tensor(bt, [k, ne11, tokens, 1]);
        let b = rng.restride(&b);
        let ids: Vec<u8> = (0..n_used * tokens)
            .flat_map(|_| (rng.below(n_as) as i32).to_le_bytes())
            .collect();
        let ids = Tensor::from_bytes(DType::I32, [n_used, tokens, 1, 1], ids).unwrap();
        let what = format!(
            "case {case}: {at} {:?} × {bt} {:?}, ids {:?}",
            as_.ne(),
            b.ne(),
            ids.ne()
        );
        same_bits(
            &what,
            &mul_mat_id(&as_, &b, &ids).unwrap(),
            &naive::mul_mat_id(&as_, &b, &ids, false),
        );
        same_bits(
            &format!("{what} (magnitude)"),
            &mul_mat_id_magnitude(&as_, &b, &ids).unwrap(),
            &naive::mul_mat_id(&as_, &b, &ids, true),
        );
    }
}

#[test]
fn wkv7_is_the_definition_bit_for_bit() {
    let mut rng = Rng(3);
    for case in 0..30 {
        let s = rng.pick(&[1, 2, 3, 31, 32, 33, 64, 65, 128]);
        let h = rng.pick(&[1, 2, 3]);
        let seqs = rng.pick(&[1, 2]);
        let t = seqs * rng.pick(&[1, 2, 5]);
        let ne = [s, h, t, 1];
        let n = s * h * t;
        let mut mk = |lo: f32, hi: f32| {
            let v: Vec<f32> = (0..n).map(|_| lo + (hi - lo) * rng.unit()).collect();
            Tensor::from_f32(DType::F32, ne, &v).unwrap()
        };
        let (r, w, k, v) = (mk(-1.0, 1.0), mk(0.5, 1.0), mk(-1.0, 1.0), mk(-1.0, 1.0));
        let (a, b) = (mk(-1.0, 0.0), mk(0.0, 1.0));
        let state = rng.tensor(DType::F32, [s * s * h, seqs, 1, 1]);
        let got = wkv7(&Wkv7Inputs {
            r: &r,
            w: &w,
            k: &k,
            v: &v,
            a: &a,
            b: &b,
            state: &state,
        })
        .unwrap();
        let want = naive::wkv7(&r, &w, &k, &v, &a, &b, &state);
        same_bits(
            &format!("case {case}: S {s} H {h} T {t} B {seqs}"),
            &got,
            &want,
        );
        // Views work the same way.
        let views = [&r, &w, &k, &v, &a, &b, &state].map(|x| x.view());
        let got = wkv7(&Wkv7Inputs {
            r: &views[0],
            w: &views[1],
            k: &views[2],
            v: &views[3],
            a: &views[4],
            b: &views[5],
            state: &views[6],
        })
        .unwrap();
        same_bits(&format!("case {case} (views)"), &got, &want);
    }
}

/// An f16 mask (≥ KV, ≥ N, planes) with some −∞ (whole rows sometimes) and finite values.
fn mask(rng: &mut Rng, kv: usize, n: usize, planes: [usize; 2]) -> Tensor {
    let (kvp, np) = (kv + rng.below(3), n.div_ceil(64) * 64);
    let full_row = rng.below(3) == 0;
    let v: Vec<f32> = (0..kvp * np * planes[0] * planes[1])
        .map(|i| {
            let (j, row) = (i % kvp, i / kvp);
            if (full_row && row % 5 == 1) || (rng.below(4) == 0 && j % 3 != 0) {
                f32::NEG_INFINITY
            } else {
                (rng.unit() - 0.5) * 4.0
            }
        })
        .collect();
    Tensor::from_f32(DType::F16, [kvp, np, planes[0], planes[1]], &v).unwrap()
}

#[test]
fn flash_attn_is_the_definition_bit_for_bit() {
    let mut rng = Rng(4);
    for case in 0..50 {
        let kt = rng.pick(&[
            DType::F16,
            DType::F16,
            DType::F32,
            DType::Q8_0,
            DType::Q4_0,
            DType::Q4_1,
        ]);
        let vt = rng.pick(&[DType::F16, DType::F32, DType::Q8_0, DType::Q5_0]);
        let quant = kt.is_quantized() || vt.is_quantized();
        let dk = if quant {
            rng.pick(&[32, 64])
        } else {
            rng.pick(&[1, 4, 16, 20, 64])
        };
        let dv = if vt.is_quantized() {
            rng.pick(&[32, dk.max(32)])
        } else {
            rng.pick(&[dk, dk + 3])
        };
        let kv = rng.pick(&[1, 2, 5, 16, 17, 40, 300]);
        let n = rng.pick(&[1, 3, 16, 17, 40, 70]);
        let hk = rng.pick(&[1, 2]);
        let h = hk * rng.pick(&[1, 2, 3]);
        let hv = rng.pick(&[1, hk]);
        let ne3 = rng.pick(&[1, 2]);
        let q = rng.tensor(DType::F32, [dk, n, h, ne3]);
        let q = rng.restride(&q);
        let k = rng.tensor(kt, [dk, kv, hk, ne3]);
        let mut v = rng.tensor(vt, [dv, kv, hv, ne3]);
        let with_mask = rng.below(3) != 0;
        let m = with_mask.then(|| {
            let planes = [rng.pick(&[1, h]), rng.pick(&[1, ne3])];
            mask(&mut rng, kv, n, planes)
        });
        let params = FlashAttnParams {
            scale: rng.pick(&[1.0, 0.125, 0.7]),
            max_bias: if with_mask {
                rng.pick(&[0.0, 0.0, 8.0])
            } else {
                0.0
            },
            logit_softcap: rng.pick(&[0.0, 0.0, 30.0]),
        };
        // Now and then a non-finite V element (the checked path).
        if rng.below(6) == 0 && vt == DType::F16 {
            let mut bytes = v.data().to_vec();
            let at = 2 * rng.below(bytes.len() / 2);
            bytes[at..at + 2].copy_from_slice(&half::f16::NAN.to_le_bytes());
            v = Tensor::from_bytes(vt, v.ne(), bytes).unwrap();
        }
        let inputs = FlashAttnInputs {
            q: &q,
            k: &k,
            v: &v,
            mask: m.as_ref(),
            sinks: None,
            params,
        };
        let what = format!(
            "case {case}: q {:?} k {kt} {:?} v {vt} {:?} mask {:?} {params:?}",
            q.ne(),
            k.ne(),
            v.ne(),
            m.as_ref().map(|m| m.ne())
        );
        let (want, rows) = naive::flash_attn(&q, &k, &v, m.as_ref(), params);
        let got = flash_attn_ext(&inputs).unwrap();
        same_bits(&what, &got.out, &want);
        assert_eq!(got.rows.len(), rows.len());
        for (r, (g, w)) in got.rows.iter().zip(&rows).enumerate() {
            let what = format!("{what} row {r}");
            same_values(&format!("{what} x"), &g.x, &w.x);
            same_values(&format!("{what} |x|"), &g.dot_magnitude, &w.dot_magnitude);
            same_values(&format!("{what} logits"), &g.logits, &w.logits);
            same_values(&format!("{what} weights"), &g.weights, &w.weights);
        }
        same_bits(
            &format!("{what} (values only)"),
            &flash_attn(&inputs).unwrap(),
            &want,
        );
        // Through views.
        let (qv, kv_, vv) = (q.view(), k.view(), v.view());
        let mv = m.as_ref().map(|m| m.view());
        let views = FlashAttnInputs {
            q: &qv,
            k: &kv_,
            v: &vv,
            mask: mv.as_ref(),
            sinks: None,
            params,
        };
        same_bits(
            &format!("{what} (views)"),
            &flash_attn(&views).unwrap(),
            &want,
        );
    }
}

#[test]
fn views_of_borrowed_bytes_need_no_copy() {
    let bytes: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let a = TensorView::from_bytes(DType::F32, [2, 2, 1, 1], &bytes).unwrap();
    let b = TensorView::from_bytes(DType::F32, [2, 1, 1, 1], &bytes[..8]).unwrap();
    assert_eq!(mul_mat(a, b).unwrap().values, vec![5.0, 11.0]);
}
