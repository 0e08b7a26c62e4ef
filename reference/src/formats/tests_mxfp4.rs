//! MXFP4 known answers, written by hand from the OCP MX v1.0 definitions of E8M0 and E2M1
//! (`mxfp4.rs`), not from any implementation.

use super::mxfp4::{e2m1_code, e2m1_doubled, e8m0_half_ggml, encode, encode_block, QK_MXFP4};
use super::*;

/// A block of scale byte `e` whose element j has code `codes[j]`.
fn block_of(e: u8, codes: &[u8; 32]) -> Vec<u8> {
    let mut b = vec![e];
    b.extend((0..16).map(|j| codes[j] | (codes[j + 16] << 4)));
    b
}

#[test]
fn e2m1_table_from_the_spec() {
    // Sign, 2 exponent bits (bias 1), 1 mantissa bit; exponent 0: subnormal m·2⁻¹ … (0, 0.5).
    let spec = |code: u8| -> f64 {
        let (s, e, m) = ((code >> 3) & 1, (code >> 1) & 3, code & 1);
        let mag = if e == 0 {
            f64::from(m) * 0.5
        } else {
            (1.0 + f64::from(m) * 0.5) * 2f64.powi(i32::from(e) - 1)
        };
        if s == 1 {
            -mag
        } else {
            mag
        }
    };
    let want = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    for code in 0..16u8 {
        assert_eq!(spec(code).abs(), want[usize::from(code & 7)]);
        assert_eq!(
            f64::from(e2m1_doubled(code)) * 0.5,
            spec(code),
            "code {code:#06b}"
        );
    }
}

#[test]
fn hand_computed_values() {
    // 0b0111 = 6.0, scale e = 127 → 2⁰: 6.0; e = 130 → 2³: 48; e = 0 → 2⁻¹²⁷.
    let mut codes = [0u8; 32];
    codes[0] = 0b0111;
    codes[1] = 0b1111; // −6
    codes[2] = 0b0001; // 0.5
    codes[3] = 0b1000; // −0
    codes[16] = 0b0011; // 1.5 in the high nibble of byte 0
    codes[31] = 0b1101; // −3 in the high nibble of byte 15
    let b = block_of(127, &codes);
    assert_eq!(b.len(), 17);
    assert_eq!(b[1], 0b0011_0111);
    let x = dequantize(DType::Mxfp4, &b, 32).unwrap();
    assert_eq!(&x[..4], &[6.0, -6.0, 0.5, 0.0]);
    assert!(x[3].is_sign_negative(), "0b1000 is −0");
    assert_eq!(x[16], 1.5);
    assert_eq!(x[31], -3.0);
    let x = dequantize(DType::Mxfp4, &block_of(130, &codes), 32).unwrap();
    assert_eq!(&x[..3], &[48.0, -48.0, 4.0]);
    let x = dequantize(DType::Mxfp4, &block_of(0, &codes), 32).unwrap();
    assert_eq!(x[0], 6.0 * 2f64.powi(-127));
    assert_eq!(x[2], 2f64.powi(-128));
    let x = dequantize(DType::Mxfp4, &block_of(254, &codes), 32).unwrap();
    assert_eq!(x[0], 6.0 * 2f64.powi(127));
    // E8M0 0xFF is NaN: the whole block.
    let x = dequantize(DType::Mxfp4, &block_of(0xFF, &codes), 32).unwrap();
    assert!(x.iter().all(|v| v.is_nan()));
}

#[test]
fn ggml_f32_decode_equals_the_exact_values_in_range() {
    // ggml halves the scale and doubles the E2M1 values: same numbers, exact in f32 while they
    // fit (every nibble, every scale 0 … 252; at 253 and 254 the large ones overflow).
    let codes: [u8; 32] = std::array::from_fn(|i| (i % 16) as u8);
    for e in 0..=254u8 {
        let b = block_of(e, &codes);
        let exact = dequantize(DType::Mxfp4, &b, 32).unwrap();
        let f = dequantize_f32(DType::Mxfp4, &b, 32).unwrap();
        for (x, y) in exact.iter().zip(&f) {
            if x.abs() <= f64::from(f32::MAX) {
                assert_eq!(f64::from(*y), *x, "e {e}");
            } else {
                assert!(
                    y.is_infinite() && (*y > 0.0) == (*x > 0.0),
                    "e {e}: {x} → {y}"
                );
            }
        }
    }
    // The halved scale: 2⁻¹²⁸ (an f32 subnormal) at e = 0, 2¹²⁶ at e = 254, and 2¹²⁷ at the
    // NaN code (ggml's CPU decoder has no NaN).
    assert_eq!(e8m0_half_ggml(0).to_bits(), 0x0020_0000);
    assert_eq!(f64::from(e8m0_half_ggml(0)), 2f64.powi(-128));
    assert_eq!(f64::from(e8m0_half_ggml(1)), 2f64.powi(-127));
    assert_eq!(f64::from(e8m0_half_ggml(2)), 2f64.powi(-126));
    assert_eq!(f64::from(e8m0_half_ggml(254)), 2f64.powi(126));
    assert_eq!(f64::from(e8m0_half_ggml(255)), 2f64.powi(127));
    let f = dequantize_f32(DType::Mxfp4, &block_of(255, &codes), 32).unwrap();
    assert_eq!(f[1], 2f32.powi(127)); // kvalue 1 · 2¹²⁷
    assert_eq!(f[2], f32::INFINITY); // kvalue 2 · 2¹²⁷
    assert_eq!(f[0], 0.0);
}

#[test]
fn nearest_code_with_ties_to_even_and_saturation() {
    assert_eq!(e2m1_code(0.0), 0);
    assert_eq!(e2m1_code(-0.0), 8);
    assert_eq!(e2m1_code(0.25), 0); // tie 0 | 0.5: even code 0
    assert_eq!(e2m1_code(0.75), 2); // tie 0.5 | 1: code 2
    assert_eq!(e2m1_code(1.25), 2); // tie 1 | 1.5: code 2
    assert_eq!(e2m1_code(2.5), 4); // tie 2 | 3: code 4
    assert_eq!(e2m1_code(5.0), 6); // tie 4 | 6: code 6
    assert_eq!(e2m1_code(5.1), 7);
    assert_eq!(e2m1_code(100.0), 7);
    assert_eq!(e2m1_code(-100.0), 15);
    assert_eq!(e2m1_code(-1.4), 0b1011);
    assert_eq!(e2m1_code(f64::NAN), 0);
}

#[test]
fn encoder_follows_the_spec_conversion() {
    // amax 6 → ⌊log₂ 6⌋ − 2 = 0 → e = 127, every value on the grid kept.
    let grid = [0.0f32, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let v: Vec<f32> = (0..32)
        .map(|i| grid[i % 8] * if i >= 16 { -1.0 } else { 1.0 })
        .collect();
    let b = encode_block(&v);
    assert_eq!(b.e, 127);
    let mut out = [0.0f64; 32];
    b.decode(&mut out);
    for (x, y) in v.iter().zip(&out) {
        assert_eq!(f64::from(*x), *y);
    }
    // amax 7.9 → exponent 2 − 2 = 0 as well; 7.9 saturates to 6.
    let mut w = [0.0f32; 32];
    w[5] = 7.9;
    w[6] = 0.3;
    let b = encode_block(&w);
    assert_eq!((b.e, b.code(5), b.code(6)), (127, 7, 1));
    // amax 1000 → ⌊log₂⌋ = 9 → e = 134 (X = 128): 1000/128 = 7.8 → 6.
    w[5] = 1000.0;
    assert_eq!(encode_block(&w).e, 134);
    // The clamp: tiny and huge amax stay inside E8M0's finite codes.
    w[6] = 0.0;
    w[5] = f32::from_bits(1); // 2⁻¹⁴⁹
    assert_eq!(encode_block(&w).e, 0);
    w[5] = f32::MAX;
    assert_eq!(encode_block(&w).e, 252); // ⌊log₂⌋ = 127 → 125 + 127
                                         // All zero (or non-finite only): scale 2⁰, zero codes.
    let z = encode(&[0.0; QK_MXFP4 * 2]);
    assert_eq!(z.len(), 34);
    assert!(z
        .iter()
        .enumerate()
        .all(|(i, &x)| x == if i % 17 == 0 { 127 } else { 0 }));
}

#[test]
fn no_reference_quantizer_is_claimed() {
    assert!(!DType::Mxfp4.has_quantizer());
    assert!(matches!(
        quantize(DType::Mxfp4, &[0.0; 32]),
        Err(crate::Error::NoQuantizer { .. })
    ));
    assert!(DType::WEIGHT_QUANTS.contains(&DType::Mxfp4));
    assert_eq!(DType::Mxfp4.f16_scales(), 0);
}
