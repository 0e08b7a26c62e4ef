//! nvfp4, q1_0, q2_0, tq1_0 and tq2_0 against ggml's decoders written out loop by loop as
//! `ggml-quants.c` walks the bytes (a second reading of the layouts in `lowbit.rs` and
//! `nvfp4.rs`, which index by element instead).

use super::nvfp4::{ue4m3_half, BlockNvfp4};
use super::*;

fn bytes(n: usize, seed: u32) -> Vec<u8> {
    // A small LCG: every byte value turns up, no dependency on a random crate.
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (x >> 16) as u8
        })
        .collect()
}

fn with_scale(dtype: DType, mut b: Vec<u8>, d: f32) -> Vec<u8> {
    for block in b.chunks_exact_mut(dtype.block_bytes()) {
        dtype.set_f16_scale(block, 0, half::f16::from_f32(d));
    }
    b
}

/// `dequantize_row_tq1_0`: 32 bytes × 5 trits, 16 bytes × 5 trits, then 4 qh bytes × 4 trits.
fn ggml_tq1_0(block: &[u8]) -> Vec<f32> {
    let d = half::f16::from_le_bytes([block[52], block[53]]).to_f32();
    let pow3 = [1u8, 3, 9, 27, 81, 243];
    let trit = |b: u8, n: usize| ((u16::from(b.wrapping_mul(pow3[n])) * 3) >> 8) as i32 - 1;
    let mut y = Vec::new();
    for (start, len) in [(0usize, 32usize), (32, 16)] {
        for n in 0..5 {
            for m in 0..len {
                y.push(trit(block[start + m], n) as f32 * d);
            }
        }
    }
    for n in 0..4 {
        for j in 0..4 {
            y.push(trit(block[48 + j], n) as f32 * d);
        }
    }
    y
}

/// `dequantize_row_tq2_0`: byte groups of 32, bit pairs l = 0 … 3 within each.
fn ggml_tq2_0(block: &[u8]) -> Vec<f32> {
    let d = half::f16::from_le_bytes([block[64], block[65]]).to_f32();
    let mut y = Vec::new();
    for j in [0usize, 32] {
        for l in 0..4 {
            for m in 0..32 {
                let q = (block[j + m] >> (2 * l)) & 3;
                y.push((i32::from(q) - 1) as f32 * d);
            }
        }
    }
    y
}

/// `dequantize_row_nvfp4`: per sub-block, byte j gives elements j and j + 8.
fn ggml_nvfp4(block: &[u8]) -> Vec<f32> {
    let mut y = vec![0f32; 64];
    for s in 0..4 {
        let d = ue4m3_half(block[s]);
        for j in 0..8 {
            let b = block[4 + 8 * s + j];
            y[16 * s + j] = mxfp4::e2m1_doubled(b & 0xF) as f32 * d;
            y[16 * s + j + 8] = mxfp4::e2m1_doubled(b >> 4) as f32 * d;
        }
    }
    y
}

#[test]
fn loop_by_loop_decoders_agree() {
    for seed in 0..20 {
        let t1 = with_scale(DType::Tq1_0, bytes(54 * 2, seed), -0.375);
        let t2 = with_scale(DType::Tq2_0, bytes(66 * 2, seed), 1.5);
        let mut nv = bytes(36 * 2, seed);
        for blk in nv.chunks_exact_mut(36) {
            blk[..4].iter_mut().for_each(|d| *d &= 0x7F);
        }
        for (dtype, data, ggml) in [
            (DType::Tq1_0, &t1, ggml_tq1_0 as fn(&[u8]) -> Vec<f32>),
            (DType::Tq2_0, &t2, ggml_tq2_0),
            (DType::Nvfp4, &nv, ggml_nvfp4),
        ] {
            let n = 2 * dtype.block_len();
            let want: Vec<f32> = data
                .chunks_exact(dtype.block_bytes())
                .flat_map(ggml)
                .collect();
            assert_eq!(dequantize_f32(dtype, data, n).unwrap(), want, "{dtype}");
            let exact = dequantize(dtype, data, n).unwrap();
            assert!(exact.iter().zip(&want).all(|(a, &b)| *a == f64::from(b)));
        }
    }
}

#[test]
fn q1_0_and_q2_0_bits() {
    let mut b = vec![0u8; 18];
    b[..2].copy_from_slice(&half::f16::from_f32(0.5).to_le_bytes());
    b[2] = 0b0000_0101; // elements 0 and 2 set
    let x = dequantize(DType::Q1_0, &b, 128).unwrap();
    assert_eq!(&x[..4], &[0.5, -0.5, 0.5, -0.5]);
    assert!(x[8..].iter().all(|&v| v == -0.5));
    b[2] = 0b1110_0100; // codes 0, 1, 2, 3 → −1, 0, 1, 2
    let x = dequantize(DType::Q2_0, &b, 64).unwrap();
    assert_eq!(&x[..4], &[-0.5, 0.0, 0.5, 1.0]);
    assert_eq!(x[4], -0.5);
}

#[test]
fn ue4m3_scales() {
    assert_eq!(ue4m3_half(0x38), 0.5); // 1.0: exponent 7, mantissa 0
    assert_eq!(ue4m3_half(0x7E), 224.0); // 448, the largest
    assert_eq!(ue4m3_half(0x01), 2f32.powi(-10)); // 2⁻⁹, the smallest subnormal
    assert_eq!(ue4m3_half(0x08), 2f32.powi(-7)); // 2⁻⁶, the smallest normal
    assert_eq!(ue4m3_half(0x7F), 0.0); // E4M3's NaN: zero in ggml
    assert_eq!(ue4m3_half(0), 0.0);
    let mut blk = [0u8; 36];
    blk[0] = 0x38;
    blk[4] = 0x7F; // element 0: code 0xF (−6), element 8: code 7 (6)
    let b = BlockNvfp4::from_bytes(&blk);
    let mut out = [0f64; 64];
    b.decode(&mut out);
    assert_eq!((out[0], out[8]), (-6.0, 6.0));
}

#[test]
fn tq2_0_magnitude_counts_the_offset() {
    let mut b = vec![0u8; 66];
    b[0] = 0b0101_0101; // element 0, 32, 64, 96: code 1 (value 0)
    b[64..].copy_from_slice(&half::f16::from_f32(-2.0).to_le_bytes());
    let mut m = vec![0.0; 256];
    magnitude_into(DType::Tq2_0, &b, &mut m).unwrap();
    assert_eq!(m[0], 4.0); // |d·1| + |d|
    assert_eq!(m[1], 2.0); // code 0: |d·0| + |d|
    assert_eq!(dequantize(DType::Tq2_0, &b, 256).unwrap()[0], 0.0);
}

#[test]
fn sizes_and_scale_fields() {
    for (dtype, len, bytes) in [
        (DType::Nvfp4, 64, 36),
        (DType::Q1_0, 128, 18),
        (DType::Q2_0, 64, 18),
        (DType::Tq1_0, 256, 54),
        (DType::Tq2_0, 256, 66),
    ] {
        assert_eq!((dtype.block_len(), dtype.block_bytes()), (len, bytes));
        assert!(!dtype.has_quantizer());
        assert_eq!(DType::from_name(dtype.name()), Some(dtype));
    }
}
