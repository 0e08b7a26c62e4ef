//! Known-answer tests for the K-quants and iq4 formats: blocks written byte by byte and expected
//! values worked out by hand from the formulas of sections 2.3–2.5 (each expectation shows its
//! arithmetic), plus layout and consistency checks.

use super::*;

/// Little-endian bytes of an f16 given by its bits.
fn h(bits: u16) -> [u8; 2] {
    bits.to_le_bytes()
}

/// A zeroed block of `dtype` with `f16s` written at their offsets and `bytes` set.
fn block(dtype: DType, f16s: &[(usize, u16)], bytes: &[(usize, u8)]) -> Vec<u8> {
    let mut b = vec![0u8; dtype.block_bytes()];
    for &(at, bits) in f16s {
        b[at..at + 2].copy_from_slice(&h(bits));
    }
    for &(at, v) in bytes {
        b[at] = v;
    }
    b
}

/// Asserts element values by index.
#[track_caller]
fn expect(x: &[f64], want: &[(usize, f64)]) {
    for &(e, v) in want {
        assert_eq!(x[e], v, "element {e}");
    }
}

const HALF: u16 = 0x3800; // 0.5
const QUARTER: u16 = 0x3400; // 0.25
const ONE: u16 = 0x3C00;

// ---------------------------------------------------------------------------------------------
// Layout.

#[test]
fn sizes_offsets_and_names() {
    for (t, len, bytes, name, f16s) in [
        (DType::Q2_K, 256, 84, "q2_K", &[80usize, 82][..]),
        (DType::Q3_K, 256, 110, "q3_K", &[108][..]),
        (DType::Q4_K, 256, 144, "q4_K", &[0, 2][..]),
        (DType::Q5_K, 256, 176, "q5_K", &[0, 2][..]),
        (DType::Q6_K, 256, 210, "q6_K", &[208][..]),
        (DType::Iq4Nl, 32, 18, "iq4_nl", &[0][..]),
        (DType::Iq4Xs, 256, 136, "iq4_xs", &[0][..]),
    ] {
        assert_eq!(t.block_len(), len, "{t}");
        assert_eq!(t.block_bytes(), bytes, "{t}");
        assert_eq!(t.name(), name);
        assert_eq!(t.f16_fields(), f16s, "{t}");
        assert!(t.is_quantized() && !t.has_quantizer(), "{t}");
        assert_eq!(DType::from_name(name), Some(t));
        assert_eq!(DType::from_name(&name.to_lowercase()), Some(t));
        // serde uses ggml's spelling exactly (reproducer files): "q2_K", not "q2_k".
        use serde::de::value::{Error as DeError, StrDeserializer};
        use serde::Deserialize;
        let de = |s: &str| DType::deserialize(StrDeserializer::<DeError>::new(s));
        assert_eq!(de(name).unwrap(), t);
        if name != name.to_lowercase() {
            assert!(de(&name.to_lowercase()).is_err(), "{name}");
        }
    }
    assert_eq!(QK_K, 256);
}

#[test]
fn block_structs_match_dtype() {
    fn check<B: Block>() {
        assert_eq!(B::BYTES, B::DTYPE.block_bytes(), "{}", B::DTYPE);
        assert_eq!(B::LEN, B::DTYPE.block_len(), "{}", B::DTYPE);
    }
    check::<BlockQ2_K>();
    check::<BlockQ3_K>();
    check::<BlockQ4_K>();
    check::<BlockQ5_K>();
    check::<BlockQ6_K>();
    check::<BlockIq4Nl>();
    check::<BlockIq4Xs>();
}

#[test]
fn fields_are_read_from_their_offsets() {
    // Distinct byte values everywhere: each field must hold exactly its slice of the bytes.
    let bytes = |n: usize| (0..n).map(|i| (i * 7 + 3) as u8).collect::<Vec<u8>>();
    let b = bytes(84);
    let q2 = BlockQ2_K::from_bytes(&b);
    assert_eq!(q2.scales[..], b[..16]);
    assert_eq!(q2.qs[..], b[16..80]);
    assert_eq!(q2.d.to_le_bytes(), [b[80], b[81]]);
    assert_eq!(q2.dmin.to_le_bytes(), [b[82], b[83]]);
    let b = bytes(110);
    let q3 = BlockQ3_K::from_bytes(&b);
    assert_eq!(
        (
            q3.hmask[..].to_vec(),
            q3.qs[..].to_vec(),
            q3.scales.to_vec()
        ),
        (b[..32].to_vec(), b[32..96].to_vec(), b[96..108].to_vec())
    );
    assert_eq!(q3.d.to_le_bytes(), [b[108], b[109]]);
    let b = bytes(144);
    let q4 = BlockQ4_K::from_bytes(&b);
    assert_eq!(q4.dmin.to_le_bytes(), [b[2], b[3]]);
    assert_eq!(q4.scales[..], b[4..16]);
    assert_eq!(q4.qs[..], b[16..]);
    let b = bytes(176);
    let q5 = BlockQ5_K::from_bytes(&b);
    assert_eq!(q5.scales[..], b[4..16]);
    assert_eq!(q5.qh[..], b[16..48]);
    assert_eq!(q5.qs[..], b[48..]);
    let b = bytes(210);
    let q6 = BlockQ6_K::from_bytes(&b);
    assert_eq!(q6.ql[..], b[..128]);
    assert_eq!(q6.qh[..], b[128..192]);
    assert_eq!(q6.scales[5], b[197] as i8);
    assert_eq!(q6.d.to_le_bytes(), [b[208], b[209]]);
    let b = bytes(136);
    let xs = BlockIq4Xs::from_bytes(&b);
    assert_eq!(xs.scales_h, u16::from_le_bytes([b[2], b[3]]));
    assert_eq!(xs.scales_l[..], b[4..8]);
    assert_eq!(xs.qs[..], b[8..]);
}

#[test]
fn no_quantizer_is_an_error_not_a_guess() {
    for t in [
        DType::Q2_K,
        DType::Q3_K,
        DType::Q4_K,
        DType::Q5_K,
        DType::Q6_K,
        DType::Iq4Nl,
        DType::Iq4Xs,
        DType::Mxfp4,
    ] {
        let src = vec![0.5f32; t.block_len()];
        assert_eq!(quantize(t, &src), Err(Error::NoQuantizer { dtype: t }));
        let err = crate::tensor::Tensor::from_f32(t, [t.block_len(), 1, 1, 1], &src).unwrap_err();
        assert!(err.to_string().contains("raw blocks"), "{err}");
    }
    // The legacy formats keep theirs.
    assert!(DType::ALL
        .iter()
        .filter(|t| t.block_len() == 32 && !matches!(t, DType::Iq4Nl | DType::Mxfp4))
        .all(|t| t.has_quantizer()));
}

#[test]
#[should_panic(expected = "no reference quantizer")]
fn block_quantize_without_a_quantizer_panics() {
    let _ = <BlockQ4_K as Block>::quantize(&[0.0; 256]);
}

// ---------------------------------------------------------------------------------------------
// q2_K.

#[test]
fn decode_q2_k() {
    // d = 0.5, dmin = 0.25. scales[grp]: low nibble sc, high nibble m.
    //   grp 0: 0x21 (1, 2)   grp 1: 0x3F (15, 3)   grp 2: 0x12 (2, 1)   grp 4: 0x04 (4, 0)
    //   grp 5: 0x70 (0, 7)   grp 6: 0xF1 (1, 15)   grp 10: 0x3B (11, 3) grp 15: 0xA5 (5, 10)
    // qs[0] = 0xE4: byte 0 of half 0 gives q = 0, 1, 2, 3 to elements 0, 32, 64, 96.
    // qs[16] = 0x03: element 16 (l = 16, g = 0) has q = 3; element 80 (g = 2) q = 0.
    // qs[40] = 0x0C: half 1, l = 8, g = 1: element 168 has q = 3 (grp 8 + 2 = 10).
    // qs[63] = 0xC0: half 1, l = 31, g = 3: element 255 has q = 3 (grp 15).
    let b = block(
        DType::Q2_K,
        &[(80, HALF), (82, QUARTER)],
        &[
            (0, 0x21),
            (1, 0x3F),
            (2, 0x12),
            (4, 0x04),
            (5, 0x70),
            (6, 0xF1),
            (10, 0x3B),
            (15, 0xA5),
            (16, 0xE4),
            (16 + 16, 0x03),
            (16 + 40, 0x0C),
            (16 + 63, 0xC0),
        ],
    );
    let x = dequantize(DType::Q2_K, &b, 256).unwrap();
    expect(
        &x,
        &[
            (0, -0.5),    // 0.5·1·0 − 0.25·2
            (1, -0.5),    // q = 0 too
            (16, 21.75),  // 0.5·15·3 − 0.25·3
            (32, 0.75),   // 0.5·2·1 − 0.25·1
            (64, 4.0),    // 0.5·4·2 − 0
            (80, -1.75),  // 0.5·0·0 − 0.25·7
            (96, -2.25),  // 0.5·1·3 − 0.25·15
            (168, 15.75), // 0.5·11·3 − 0.25·3
            (200, 0.0),   // grp 12: scales 0, q = (0x0C >> 4) & 3 = 0
            (255, 5.0),   // 0.5·5·3 − 0.25·10
        ],
    );
    let mut mag = vec![0.0; 256];
    magnitude_into(DType::Q2_K, &b, &mut mag).unwrap();
    expect(&mag, &[(16, 23.25), (96, 5.25), (0, 0.5), (200, 0.0)]);
    let f = dequantize_f32(DType::Q2_K, &b, 256).unwrap();
    assert!(f.iter().zip(&x).all(|(f, x)| f64::from(*f) == *x));
}

// ---------------------------------------------------------------------------------------------
// q3_K.

/// Scale bytes giving s = [3, 0, 0, 48, 31, 0, 0, 49, 42, 0, 0, 48, 53, 0, 0, 50]:
/// scales[0] = 0xA3 (s[0] low 3, s[8] low 10), scales[4] = 0x5F (s[4] low 15, s[12] low 5),
/// scales[7] = 0x21 (s[7] low 1, s[15] low 2), scales[8] = 0xE4 (high bits 0, 1, 2, 3 of s[0],
/// s[4], s[8], s[12]), scales[11] = 0xFF (high bits 3 of s[3], s[7], s[11], s[15]).
const Q3_SCALES: [(usize, u8); 5] = [
    (96, 0xA3),
    (100, 0x5F),
    (103, 0x21),
    (104, 0xE4),
    (107, 0xFF),
];

#[test]
fn q3_k_scale_unpacking() {
    let b = BlockQ3_K::from_bytes(&block(DType::Q3_K, &[], &Q3_SCALES));
    let s: Vec<u8> = (0..16).map(|k| b.scale(k)).collect();
    assert_eq!(s, [3, 0, 0, 48, 31, 0, 0, 49, 42, 0, 0, 48, 53, 0, 0, 50]);
    // Each high-bit pair alone: scales[8 + j] = 0b11 << 2i sets bits 4–5 of s_{4i + j} only.
    for k in 0..16 {
        let b = block(DType::Q3_K, &[], &[(96 + 8 + k % 4, 3 << (2 * (k / 4)))]);
        let b = BlockQ3_K::from_bytes(&b);
        let s: Vec<u8> = (0..16).map(|i| b.scale(i)).collect();
        let want: Vec<u8> = (0..16).map(|i| if i == k { 48 } else { 0 }).collect();
        assert_eq!(s, want, "group {k}");
    }
}

#[test]
fn decode_q3_k() {
    // d = 0.5; s − 32 per group: [−29, −32, −32, 16, −1, −32, −32, 17, 10, −32, −32, 16, 21,
    // −32, −32, 18]. Element value: 0.5·(s − 32)·(q − (h ? 0 : 4)).
    let mut bytes = Q3_SCALES.to_vec();
    bytes.extend([
        (0, 0x01),       // hmask[0] bit 0: element 0 has h = 1 (bits 1–4 clear)
        (3, 0x40),       // hmask[3] bit 6 = 4·1 + 2: element 128 + 64 + 3 = 195
        (16, 0x02),      // hmask[16] bit 1: element 32 + 16 = 48
        (20, 0x10),      // hmask[20] bit 4 = 4·1 + 0: element 128 + 20 = 148
        (32, 0x32),      // qs[0]: q = 2 (element 0), 0 (32), 3 (64), 0 (96)
        (32 + 16, 0x04), // qs[16]: q = 1 for element 48 (g = 1), 0 for 16, 80, 112
        (32 + 35, 0x20), // qs[35] = half 1, l = 3: q = 2 at g = 2 (element 195)
        (32 + 52, 0x01), // qs[52] = half 1, l = 20: q = 1 at g = 0 (element 148)
        (32 + 63, 0xC0), // qs[63] = half 1, l = 31: q = 3 at g = 3 (element 255)
    ]);
    let b = block(DType::Q3_K, &[(108, HALF)], &bytes);
    let x = dequantize(DType::Q3_K, &b, 256).unwrap();
    expect(
        &x,
        &[
            (0, -29.0),   // grp 0: 0.5·(−29)·(2 − 0)
            (16, 64.0),   // grp 1: 0.5·(−32)·(0 − 4)
            (32, 64.0),   // grp 2: hmask bit 1 of byte 0 clear: 0.5·(−32)·(0 − 4)
            (48, 8.0),    // grp 3: 0.5·16·(1 − 0)
            (64, 0.5),    // grp 4: 0.5·(−1)·(3 − 4)
            (96, 64.0),   // grp 6: 0.5·(−32)·(0 − 4)
            (112, -34.0), // grp 7: 0.5·17·(0 − 4)
            (128, -20.0), // grp 8: hmask[0] bit 4 clear: 0.5·10·(0 − 4)
            (136, -20.0), // grp 8
            (148, -16.0), // grp 9: 0.5·(−32)·(1 − 0)
            (176, -32.0), // grp 11: 0.5·16·(0 − 4)
            (195, 21.0),  // grp 12: 0.5·21·(2 − 0)
            (208, 64.0),  // grp 13
            (240, -36.0), // grp 15: 0.5·18·(0 − 4)
            (255, -9.0),  // grp 15: 0.5·18·(3 − 4)
        ],
    );
    let f = dequantize_f32(DType::Q3_K, &b, 256).unwrap();
    assert!(f.iter().zip(&x).all(|(f, x)| f64::from(*f) == *x));
}

// ---------------------------------------------------------------------------------------------
// q4_K and q5_K.

/// Twelve scale bytes (at offset 4 of q4_K/q5_K) giving (sc, m) per sub-block
/// [(3, 5), (2, 4), (0, 0), (63, 1), (26, 39), (0, 0), (1, 3), (60, 9)]:
/// bytes 0–3 hold sc of sub-blocks 0–3 in their low 6 bits and the high 2 bits of sc 4–7 on top;
/// bytes 4–7 the same for the mins; bytes 8–11 the low nibbles of sc (low) and m (high) of 4–7.
/// byte 0 = 0x43: sc0 = 3, sc4 high = 1 → +16    byte 4 = 0x85: m0 = 5, m4 high = 2 → +32
/// byte 1 = 0x02: sc1 = 2                         byte 5 = 0x04: m1 = 4
/// byte 3 = 0xFF: sc3 = 63, sc7 high = 3 → +48    byte 7 = 0x01: m3 = 1
/// byte 8 = 0x7A: sc4 = 10 + 16, m4 = 7 + 32     byte 10 = 0x31: sc6 = 1, m6 = 3
/// byte 11 = 0x9C: sc7 = 12 + 48, m7 = 9
const K4_SCALES: [(usize, u8); 9] = [
    (4, 0x43),
    (5, 0x02),
    (7, 0xFF),
    (8, 0x85),
    (9, 0x04),
    (11, 0x01),
    (12, 0x7A),
    (14, 0x31),
    (15, 0x9C),
];
const K4_SCALE_MIN: [(u8, u8); 8] = [
    (3, 5),
    (2, 4),
    (0, 0),
    (63, 1),
    (26, 39),
    (0, 0),
    (1, 3),
    (60, 9),
];

#[test]
fn k4_scale_min_unpacking() {
    let b = BlockQ4_K::from_bytes(&block(DType::Q4_K, &[], &K4_SCALES));
    let got: Vec<(u8, u8)> = (0..8).map(|sb| scale_min_k4(&b.scales, sb)).collect();
    assert_eq!(got, K4_SCALE_MIN);
    // The high 2 bits of sub-blocks 4..7 alone: top bits of byte sb − 4 (scale) and sb (min).
    for sb in 4..8 {
        let mut s = [0u8; 12];
        s[sb - 4] = 0xC0;
        assert_eq!(scale_min_k4(&s, sb), (48, 0), "scale of {sb}");
        assert_eq!(scale_min_k4(&s, sb - 4), (0, 0), "low 6 bits of {}", sb - 4);
        let mut s = [0u8; 12];
        s[sb] = 0x80;
        assert_eq!(scale_min_k4(&s, sb), (0, 32), "min of {sb}");
    }
}

#[test]
fn decode_q4_k() {
    // d = 0.5, dmin = 0.25; element e: nibble of qs[32·⌊e/64⌋ + e mod 32], low for even
    // sub-blocks; x = 0.5·sc·q − 0.25·m.
    let mut bytes = K4_SCALES.to_vec();
    bytes.extend([
        (16, 0xB7),       // qs[0]: 7 for element 0 (sb 0), 11 for element 32 (sb 1)
        (16 + 37, 0xF0),  // qs[37]: 0 for element 69 (sb 2), 15 for element 101 (sb 3)
        (16 + 64, 0x2E),  // qs[64]: 14 for element 128 (sb 4), 2 for element 160 (sb 5)
        (16 + 127, 0x5A), // qs[127]: 10 for element 223 (sb 6), 5 for element 255 (sb 7)
    ]);
    let b = block(DType::Q4_K, &[(0, HALF), (2, QUARTER)], &bytes);
    let x = dequantize(DType::Q4_K, &b, 256).unwrap();
    expect(
        &x,
        &[
            (0, 9.25),     // 0.5·3·7 − 0.25·5
            (1, -1.25),    // q = 0
            (32, 10.0),    // 0.5·2·11 − 0.25·4
            (69, 0.0),     // sb 2: sc = m = 0
            (101, 472.25), // 0.5·63·15 − 0.25·1
            (128, 172.25), // 0.5·26·14 − 0.25·39
            (160, 0.0),    // sb 5: sc = m = 0
            (200, -0.75),  // sb 6, q = 0: −0.25·3
            (223, 4.25),   // 0.5·1·10 − 0.25·3
            (255, 147.75), // 0.5·60·5 − 0.25·9
        ],
    );
    let mut mag = vec![0.0; 256];
    magnitude_into(DType::Q4_K, &b, &mut mag).unwrap();
    expect(&mag, &[(0, 11.75), (1, 1.25), (255, 152.25), (69, 0.0)]);
}

#[test]
fn decode_q5_k() {
    // d = 1, dmin = 0.5, scales as q4_K; the fifth bit of element e is bit sb of qh[e mod 32].
    let mut bytes = K4_SCALES.to_vec();
    bytes.extend([
        (16, 0x81),      // qh[0]: bits 0 and 7 → elements 0 (sb 0) and 224 (sb 7)
        (16 + 5, 0x08),  // qh[5]: bit 3 → element 96 + 5 = 101 (sb 3)
        (48, 0xB7),      // qs[0]: 7 (element 0), 11 (element 32)
        (48 + 37, 0xF0), // qs[37]: 0 (element 69), 15 (element 101)
        (48 + 96, 0x30), // qs[96]: 0 (element 192), 3 (element 224)
    ]);
    let b = block(DType::Q5_K, &[(0, ONE), (2, HALF)], &bytes);
    let x = dequantize(DType::Q5_K, &b, 256).unwrap();
    expect(
        &x,
        &[
            (0, 66.5),     // 3·(7 + 16) − 0.5·5
            (32, 20.0),    // 2·11 − 0.5·4: qh[0] bit 1 clear
            (37, -2.0),    // 2·0 − 0.5·4: qh[5] bit 1 clear
            (69, 0.0),     // sb 2: qh[5] bit 2 clear, sc = m = 0
            (101, 1952.5), // 63·(15 + 16) − 0.5·1
            (133, -19.5),  // sb 4: qh[5] bit 4 clear, q = 0: −0.5·39
            (192, -1.5),   // sb 6: qh[0] bit 6 clear: −0.5·3
            (224, 1135.5), // 60·(3 + 16) − 0.5·9
        ],
    );
    // Moving the qh bit to another sub-block's position moves the +16 with it.
    let mut moved = b.clone();
    moved[16] = 0x82; // bits 1 and 7: element 32 gains 16, element 0 loses it
    let y = dequantize(DType::Q5_K, &moved, 256).unwrap();
    expect(&y, &[(0, 18.5), (32, 52.0), (224, 1135.5)]);
}

#[test]
fn affine_k_quants_round_once_in_ggml_f32() {
    // q4_K with d = 1, sc0 = 1, q = 15 and dmin = 2⁻²⁴ (f16 0x0001), m0 = 1: exact 15 − 2⁻²⁴,
    // which f32 (ulp 2⁻²⁰ at 15) rounds to 15.
    let b = block(
        DType::Q4_K,
        &[(0, ONE), (2, 0x0001)],
        &[(4, 1), (8, 1), (16, 0x0F)],
    );
    let x = dequantize(DType::Q4_K, &b, 256).unwrap();
    let f = dequantize_f32(DType::Q4_K, &b, 256).unwrap();
    assert_eq!(x[0], 15.0 - 2f64.powi(-24));
    assert_eq!(f[0], 15.0);
    assert_eq!(x[1], -(2f64.powi(-24)));
    assert_eq!(f64::from(f[1]), -(2f64.powi(-24)));
}

// ---------------------------------------------------------------------------------------------
// q6_K.

#[test]
fn decode_q6_k() {
    // d = 0.25; scales (int8): [2, −3, 5, 0, −128, 0, 127, 0, 0, 1, 0, 0, 0, 0, 0, −1].
    // Element e: low 4 bits from ql[64n + 32·(g mod 2) + l] (nibble ⌊g/2⌋), high 2 bits from
    // bits 2g of qh[32n + l]; x = 0.25·scale·(q − 32).
    let b = block(
        DType::Q6_K,
        &[(208, QUARTER)],
        &[
            (192, 2),
            (193, 0xFD),
            (194, 5),
            (196, 0x80),
            (198, 127),
            (201, 1),
            (207, 0xFF),
            (0, 0x9A),        // ql[0]: low 10 (element 0), high 9 (element 64)
            (32, 0x41),       // ql[32]: low 1 (element 32), high 4 (element 96)
            (82, 0x0F),       // ql[64 + 18]: half 1, l = 18, g = 0 → element 146
            (127, 0xC0),      // ql[64 + 32 + 31]: high nibble 12 → element 255 (g = 3)
            (128, 0xE6),      // qh[0]: 2, 1, 2, 3 for g = 0..3 (elements 0, 32, 64, 96)
            (128 + 50, 0x03), // qh[32 + 18]: 3 for g = 0 → element 146
            (128 + 63, 0x40), // qh[32 + 31]: 1 for g = 3 → element 255
        ],
    );
    let x = dequantize(DType::Q6_K, &b, 256).unwrap();
    expect(
        &x,
        &[
            (0, 5.0),     // q = 10 | 2<<4 = 42: 0.25·2·10
            (1, -16.0),   // q = 0: 0.25·2·(−32)
            (16, 24.0),   // grp 1: 0.25·(−3)·(−32)
            (32, -18.75), // q = 1 | 1<<4 = 17: 0.25·5·(−15)
            (64, -288.0), // q = 9 | 2<<4 = 41: 0.25·(−128)·9
            (96, 635.0),  // q = 4 | 3<<4 = 52: 0.25·127·20
            (146, 7.75),  // grp 9: q = 15 | 3<<4 = 63: 0.25·1·31
            (200, 0.0),   // grp 12: scale 0
            (255, 1.0),   // grp 15: q = 12 | 1<<4 = 28: 0.25·(−1)·(−4)
        ],
    );
    let f = dequantize_f32(DType::Q6_K, &b, 256).unwrap();
    assert!(f.iter().zip(&x).all(|(f, x)| f64::from(*f) == *x));
}

// ---------------------------------------------------------------------------------------------
// iq4_nl and iq4_xs.

#[test]
fn decode_iq4_nl() {
    // d = 0.5; qs[0] = 0xF0: K[0] = −127 (element 0), K[15] = 113 (element 16);
    // qs[15] = 0x78: K[8] = 1 (element 15), K[7] = −10 (element 31); qs[1] = 0: K[0] twice.
    let b = block(DType::Iq4Nl, &[(0, HALF)], &[(2, 0xF0), (2 + 15, 0x78)]);
    let x = dequantize(DType::Iq4Nl, &b, 32).unwrap();
    expect(
        &x,
        &[
            (0, -63.5),
            (16, 56.5),
            (15, 0.5),
            (31, -5.0),
            (1, -63.5),
            (17, -63.5),
        ],
    );
    assert_eq!(
        KVALUES_IQ4NL,
        [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]
    );
}

#[test]
fn decode_iq4_xs() {
    // d = 0.25. scales_l = [0x21, 0x00, 0xF0, 0x5A]: low nibbles 1, 2, 0, 0, 0, 15, 10, 5;
    // scales_h = 0xB10E: high pairs 2, 3, 0, 0, 1, 0, 3, 2; so ls − 32 =
    // [33 − 32, 50 − 32, −32, −32, 16 − 32, 15 − 32, 58 − 32, 37 − 32] = [1, 18, −32, −32, −16,
    // −17, 26, 5]. Element 32ib + j: low nibble of qs[16ib + j] (j < 16), else high nibble.
    let b = block(
        DType::Iq4Xs,
        &[(0, QUARTER), (2, 0xB10E)],
        &[
            (4, 0x21),
            (6, 0xF0),
            (7, 0x5A),
            (8, 0x8F),       // qs[0]: K[15] = 113 (element 0), K[8] = 1 (element 16)
            (8 + 16, 0x30),  // qs[16]: K[0] (element 32), K[3] = −65 (element 48)
            (8 + 95, 0x0B),  // qs[95]: K[11] = 38 (element 175), K[0] (element 191)
            (8 + 127, 0xE0), // qs[127]: K[0] (element 239), K[14] = 89 (element 255)
        ],
    );
    let xs = BlockIq4Xs::from_bytes(&b);
    let ls: Vec<u8> = (0..8).map(|ib| xs.scale(ib)).collect();
    assert_eq!(ls, [33, 50, 0, 0, 16, 15, 58, 37]);
    let x = dequantize(DType::Iq4Xs, &b, 256).unwrap();
    expect(
        &x,
        &[
            (0, 28.25),    // 0.25·1·113
            (16, 0.25),    // 0.25·1·1
            (32, -571.5),  // 0.25·18·(−127)
            (48, -292.5),  // 0.25·18·(−65)
            (64, 1016.0),  // 0.25·(−32)·(−127)
            (128, 508.0),  // 0.25·(−16)·(−127)
            (175, -161.5), // 0.25·(−17)·38
            (191, 539.75), // 0.25·(−17)·(−127)
            (192, -825.5), // 0.25·26·(−127)
            (255, 111.25), // 0.25·5·89
        ],
    );
    let f = dequantize_f32(DType::Iq4Xs, &b, 256).unwrap();
    assert!(f.iter().zip(&x).all(|(f, x)| f64::from(*f) == *x));
}

// ---------------------------------------------------------------------------------------------
// Consistency over random blocks.

/// Deterministic random bytes for `n` blocks of `t` with finite f16 fields.
fn random_blocks(t: DType, n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed;
    let mut out: Vec<u8> = (0..n * t.block_bytes())
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 56) as u8
        })
        .collect();
    for b in out.chunks_exact_mut(t.block_bytes()) {
        for i in 0..t.f16_scales() {
            // exponent ≤ 15: never Inf/NaN
            let d = t.f16_scale(b, i).to_bits() & !0x4000;
            t.set_f16_scale(b, i, half::f16::from_bits(d));
        }
    }
    out
}

#[test]
fn ggml_f32_is_the_exact_value_rounded_once() {
    for t in [
        DType::Q2_K,
        DType::Q3_K,
        DType::Q4_K,
        DType::Q5_K,
        DType::Q6_K,
        DType::Iq4Nl,
        DType::Iq4Xs,
    ] {
        let bytes = random_blocks(t, 8, 17);
        let n = 8 * t.block_len();
        let exact = dequantize(t, &bytes, n).unwrap();
        let ggml = dequantize_f32(t, &bytes, n).unwrap();
        let has_min = matches!(t, DType::Q2_K | DType::Q4_K | DType::Q5_K);
        for (e, g) in exact.iter().zip(&ggml) {
            assert_eq!(*e as f32, *g, "{t}");
            if !has_min {
                assert_eq!(f64::from(*g), *e, "{t}: not exact in f32");
            }
        }
    }
}

#[test]
fn magnitudes_split_scale_and_min() {
    for t in [DType::Q2_K, DType::Q4_K, DType::Q5_K] {
        let bytes = random_blocks(t, 4, 5);
        let x = dequantize(t, &bytes, 1024).unwrap();
        let mut mag = vec![0.0; 1024];
        magnitude_into(t, &bytes, &mut mag).unwrap();
        // |x| ≤ |d·sc·q| + |dmin·m|, and the min part is the same within a 32-element
        // sub-block (16 for q2_K), so the magnitude is never below it there.
        assert!(x.iter().zip(&mag).all(|(x, m)| x.abs() <= *m), "{t}");
    }
    for t in [DType::Q3_K, DType::Q6_K, DType::Iq4Xs, DType::Iq4Nl] {
        let bytes = random_blocks(t, 2, 5);
        let n = 2 * t.block_len();
        let x = dequantize(t, &bytes, n).unwrap();
        let mut mag = vec![0.0; n];
        magnitude_into(t, &bytes, &mut mag).unwrap();
        assert!(x.iter().zip(&mag).all(|(x, m)| x.abs() == *m), "{t}");
    }
}

#[test]
fn struct_bytes_round_trip() {
    fn check<B: Block>() {
        for seed in 0..20 {
            let bytes = random_blocks(B::DTYPE, 1, seed);
            let mut again = vec![0; B::BYTES];
            B::from_bytes(&bytes).to_bytes(&mut again);
            assert_eq!(again, bytes, "{}", B::DTYPE);
        }
    }
    check::<BlockQ2_K>();
    check::<BlockQ3_K>();
    check::<BlockQ4_K>();
    check::<BlockQ5_K>();
    check::<BlockQ6_K>();
    check::<BlockIq4Nl>();
    check::<BlockIq4Xs>();
}
