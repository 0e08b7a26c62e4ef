//! Flash attention's integer-dot body ("FA MMQ"): recent ggml (0.1.161) builds its scalar
//! `flash_attn.comp` a second time with integer dot products and takes it, on a device with
//! accelerated 4×8-bit integer dot, for K in q4_0, q4_1, q5_0, q5_1 or q8_0 (V any type the
//! scalar path reads without shared-memory tables, i.e. not iq4_nl).
//!
//! That body changes Q·Kᵀ only; the softmax and P·V are the scalar path's and keep its model.
//! Each query row, multiplied by the scale s' in f32, is quantized per 32 elements of the head
//! dimension exactly as ggml's q8_1 quantizer does (amax/127, 1/d, round; d and Σq·d stored
//! in FLOAT_TYPE, f16 on an fp16 device), then each block of K's integer codes is multiplied
//! with it by an exact integer dot and scaled by d·d_K, less the offset term c·(Σq·d) for the
//! K types with one (c = 8d_K for q4_0, 16d_K for q5_0, −m for q4_1 and q5_1; 0 for q8_0).
//!
//! vkdiff redoes the quantization ([`quantize_query`], the same routine as the mat-vec and
//! matmul integer-dot models: `intdot::quantize_q8_1`) and computes the reference a second time
//! with q̂ = d₁₆·q in place of q·s' (scale 1; with a softcap, the scale is the cap so that the
//! dot scale is 1): that is the centre. The body's logit is exactly Σ q̂·k + Σ_blocks
//! c·(d₁₆·Σq − s). Around the centre, per (row, key) ([`key_latitude`]):
//!
//! * quantization ties (an element near a half-integer step may round either way on a device:
//!   one step, d₁₆·|k|) and flushed subnormals, and a scale d that may round to the adjacent f16
//!   on a device (its spread, times Σ|q|·|k|), all from the quantizer's own record;
//! * the offset term's part the centre leaves out, |c|·(|d₁₆·Σq − s| + its spread);
//! * the float roundings of the body: the integer dot multiplies K's *unsigned* codes and the
//!   offset comes off afterwards, so every rounding of acc·d·d_K, of the offset product and of
//!   the running sum is relative to M = Σ|q̂|·(|k| + |c|) + |c|·|s|, not to Σ|q̂·k|:
//!   γ_e(7·blocks + 4)·M, e the accumulator's unit (an f16 accumulator also takes acc to f16).
//!
//! The candidate's bound around the reference is then |centre − reference| + the scalar path's
//! bound around the centre with that latitude as each key's extra logit error. A block the
//! quantizer cannot represent (NaN or ±∞ in Q, d beyond f16, a sum beyond f16 for the offset
//! types) leaves its row unjudged (a NaN latitude). Not modelled: a device with integer dot but
//! no fp16, whose body keeps d and the sums in f32 (no candidate: such results fail).

use crate::model::cases::intdot::{offset_coefs, quantize_q8_1, Q8_1Block, QK8_1};
use crate::model::tolerance::{gamma_of, U16, U32};
use vkdiff_reference::tensor::Tensor;
use vkdiff_reference::DType;

/// The K types 0.1.161's host sends through the integer-dot body.
pub const MMQ_K_TYPES: &[DType] = &[
    DType::Q4_0,
    DType::Q4_1,
    DType::Q5_0,
    DType::Q5_1,
    DType::Q8_0,
];

/// Whether the host runs this K/V pair through the integer-dot body on an integer-dot device
/// (its V rule: a V type that needs shared-memory tables, iq4_nl, keeps the float body).
pub fn takes_mmq(k: DType, v: DType) -> bool {
    MMQ_K_TYPES.contains(&k) && v != DType::Iq4Nl
}

/// Q's rows (`rows`: Q's values, row after row of `d`) as the body sees them: each element
/// times `scale` in f32, quantized per 32. Returns q̂ = d₁₆·q per element (exact in f32: an
/// f16 times an 8-bit integer) and the blocks, row after row.
pub fn quantize_query(rows: &[f64], d: usize, scale: f32) -> (Vec<f32>, Vec<Q8_1Block>) {
    let scaled: Vec<f32> = rows.iter().map(|&x| x as f32 * scale).collect();
    let mut blocks = Vec::with_capacity(rows.len() / QK8_1);
    for row in scaled.chunks_exact(d) {
        blocks.extend(quantize_q8_1(row));
    }
    let values = blocks
        .iter()
        .flat_map(|b| (0..QK8_1).map(move |i| b.value(i) as f32))
        .collect();
    (values, blocks)
}

/// The logit latitude of one (row, key) around the centre (module doc): `blocks` the row's
/// q8_1 blocks, `k` the key's decoded values, `c` its per-block offset coefficients
/// ([`key_offsets`]), `f16acc` whether the body accumulates in f16. NaN where the quantizer
/// left the row undefined.
pub fn key_latitude(blocks: &[Q8_1Block], k: &[f64], c: &[f64], f16acc: bool) -> f64 {
    let e = if f16acc { U16 } else { U32 };
    let (mut lat, mut mag) = (0.0, 0.0);
    for ((b, k), &c) in blocks.iter().zip(k.chunks(QK8_1)).zip(c) {
        if b.undefined.is_some() || (c != 0.0 && b.no_sum.is_some()) {
            return f64::NAN;
        }
        let c = c.abs();
        for (i, k) in k.iter().enumerate() {
            let (q, steps) = (f64::from(b.q[i]).abs(), f64::from(b.latitude[i]));
            lat += steps * b.d * k.abs() + b.d_spread * (q + steps) * k.abs();
            mag += (q + steps) * b.d * (k.abs() + c);
        }
        if c != 0.0 {
            lat += c * (b.sum_error.abs() + b.sum_error_spread);
            mag += c * b.s.abs();
        }
    }
    let depth = 7.0 * blocks.len() as f64 + 4.0;
    lat + gamma_of(e, depth) * mag
}

/// Per K row (keys of every head and batch, in `Tensor::rows` order), its per-32-block offset
/// coefficients (0 for q8_0).
pub fn key_offsets(k: &Tensor) -> Vec<Vec<f64>> {
    let [d, kv, heads, batches] = k.ne();
    let nb = k.nb();
    let len = d / k.dtype().block_len() * k.dtype().block_bytes();
    let mut out = Vec::with_capacity(kv * heads * batches);
    for i3 in 0..batches {
        for i2 in 0..heads {
            for j in 0..kv {
                let at = j * nb[1] + i2 * nb[2] + i3 * nb[3];
                out.push(offset_coefs(k.dtype(), &k.data()[at..at + len]));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;
    use rand::{Rng, SeedableRng};

    /// One emulated body: the logit of one (row, key) block by block as the shader computes
    /// it (f32 q·s', q8_1, f16 d and sum, integer dots of K's unsigned q4_0 codes, the offset
    /// term), with `wrong` applied to block 0's quants.
    fn body(q: &[f32], scale: f32, kd: &[f32], p: &[i32], wrong: fn(&mut [i32; 32])) -> f64 {
        let v: Vec<f32> = q.iter().map(|&x| x * scale).collect();
        let mut logit = 0.0f64;
        for (b, blk) in quantize_q8_1(&v).iter().enumerate() {
            let mut n = blk.q.map(i32::from);
            if b == 0 {
                wrong(&mut n);
            }
            let dot: i32 = n.iter().zip(&p[b * 32..]).map(|(n, p)| n * p).sum();
            let c = 8.0 * f64::from(f16::from_f32(kd[b]));
            // The shader's f32 products, as f64 here (their roundings are in the γ term).
            logit += f64::from(dot) * blk.d * f64::from(f16::from_f32(kd[b])) - c * blk.s;
        }
        logit
    }

    #[test]
    fn the_latitude_holds_for_an_emulated_body_and_a_wrong_quant_breaks_it() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let (mut worst, mut reversed, mut one_quant, mut cases) = (0.0f64, 0, 0, 0);
        for _ in 0..400 {
            let d = 32 * rng.gen_range(1..=8);
            let scale = 0.125f32;
            let q: Vec<f32> = (0..d).map(|_| rng.gen_range(-3.0f32..3.0)).collect();
            let kd: Vec<f32> = (0..d / 32)
                .map(|_| rng.gen_range(0.001f32..0.05))
                .collect();
            let p: Vec<i32> = (0..d).map(|_| rng.gen_range(0..16)).collect();
            let k: Vec<f64> = (0..d)
                .map(|i| f64::from(f16::from_f32(kd[i / 32])) * f64::from(p[i] - 8))
                .collect();
            let c: Vec<f64> = kd
                .iter()
                .map(|&x| 8.0 * f64::from(f16::from_f32(x)))
                .collect();
            let rows: Vec<f64> = q.iter().map(|&x| f64::from(x)).collect();
            let (q_hat, blocks) = quantize_query(&rows, d, scale);
            let centre: f64 = q_hat.iter().zip(&k).map(|(q, k)| f64::from(*q) * k).sum();
            let lat = key_latitude(&blocks, &k, &c, false);
            worst = worst.max((body(&q, scale, &kd, &p, |_| ()) - centre).abs() / lat);
            // A wrong block: block 0's quants in reverse order.
            if (body(&q, scale, &kd, &p, |n| n.reverse()) - centre).abs() > lat {
                reversed += 1;
            }
            // One quant four steps off, where K's code is far from its offset.
            if (p[5] - 8).abs() >= 4 {
                cases += 1;
                if (body(&q, scale, &kd, &p, |n| n[5] += 4) - centre).abs() > lat {
                    one_quant += 1;
                }
            }
        }
        assert!(worst <= 1.0, "worst error/latitude {worst}");
        assert!(reversed >= 380, "a reversed block caught in {reversed} of 400");
        // The offset term's f16 rounding, which the centre does not carry, is the floor here.
        assert!(
            one_quant * 10 >= cases * 7,
            "one quant four steps off caught in {one_quant} of {cases}"
        );
    }
}
