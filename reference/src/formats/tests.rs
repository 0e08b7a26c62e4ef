//! Known-answer tests: blocks and expected values written by hand from the spec formulas.

use super::*;

/// Little-endian bytes of an f16 given by its bits.
fn h(bits: u16) -> [u8; 2] {
    bits.to_le_bytes()
}

/// A block assembled from byte pieces.
fn block(pieces: &[&[u8]]) -> Vec<u8> {
    pieces.concat()
}

/// Deterministic pseudo-random numbers (64-bit LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn next_u32(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 32) as u32
    }

    /// Uniform-ish in [-1, 1).
    fn unit(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 / (1u32 << 23) as f32 - 1.0
    }

    /// Random bytes for `n` blocks of `dtype` whose f16 fields are finite.
    fn blocks(&mut self, dtype: DType, n: usize) -> Vec<u8> {
        let bb = dtype.block_bytes();
        let mut out: Vec<u8> = (0..n * bb).map(|_| self.next_u32() as u8).collect();
        for b in out.chunks_exact_mut(bb) {
            for i in 0..dtype.f16_scales() {
                // Clear the top exponent bit: exponent ≤ 15, never Inf/NaN.
                let d = dtype.f16_scale(b, i).to_bits() & !0x4000;
                dtype.set_f16_scale(b, i, half::f16::from_bits(d));
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// DType.

#[test]
fn dtype_table() {
    use DType::*;
    assert_eq!(
        DType::ALL,
        &[
            F32, F16, Bf16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Iq1S,
            Iq1M, Iq2Xxs, Iq2Xs, Iq2S, Iq3Xxs, Iq3S, Iq4Nl, Iq4Xs, Mxfp4, Nvfp4, Q1_0, Q2_0, Tq1_0,
            Tq2_0, I32
        ]
    );
    let bytes: Vec<usize> = DType::ALL.iter().map(|t| t.block_bytes()).collect();
    assert_eq!(
        bytes,
        [
            4, 2, 2, 18, 20, 22, 24, 34, 36, 84, 110, 144, 176, 210, 50, 56, 66, 74, 82, 98, 110,
            18, 136, 17, 36, 18, 18, 54, 66, 4
        ]
    );
    let lens: Vec<usize> = DType::ALL.iter().map(|t| t.block_len()).collect();
    assert_eq!(
        lens,
        [
            1, 1, 1, 32, 32, 32, 32, 32, 32, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256,
            256, 32, 256, 32, 64, 128, 64, 256, 256, 1
        ]
    );
    let names: Vec<&str> = DType::ALL.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q8_1", "q2_K", "q3_K",
            "q4_K", "q5_K", "q6_K", "iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs",
            "iq3_s", "iq4_nl", "iq4_xs", "mxfp4", "nvfp4", "q1_0", "q2_0", "tq1_0", "tq2_0", "i32"
        ]
    );
    for &t in DType::ALL {
        assert_eq!(t.is_quantized(), t.block_len() > 1);
        assert_eq!(t.to_string(), t.name());
        assert_eq!(DType::from_name(t.name()), Some(t));
        assert_eq!(DType::from_name(&t.name().to_uppercase()), Some(t));
    }
    assert_eq!(DType::from_name("Q4_0"), Some(Q4_0));
    assert_eq!(DType::from_name("BF16"), Some(Bf16));
    assert_eq!(DType::from_name("q4_2"), None);
    assert_eq!(DType::from_name(""), None);
}

#[test]
fn block_structs_match_dtype() {
    fn check<B: Block>() {
        assert_eq!(B::BYTES, B::DTYPE.block_bytes(), "{}", B::DTYPE);
        assert_eq!(B::LEN, B::DTYPE.block_len(), "{}", B::DTYPE);
    }
    check::<BlockQ4_0>();
    check::<BlockQ4_1>();
    check::<BlockQ5_0>();
    check::<BlockQ5_1>();
    check::<BlockQ8_0>();
    check::<BlockQ8_1>();
}

#[test]
fn serde_names_are_ggml_names() {
    use serde::de::value::{Error as DeError, StrDeserializer};
    use serde::Deserialize;
    for &t in DType::ALL {
        let got = DType::deserialize(StrDeserializer::<DeError>::new(t.name())).unwrap();
        assert_eq!(got, t);
    }
    assert!(DType::deserialize(StrDeserializer::<DeError>::new("Q4_0")).is_err());
}

#[test]
fn row_bytes_and_ragged_rows() {
    assert_eq!(DType::Q4_0.row_bytes(64).unwrap(), 36);
    assert_eq!(DType::Q8_1.row_bytes(0).unwrap(), 0);
    assert_eq!(DType::F32.row_bytes(7).unwrap(), 28);
    assert_eq!(DType::Bf16.row_bytes(3).unwrap(), 6);
    assert_eq!(DType::Q5_1.row_bytes(96).unwrap(), 72);
    assert_eq!(
        DType::Q4_0.row_bytes(33),
        Err(Error::RaggedRow {
            dtype: DType::Q4_0,
            n: 33,
            block: 32
        })
    );
    assert_eq!(
        quantize(DType::Q8_0, &[0.0; 33]),
        Err(Error::RaggedRow {
            dtype: DType::Q8_0,
            n: 33,
            block: 32
        })
    );
    assert_eq!(
        dequantize(DType::Q5_0, &[0; 22], 31),
        Err(Error::RaggedRow {
            dtype: DType::Q5_0,
            n: 31,
            block: 32
        })
    );
    let err = dequantize(DType::Q4_0, &[0; 17], 32).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ByteLength {
                expected: 18,
                got: 17,
                ..
            }
        ),
        "{err}"
    );
    let err = dequantize_into(DType::F16, &[0; 6], &mut [0.0; 2]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ByteLength {
                expected: 4,
                got: 6,
                ..
            }
        ),
        "{err}"
    );
    let err = dequantize_f32(DType::Q8_1, &[0; 36], 64).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ByteLength {
                expected: 72,
                got: 36,
                ..
            }
        ),
        "{err}"
    );
    let err = quantize_into(DType::Q4_1, &[0.0; 32], &mut [0; 21]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ByteLength {
                expected: 20,
                got: 21,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(dequantize(DType::Q4_0, &[], 0).unwrap(), Vec::<f64>::new());
}

// ---------------------------------------------------------------------------------------------
// Decoding known blocks.

#[test]
fn decode_q4_0() {
    // d = 0.5; every qs byte 0x80 (low nibble 0, high 8) except qs[0] = 0x0F, qs[3] = 0xA2.
    let mut qs = [0x80u8; 16];
    qs[0] = 0x0F;
    qs[3] = 0xA2;
    let b = block(&[&h(0x3800), &qs]);
    let x = dequantize(DType::Q4_0, &b, 32).unwrap();
    assert_eq!(x[0], 3.5); // 0.5·(15 − 8)
    assert_eq!(x[16], -4.0); // 0.5·(0 − 8)
    assert_eq!(x[3], -3.0); // 0.5·(2 − 8)
    assert_eq!(x[19], 1.0); // 0.5·(10 − 8)
    assert_eq!(x[1], -4.0);
    assert_eq!(x[17], 0.0);
    assert_eq!(x[15], -4.0);
    assert_eq!(x[31], 0.0);
}

#[test]
fn decode_q4_1() {
    // d = 0.25, m = −1.5 (0xBE00); qs[0] = 0xF1, qs[15] = 0x7E, others 0.
    let mut qs = [0u8; 16];
    qs[0] = 0xF1;
    qs[15] = 0x7E;
    let b = block(&[&h(0x3400), &h(0xBE00), &qs]);
    let x = dequantize(DType::Q4_1, &b, 32).unwrap();
    assert_eq!(x[0], -1.25); // 0.25·1 − 1.5
    assert_eq!(x[16], 2.25); // 0.25·15 − 1.5
    assert_eq!(x[15], 2.0); // 0.25·14 − 1.5
    assert_eq!(x[31], 0.25); // 0.25·7 − 1.5
    assert_eq!(x[1], -1.5);
    assert_eq!(x[17], -1.5);
}

#[test]
fn decode_q5_0() {
    // d = 2; qh bits 5, 7, 21 and 31 set: h = 0x802000A0, stored little-endian at offset 2.
    let mut qs = [0u8; 16];
    qs[5] = 0x3C;
    qs[7] = 0x11;
    qs[15] = 0x0F;
    let b = block(&[&h(0x4000), &[0xA0, 0x00, 0x20, 0x80], &qs]);
    assert_eq!(b.len(), 22);
    let x = dequantize(DType::Q5_0, &b, 32).unwrap();
    assert_eq!(x[5], 24.0); // 2·((0xC | 16) − 16)
    assert_eq!(x[21], 6.0); // 2·((0x3 | 16) − 16)
    assert_eq!(x[7], 2.0); // 2·((1 | 16) − 16): bit 7 set
    assert_eq!(x[23], -30.0); // 2·(1 − 16): bit 23 clear
    assert_eq!(x[15], -2.0); // 2·(15 − 16): bit 15 clear
    assert_eq!(x[31], 0.0); // 2·((0 | 16) − 16): bit 31 set
    assert_eq!(x[0], -32.0);
    assert_eq!(x[16], -32.0);
}

#[test]
fn decode_q5_1() {
    // d = 1, m = 0.5; qh = 0x40000001 (bits 0 and 30) at offset 4; qs at offset 8.
    let mut qs = [0u8; 16];
    qs[0] = 0x21;
    qs[14] = 0x5A;
    let b = block(&[&h(0x3C00), &h(0x3800), &[0x01, 0x00, 0x00, 0x40], &qs]);
    assert_eq!(b.len(), 24);
    let x = dequantize(DType::Q5_1, &b, 32).unwrap();
    assert_eq!(x[0], 17.5); // (1 | 16) + 0.5
    assert_eq!(x[16], 2.5); // 2 + 0.5
    assert_eq!(x[14], 10.5); // 0xA + 0.5
    assert_eq!(x[30], 21.5); // (5 | 16) + 0.5
    assert_eq!(x[1], 0.5);
    assert_eq!(x[31], 0.5);
}

#[test]
fn decode_q8_0() {
    // d = −0.125 (0xB000); qs[0] = −1, qs[7] = −128, qs[8] = 127, qs[i] = i elsewhere.
    let mut qs: Vec<u8> = (0..32).collect();
    qs[0] = 0xFF;
    qs[7] = 0x80;
    qs[8] = 0x7F;
    let b = block(&[&h(0xB000), &qs]);
    let x = dequantize(DType::Q8_0, &b, 32).unwrap();
    assert_eq!(x[0], 0.125);
    assert_eq!(x[7], 16.0);
    assert_eq!(x[8], -15.875);
    assert_eq!(x[9], -1.125);
    assert_eq!(x[31], -3.875);
}

#[test]
fn decode_q8_1() {
    // d = 1.5 (0x3E00), s = 0x1234 (ignored); qs at offset 4: qs[0] = 2, qs[31] = −3.
    let mut qs = [0u8; 32];
    qs[0] = 2;
    qs[31] = 0xFD;
    let b = block(&[&h(0x3E00), &h(0x1234), &qs]);
    let x = dequantize(DType::Q8_1, &b, 32).unwrap();
    assert_eq!(x[0], 3.0);
    assert_eq!(x[31], -4.5);
    assert_eq!(x[1], 0.0);
}

#[test]
fn decode_scalars() {
    let b = block(&[&h(0x3F80), &h(0xC000), &h(0x0001), &h(0x7F80)]);
    let x = dequantize(DType::Bf16, &b, 4).unwrap();
    assert_eq!(x, [1.0, -2.0, 2f64.powi(-133), f64::INFINITY]);

    let b = block(&[
        &h(0x0001),
        &h(0x3C00),
        &h(0xFBFF),
        &h(0x7C00),
        &h(0x3555),
        &h(0x8000),
    ]);
    let x = dequantize(DType::F16, &b, 6).unwrap();
    assert_eq!(
        x[..5],
        [
            2f64.powi(-24),
            1.0,
            -65504.0,
            f64::INFINITY,
            1365.0 / 4096.0
        ]
    );
    assert!(x[5] == 0.0 && x[5].is_sign_negative());
    let x = dequantize(DType::F16, &h(0x7E00), 1).unwrap();
    assert!(x[0].is_nan());

    let b = block(&[&0.1f32.to_le_bytes(), &(-3.5f32).to_le_bytes()]);
    let x = dequantize(DType::F32, &b, 2).unwrap();
    assert_eq!(x, [13421773.0 * 2f64.powi(-27), -3.5]); // 0.1f32 = 13421773·2^-27

    let b = block(&[
        &(-5i32).to_le_bytes(),
        &i32::MIN.to_le_bytes(),
        &i32::MAX.to_le_bytes(),
    ]);
    let x = dequantize(DType::I32, &b, 3).unwrap();
    assert_eq!(x, [-5.0, -2147483648.0, 2147483647.0]);
    // The f32 path rounds i32 to nearest.
    let y = dequantize_f32(DType::I32, &b, 3).unwrap();
    assert_eq!(y, [-5.0, -2147483648.0, 2147483648.0]);
}

#[test]
fn multi_block_rows_decode_each_block() {
    let mut rng = Lcg(7);
    for &t in DType::ALL {
        let n = 3 * t.block_len();
        let bytes = rng.blocks(t, 3);
        let whole = dequantize(t, &bytes, n).unwrap();
        for (k, chunk) in bytes.chunks_exact(t.block_bytes()).enumerate() {
            let part = dequantize(t, chunk, t.block_len()).unwrap();
            let want = &whole[k * t.block_len()..(k + 1) * t.block_len()];
            assert!(
                part.iter()
                    .zip(want)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{t}"
            );
        }
    }
}

#[test]
fn struct_bytes_round_trip() {
    fn check<B: Block>(rng: &mut Lcg) {
        for _ in 0..50 {
            let bytes = rng.blocks(B::DTYPE, 1);
            let blk = B::from_bytes(&bytes);
            let mut again = vec![0; B::BYTES];
            blk.to_bytes(&mut again);
            assert_eq!(again, bytes, "{}", B::DTYPE);
        }
    }
    let mut rng = Lcg(1);
    check::<BlockQ4_0>(&mut rng);
    check::<BlockQ4_1>(&mut rng);
    check::<BlockQ5_0>(&mut rng);
    check::<BlockQ5_1>(&mut rng);
    check::<BlockQ8_0>(&mut rng);
    check::<BlockQ8_1>(&mut rng);
    let b = BlockQ5_0::from_bytes(&block(&[&h(0x4000), &[1, 2, 3, 4], &[9; 16]]));
    assert_eq!(b.d.to_bits(), 0x4000);
    assert_eq!(b.qh, [1, 2, 3, 4]);
    assert_eq!(b.qs, [9; 16]);
}

// ---------------------------------------------------------------------------------------------
// ggml's f32 dequantization.

#[test]
fn dequantize_f32_matches_exact_where_ggml_is_exact() {
    let mut rng = Lcg(3);
    for t in [
        DType::Q4_0,
        DType::Q5_0,
        DType::Q8_0,
        DType::Q8_1,
        DType::F16,
        DType::Bf16,
    ] {
        let bytes = rng.blocks(t, 40 / t.block_len().min(40) + 2);
        let n = bytes.len() / t.block_bytes() * t.block_len();
        let exact = dequantize(t, &bytes, n).unwrap();
        let ggml = dequantize_f32(t, &bytes, n).unwrap();
        for (e, g) in exact.iter().zip(&ggml) {
            if e.is_nan() {
                assert!(g.is_nan(), "{t}");
                continue;
            }
            assert_eq!(*e as f32, *g, "{t}");
            assert_eq!(f64::from(*g), *e, "{t}: not exact in f32");
        }
    }
    // For the affine formats the f32 value is the exact one rounded once (the product is exact).
    for t in [DType::Q4_1, DType::Q5_1] {
        let bytes = rng.blocks(t, 20);
        let exact = dequantize(t, &bytes, 640).unwrap();
        let ggml = dequantize_f32(t, &bytes, 640).unwrap();
        for (e, g) in exact.iter().zip(&ggml) {
            assert_eq!(*e as f32, *g, "{t}");
        }
    }
}

#[test]
fn dequantize_f32_q4_1_rounds_where_exact_does_not() {
    // d = 1, m = 2^-24 (f16 0x0001); qs[0] = 0x0F: x[0] = 15 + 2^-24, x[16] = 2^-24.
    // In f32 the ulp of 15 is 2^-20, so ggml's 15.0f + 2^-24 rounds to 15.
    let mut qs = [0u8; 16];
    qs[0] = 0x0F;
    let b = block(&[&h(0x3C00), &h(0x0001), &qs]);
    let exact = dequantize(DType::Q4_1, &b, 32).unwrap();
    let ggml = dequantize_f32(DType::Q4_1, &b, 32).unwrap();
    assert_eq!(exact[0], 15.0 + 2f64.powi(-24));
    assert_eq!(ggml[0], 15.0);
    assert_eq!(exact[16], 2f64.powi(-24));
    assert_eq!(f64::from(ggml[16]), 2f64.powi(-24));
    // Same for q5_1 with bit 4 set: (15 | 16) + 2^-24.
    let b = block(&[&h(0x3C00), &h(0x0001), &[1, 0, 0, 0], &qs]);
    assert_eq!(
        dequantize(DType::Q5_1, &b, 32).unwrap()[0],
        31.0 + 2f64.powi(-24)
    );
    assert_eq!(dequantize_f32(DType::Q5_1, &b, 32).unwrap()[0], 31.0);
}

// ---------------------------------------------------------------------------------------------
// Reference quantizers against hand-derived bytes.

#[test]
fn quantize_q4_0_negative_max() {
    // x[j] = j − 8, x[16 + j] = 7 − j: the first value of largest magnitude is −8, so
    // d = −8/−8 = 1 and q = trunc(x + 8.5): q[j] = j, q[16 + j] = 15 − j.
    let src: Vec<f32> = (0..16)
        .map(|j| j as f32 - 8.0)
        .chain((0..16).map(|j| 7.0 - j as f32))
        .collect();
    let got = quantize(DType::Q4_0, &src).unwrap();
    let qs: Vec<u8> = (0..16u8).map(|j| j | ((15 - j) << 4)).collect();
    assert_eq!(got, block(&[&h(0x3C00), &qs]));
    assert_eq!(
        dequantize(DType::Q4_0, &got, 32).unwrap(),
        src.iter().map(|&v| f64::from(v)).collect::<Vec<_>>()
    );
}

#[test]
fn quantize_q4_0_positive_max_clamps() {
    // [8, −8, 0, …]: vmax = 8 (the first of equal magnitude), d = −1, id = −1.
    // q[0] = trunc(−8 + 8.5) = 0; q[1] = MIN(15, trunc(8 + 8.5) = 16) = 15; 0 → trunc(8.5) = 8.
    let mut src = [0.0f32; 32];
    src[0] = 8.0;
    src[1] = -8.0;
    let got = quantize(DType::Q4_0, &src).unwrap();
    let mut qs = [0x88u8; 16];
    qs[0] = 0x80;
    qs[1] = 0x8F;
    assert_eq!(got, block(&[&h(0xBC00), &qs]));
}

#[test]
fn quantize_q4_0_rounding_boundaries() {
    // vmax = −4: d = 0.5, id = 2; q = trunc(2x + 8.5).
    let mut src = [0.0f32; 32];
    src[..6].copy_from_slice(&[-4.0, 0.24, 0.25, -0.25, -0.26, 3.74]);
    let got = quantize(DType::Q4_0, &src).unwrap();
    let mut qs = [0x88u8; 16];
    qs[..6].copy_from_slice(&[0x80, 0x88, 0x89, 0x88, 0x87, 0x8F]);
    assert_eq!(got, block(&[&h(0x3800), &qs]));
}

#[test]
fn quantize_q4_1_known() {
    // x[j] = j − 1 (min −1 … 14 = max), x[16 + j] = 13.5 − j except x[31] = −1: d = 15/15 = 1,
    // m = −1, q = trunc(x + 1 + 0.5): q[j] = j, q[16 + j] = 15 − j.
    let src: Vec<f32> = (0..16)
        .map(|j| j as f32 - 1.0)
        .chain((0..16).map(|j| (13.5 - j as f32).max(-1.0)))
        .collect();
    let got = quantize(DType::Q4_1, &src).unwrap();
    let qs: Vec<u8> = (0..16u8).map(|j| j | ((15 - j) << 4)).collect();
    assert_eq!(got, block(&[&h(0x3C00), &h(0xBC00), &qs]));
}

#[test]
fn quantize_q5_0_known() {
    // x[j] = j − 16, x[16 + j] = j: vmax = −16, d = 1; q[j] = j, q[16 + j] = 16 + j, so the
    // high bits are exactly bits 16..31 of qh.
    let src: Vec<f32> = (0..16)
        .map(|j| j as f32 - 16.0)
        .chain((0..16).map(|j| j as f32))
        .collect();
    let got = quantize(DType::Q5_0, &src).unwrap();
    let qs: Vec<u8> = (0..16u8).map(|j| j | (j << 4)).collect();
    assert_eq!(got, block(&[&h(0x3C00), &[0x00, 0x00, 0xFF, 0xFF], &qs]));
    assert_eq!(
        dequantize(DType::Q5_0, &got, 32).unwrap(),
        src.iter().map(|&v| f64::from(v)).collect::<Vec<_>>()
    );
}

#[test]
fn quantize_q5_1_known() {
    // x[i] = 31 − i: min 0, max 31, d = 1, m = 0; q[j] = 31 − j (bit 4 set, low 15 − j),
    // q[16 + j] = 15 − j (bit 4 clear).
    let src: Vec<f32> = (0..32).map(|i| 31.0 - i as f32).collect();
    let got = quantize(DType::Q5_1, &src).unwrap();
    let qs: Vec<u8> = (0..16u8).map(|j| (15 - j) * 0x11).collect();
    assert_eq!(
        got,
        block(&[&h(0x3C00), &h(0x0000), &[0xFF, 0xFF, 0x00, 0x00], &qs])
    );
}

#[test]
fn quantize_q8_known() {
    // amax = 127: d = 1; q = roundf(x), halves away from zero.
    let mut src = [0.0f32; 32];
    src[..6].copy_from_slice(&[-127.0, 126.5, -0.5, 0.49, 2.5, -2.5]);
    let mut qs = [0u8; 32];
    qs[..6].copy_from_slice(&[0x81, 0x7F, 0xFF, 0x00, 0x03, 0xFD]);
    assert_eq!(
        quantize(DType::Q8_0, &src).unwrap(),
        block(&[&h(0x3C00), &qs])
    );
    // q8_1: s = d·Σq = 1·(−127 + 127 − 1 + 0 + 3 − 3) = −1.
    assert_eq!(
        quantize(DType::Q8_1, &src).unwrap(),
        block(&[&h(0x3C00), &h(0xBC00), &qs])
    );

    // amax = 1: d = 1/127 → f16 2^-7·(1 + 8/1024) = 0x2008; q = round(127·x).
    let mut src = [0.0f32; 32];
    src[..3].copy_from_slice(&[1.0, -0.5, 0.25]);
    let got = quantize(DType::Q8_0, &src).unwrap();
    assert_eq!(&got[..2], &h(0x2008));
    assert_eq!(&got[2..5], &[127, (-64i8) as u8, 32]); // 63.5 → 64, 31.75 → 32
}

#[test]
fn quantize_zero_and_constant_rows() {
    let zero = [0.0f32; 32];
    // q4_0: vmax = 0, d = 0/−8 = −0.0 (f16 0x8000), id = 0, q = trunc(8.5) = 8.
    assert_eq!(
        quantize(DType::Q4_0, &zero).unwrap(),
        block(&[&h(0x8000), &[0x88; 16]])
    );
    // q4_1: d = 0, m = 0, q = trunc(0.5) = 0.
    assert_eq!(quantize(DType::Q4_1, &zero).unwrap(), vec![0; 20]);
    // q5_0: d = −0.0, q = trunc(16.5) = 16: low nibbles 0, every qh bit set.
    assert_eq!(
        quantize(DType::Q5_0, &zero).unwrap(),
        block(&[&h(0x8000), &[0xFF; 4], &[0; 16]])
    );
    assert_eq!(quantize(DType::Q5_1, &zero).unwrap(), vec![0; 24]);
    assert_eq!(quantize(DType::Q8_0, &zero).unwrap(), vec![0; 34]);
    assert_eq!(quantize(DType::Q8_1, &zero).unwrap(), vec![0; 36]);
    // A constant row: min = max = 3, d = 0, id = 0, m = 3 (0x4200), every q = 0.
    let three = [3.0f32; 32];
    assert_eq!(
        quantize(DType::Q4_1, &three).unwrap(),
        block(&[&h(0), &h(0x4200), &[0; 16]])
    );
    assert_eq!(
        quantize(DType::Q5_1, &three).unwrap(),
        block(&[&h(0), &h(0x4200), &[0; 20]])
    );
}

#[test]
fn quantize_non_finite_as_ggml_on_x86_64() {
    // A NaN never becomes vmax; NaN·id → (int8_t) gives 0 (low byte of 0x80000000).
    let mut src = [0.0f32; 32];
    src[0] = -2.0;
    src[1] = f32::NAN;
    // vmax = −2: d = 0.25 (0x3400), id = 4; q[0] = trunc(−8 + 8.5) = 0, q[1] = 0, others 8.
    let mut qs = [0x88u8; 16];
    qs[0] = 0x80;
    qs[1] = 0x80;
    assert_eq!(
        quantize(DType::Q4_0, &src).unwrap(),
        block(&[&h(0x3400), &qs])
    );
    // A subnormal vmax makes 1/d overflow to Inf: x·Inf is ±Inf or NaN, all of which convert
    // to 0 through (int8_t) (a saturating conversion would give 0x80 bytes); d = +1.25e-41
    // underflows to +0 in f16.
    let mut src = [0.0f32; 32];
    src[0] = -1e-40;
    assert_eq!(quantize(DType::Q4_0, &src).unwrap(), vec![0; 18]);
}

#[test]
fn quantize_multi_block_rows() {
    let mut rng = Lcg(11);
    for t in [
        DType::Q4_0,
        DType::Q4_1,
        DType::Q5_0,
        DType::Q5_1,
        DType::Q8_0,
        DType::Q8_1,
    ] {
        let src: Vec<f32> = (0..96).map(|_| rng.unit() * 3.0).collect();
        let whole = quantize(t, &src).unwrap();
        let parts: Vec<u8> = src
            .chunks(32)
            .flat_map(|c| quantize(t, c).unwrap())
            .collect();
        assert_eq!(whole, parts, "{t}");
    }
}

#[test]
fn quantize_round_trip_within_half_a_step() {
    let mut rng = Lcg(5);
    // Largest quant magnitude the decoded d multiplies, per format.
    for (t, qmax) in [
        (DType::Q4_0, 8.0),
        (DType::Q4_1, 15.0),
        (DType::Q5_0, 16.0),
        (DType::Q5_1, 31.0),
        (DType::Q8_0, 127.0),
        (DType::Q8_1, 127.0),
    ] {
        for round in 0..200 {
            let scale = [1.0f32, 0.01, 37.0, 1e-3][round % 4];
            let src: Vec<f32> = (0..32).map(|_| rng.unit() * scale).collect();
            let bytes = quantize(t, &src).unwrap();
            let got = dequantize(t, &bytes, 32).unwrap();
            let d = float::f16_to_f64(u16::from_le_bytes([bytes[0], bytes[1]])).abs();
            let m = match t {
                DType::Q4_1 | DType::Q5_1 => {
                    float::f16_to_f64(u16::from_le_bytes([bytes[2], bytes[3]]))
                }
                _ => 0.0,
            };
            for (&x, &y) in src.iter().zip(&got) {
                let x = f64::from(x);
                // Half a step, plus the f16 rounding of d (relative 2^-11, or 2^-25 absolute
                // when subnormal, times |q|) and of m.
                let mut bound = 0.5 * d
                    + qmax * (d * 2f64.powi(-10) + 2f64.powi(-24))
                    + m.abs() * 2f64.powi(-10)
                    + 2f64.powi(-24);
                // q4_0/q5_0 reach −8d … 7d (−16d … 15d): a value of the sign opposite vmax
                // beyond 7.5 steps is clamped to the top level.
                if matches!(t, DType::Q4_0 | DType::Q5_0) {
                    let top = (qmax - 1.0) * d;
                    if y == top.copysign(y) && x.abs() > top {
                        bound += x.abs() - top;
                    }
                }
                assert!((x - y).abs() <= bound, "{t}: {x} → {y}, d = {d}, m = {m}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Scalar conversions.

#[test]
fn quantize_f16_rounds_to_nearest_even() {
    let src = [
        1.0,
        1.0 + 2f32.powi(-11),       // tie → even (1.0)
        1.0 + 3.0 * 2f32.powi(-11), // tie → even (1 + 2^-9)
        65504.0,
        65519.0,              // below the midpoint to 2^16: 65504
        65520.0,              // the midpoint: rounds to Inf
        2f32.powi(-25),       // tie between 0 and 2^-24: 0
        3.0 * 2f32.powi(-25), // tie between 1 and 2 ulps: 2
        -0.0,
        f32::NEG_INFINITY,
    ];
    let got = quantize(DType::F16, &src).unwrap();
    let bits: Vec<u16> = got
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(
        bits,
        [0x3C00, 0x3C00, 0x3C02, 0x7BFF, 0x7BFF, 0x7C00, 0x0000, 0x0002, 0x8000, 0xFC00]
    );
    let nan = quantize(DType::F16, &[f32::NAN]).unwrap();
    assert!(half::f16::from_le_bytes([nan[0], nan[1]]).is_nan());
}

#[test]
fn quantize_bf16_as_ggml_cpu() {
    let src = [
        1.0,
        f32::from_bits(0x3F80_8000), // tie, even lsb: down
        f32::from_bits(0x3F81_8000), // tie, odd lsb: up
        f32::from_bits(0x3F80_8001), // above the tie: up
        f32::from_bits(0x3F80_7FFF), // below the tie: down
        f32::from_bits(0x7F7F_FFFF), // f32::MAX rounds to Inf
        f32::INFINITY,
        f32::from_bits(0x7F80_0001), // signalling NaN, payload only in the low half: quieted
        f32::from_bits(0xFF81_2345), // negative NaN keeps sign and top payload
        -2.0,
    ];
    let got = quantize(DType::Bf16, &src).unwrap();
    let bits: Vec<u16> = got
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(
        bits,
        [0x3F80, 0x3F80, 0x3F82, 0x3F81, 0x3F80, 0x7F80, 0x7F80, 0x7FC0, 0xFFC1, 0xC000]
    );
    // The shader conversion has no NaN case: 0x7F800001 rounds to Inf's bits.
    assert_eq!(
        float::f32_to_bf16_shader(f32::from_bits(0x7F80_0001)),
        0x7F80
    );
    assert_eq!(
        float::f32_to_bf16_shader(f32::from_bits(0x3F81_8000)),
        0x3F82
    );
}

#[test]
fn quantize_f32_and_i32() {
    let src = [0.1f32, -3.5, f32::MIN_POSITIVE];
    let got = quantize(DType::F32, &src).unwrap();
    assert_eq!(
        got,
        src.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>()
    );
    let got = quantize(DType::I32, &[3.7, -3.7, f32::NAN, 1e10, -1e10]).unwrap();
    let vals: Vec<i32> = got
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(vals, [3, -3, 0, i32::MAX, i32::MIN]);
}

#[test]
fn c_conversions() {
    use float::{c_f32_to_i32, c_f32_to_i8};
    assert_eq!(c_f32_to_i32(-2.9), -2);
    assert_eq!(c_f32_to_i32(2_147_483_520.0), 2_147_483_520);
    assert_eq!(c_f32_to_i32(2_147_483_648.0), i32::MIN);
    assert_eq!(c_f32_to_i32(-2_147_483_648.0), i32::MIN);
    assert_eq!(c_f32_to_i32(f32::NAN), i32::MIN);
    assert_eq!(c_f32_to_i8(16.9), 16);
    assert_eq!(c_f32_to_i8(200.0), -56); // low byte 0xC8
    assert_eq!(c_f32_to_i8(f32::INFINITY), 0);
}

#[test]
fn magnitude_of_affine_blocks_counts_scale_and_min_apart() {
    // q4_1 with d = 1, m = -8 and every nibble 8: each element is 1·8 − 8 = 0 exactly, but a
    // kernel summing d·q and m separately carries the rounding of both 8s.
    let mut bytes = vec![0u8; 20];
    bytes[0..2].copy_from_slice(&half::f16::from_f32(1.0).to_le_bytes());
    bytes[2..4].copy_from_slice(&half::f16::from_f32(-8.0).to_le_bytes());
    bytes[4..].fill(0x88);
    assert_eq!(dequantize(DType::Q4_1, &bytes, 32).unwrap(), vec![0.0; 32]);
    let mut mag = vec![0.0; 32];
    magnitude_into(DType::Q4_1, &bytes, &mut mag).unwrap();
    assert_eq!(mag, vec![16.0; 32]);
    // Scaled formats: plain |x|.
    let q8 = quantize(DType::Q8_0, &[-1.0; 32]).unwrap();
    magnitude_into(DType::Q8_0, &q8, &mut mag).unwrap();
    assert!(mag.iter().all(|&m| m > 0.99 && m < 1.01));
}
