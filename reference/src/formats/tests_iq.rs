//! Known-answer tests for the lattice i-quants: blocks written byte by byte, expected values
//! worked out by hand from the formulas of section 2.5 (each expectation shows its
//! arithmetic). Grid rows used (from iq_grids.json, byte j = element j):
//! iq2xxs_grid[1] = 0x080808080808082b = [43, 8, 8, 8, 8, 8, 8, 8]; iq2xxs_grid[0] = all 8;
//! iq2xs_grid[2] = 0x0808080808081919 = [25, 25, 8, 8, 8, 8, 8, 8]; iq2xs_grid[0] = all 8;
//! iq2s_grid[261] = 0x081908192b08082b = [43, 8, 8, 43, 25, 8, 25, 8];
//! iq3xxs_grid[0] = 0x04040404 = [4; 4]; iq3xxs_grid[1] = 0x04040414 = [20, 4, 4, 4];
//! iq3s_grid[259] = 0x05090903 = [3, 9, 9, 5]; iq3s_grid[0] = [1; 4];
//! iq1s_grid[263] = 0xff0000ffffffff00 = [0, −1, −1, −1, −1, 0, 0, −1]; iq1s_grid[0] = [−1; 8];
//! ksigns_iq2xs[1] = 0b1000_0001, [2] = 0b1000_0010, [3] = 0b0000_0011.

use super::*;

fn put(b: &mut [u8], at: usize, bytes: &[u8]) {
    b[at..at + bytes.len()].copy_from_slice(bytes);
}

fn decode1(t: DType, b: &[u8]) -> Vec<f64> {
    let exact = dequantize(t, b, 256).unwrap();
    // ggml's f32 values are the exact ones (module notes of iq_grid.rs).
    let ggml = dequantize_f32(t, b, 256).unwrap();
    for (e, (x, g)) in exact.iter().zip(&ggml).enumerate() {
        assert_eq!(f64::from(*g), *x, "{t} element {e}");
    }
    exact
}

#[track_caller]
fn expect(x: &[f64], want: &[(usize, f64)]) {
    for &(e, v) in want {
        assert_eq!(x[e], v, "element {e}");
    }
}

const ONE: [u8; 2] = [0x00, 0x3C];

#[test]
fn iq2_xxs_known() {
    let mut b = vec![0u8; 66];
    put(&mut b, 0, &ONE); // d = 1
                          // ib 0: indices [1, 0, 0, 0]; W = scale 3 << 28 | sign index 1 for l = 0.
    b[2] = 1;
    put(&mut b, 6, &((3u32 << 28) | 1).to_le_bytes());
    let x = decode1(DType::Iq2Xxs, &b);
    // db = 1·(0.5 + 3)·0.25 = 0.875; ksigns[1] negates elements 0 and 7.
    expect(
        &x,
        &[
            (0, -0.875 * 43.0), // −37.625
            (1, 0.875 * 8.0),   // 7
            (6, 7.0),
            (7, -7.0),
            (8, 7.0), // l = 1: row 0, sign index 0
            (31, 7.0),
            // ib 1: all zero bytes: db = 0.5·0.25 = 0.125, row 0 = 8 → 1.
            (32, 1.0),
            (255, 1.0),
        ],
    );
}

#[test]
fn iq2_xs_known() {
    let mut b = vec![0u8; 74];
    put(&mut b, 0, &[0x00, 0x38]); // d = 0.5
                                   // qs[0] = index 2 | sign index 3 << 9 = 0x0602.
    put(&mut b, 2, &0x0602u16.to_le_bytes());
    b[66] = 0x52; // ib 0: groups 0, 1 scale 2; groups 2, 3 scale 5
    let x = decode1(DType::Iq2Xs, &b);
    // db0 = 0.5·2.5·0.25 = 0.3125; ksigns[3] negates elements 0 and 1.
    // db1 = 0.5·5.5·0.25 = 0.6875.
    expect(
        &x,
        &[
            (0, -0.3125 * 25.0), // −7.8125
            (1, -7.8125),
            (2, 0.3125 * 8.0),  // 2.5
            (8, 2.5),           // l = 1: row 0, no signs
            (16, 0.6875 * 8.0), // 5.5
            (31, 5.5),
            (32, 0.5 * 0.5 * 0.25 * 8.0), // ib 1: scale 0 → 0.5
        ],
    );
}

#[test]
fn iq2_s_known() {
    let mut b = vec![0u8; 82];
    put(&mut b, 0, &ONE);
    b[2 + 1] = 5; // low index byte of group l = 1
    b[66] = 0b0100; // qh[0] bits 2..3 are index bits 8..9 of l = 1: 5 | 1 << 8 = 261
    b[2 + 32 + 1] = 0x80; // sign byte of l = 1: element j = 7 negative
    b[74] = 0x01; // scales[0]: s = 1 for l = 0, 1
    let x = decode1(DType::Iq2S, &b);
    // db = 1·1.5·0.25 = 0.375; row 261 = [43, 8, 8, 43, 25, 8, 25, 8].
    expect(
        &x,
        &[
            (0, 0.375 * 8.0),  // l = 0: row 0 → 3
            (8, 0.375 * 43.0), // 16.125
            (9, 3.0),
            (11, 16.125),
            (12, 0.375 * 25.0), // 9.375
            (15, -3.0),
            (16, 0.125 * 8.0), // l = 2: s = 0 → 0.125·8 = 1
        ],
    );
}

#[test]
fn iq3_xxs_known() {
    let mut b = vec![0u8; 98];
    put(&mut b, 0, &[0x00, 0x40]); // d = 2
    b[2 + 1] = 1; // second index of group 0 (elements 4..7)
    put(&mut b, 2 + 64, &((1u32 << 28) | 2).to_le_bytes()); // s = 1, sign index 2
    let x = decode1(DType::Iq3Xxs, &b);
    // db = 2·1.5·0.5 = 1.5; ksigns[2] negates elements 1 and 7.
    expect(
        &x,
        &[
            (0, 1.5 * 4.0), // 6
            (1, -6.0),
            (4, 1.5 * 20.0), // 30
            (5, 6.0),
            (7, -6.0),
            (8, 6.0),
            // ib 1: W = 0: db = 2·0.5·0.5 = 0.5 → 2.
            (32, 2.0),
        ],
    );
}

#[test]
fn iq3_s_known() {
    let mut b = vec![0u8; 110];
    put(&mut b, 0, &[0x00, 0x34]); // d = 0.25
    b[2 + 8] = 3; // ib 1, k = 0
    b[66 + 1] = 0b01; // qh[1] bit 0: index 3 | 256 = 259
    b[74 + 4] = 0x01; // signs of ib 1, group 0: element 0 negative
    b[106] = 0x20; // scales[0] high nibble (ib 1) = 2
    let x = decode1(DType::Iq3S, &b);
    // ib 0: scale 0 → db = 0.25·1 = 0.25, row 0 → 0.25.
    // ib 1: db = 0.25·(1 + 2·2) = 1.25; row 259 = [3, 9, 9, 5].
    expect(
        &x,
        &[
            (0, 0.25),
            (32, -1.25 * 3.0), // −3.75
            (33, 1.25 * 9.0),  // 11.25
            (35, 1.25 * 5.0),  // 6.25
            (36, 1.25),        // k = 1: row 0
            (40, 1.25),
        ],
    );
}

#[test]
fn iq1_s_known() {
    let mut b = vec![0u8; 50];
    put(&mut b, 0, &ONE);
    b[2] = 7; // qs[0]
              // qh[0] = δ sign | s = 2 << 12 | index bits of l = 0: 1 → index 7 | 1 << 8 = 263.
    put(&mut b, 34, &0xA001u16.to_le_bytes());
    let x = decode1(DType::Iq1S, &b);
    // dl = 1·(2·2 + 1) = 5, δ = −0.125; row 263 = [0, −1, −1, −1, −1, 0, 0, −1].
    expect(
        &x,
        &[
            (0, 5.0 * -0.125), // −0.625
            (1, 5.0 * -1.125), // −5.625
            (5, -0.625),
            (7, -5.625),
            (8, -5.625), // l = 1: row 0
            // ib 1: qh = 0: dl = 1, δ = +0.125, row 0 → −0.875.
            (32, -0.875),
        ],
    );
}

#[test]
fn iq1_m_known() {
    let mut b = vec![0u8; 56];
    // d = 1.0 = 0x3C00: nibbles 0, 0, 0xC, 0x3 in the top of scale words 0..3.
    // Word 0 = 0x0011: ib 0 scales 1 (l = 0, 1) and 2 (l = 2, 3); ib 1 scales 0.
    put(&mut b, 48, &0x0011u16.to_le_bytes());
    put(&mut b, 52, &0xC000u16.to_le_bytes());
    put(&mut b, 54, &0x3000u16.to_le_bytes());
    b[0] = 7; // qs[0]
    b[32] = 0x81; // qh[0]: bit 0 → index bit 8 of l = 0 (7 | 256 = 263); bit 7 → δ of l = 1 negative
    assert_eq!(DType::Iq1M.f16_scale(&b, 0), half::f16::ONE);
    let x = decode1(DType::Iq1M, &b);
    // dl1 = 2·1 + 1 = 3, dl2 = 2·2 + 1 = 5.
    expect(
        &x,
        &[
            (0, 3.0 * 0.125),   // row 263[0] = 0, δ = +0.125 → 0.375
            (1, 3.0 * -0.875),  // −2.625
            (8, 3.0 * -1.125),  // l = 1: row 0, δ = −0.125 → −3.375
            (16, 5.0 * -0.875), // l = 2: row 0, δ = +0.125 → −4.375
            (32, -0.875),       // ib 1: dl = 1
        ],
    );
    // The scale round-trips through its nibbles and leaves the sub-scales alone.
    let mut c = b.clone();
    DType::Iq1M.set_f16_scale(&mut c, 0, half::f16::from_f32(-0.5));
    assert_eq!(DType::Iq1M.f16_scale(&c, 0), half::f16::from_f32(-0.5));
    assert_eq!(u16::from_le_bytes([c[48], c[49]]) & 0x0FFF, 0x0011);
    let y = decode1(DType::Iq1M, &c);
    assert_eq!(y[1], -0.5 * -2.625);
}

#[test]
fn lattice_blocks_are_exact_in_f32_and_struct_sizes_match() {
    fn check<B: Block>() {
        assert_eq!(B::BYTES, B::DTYPE.block_bytes(), "{}", B::DTYPE);
        assert_eq!(B::LEN, B::DTYPE.block_len(), "{}", B::DTYPE);
        assert!(!B::DTYPE.has_quantizer());
        assert_eq!(B::DTYPE.f16_scales(), 1);
    }
    check::<BlockIq1S>();
    check::<BlockIq1M>();
    check::<BlockIq2Xxs>();
    check::<BlockIq2Xs>();
    check::<BlockIq2S>();
    check::<BlockIq3Xxs>();
    check::<BlockIq3S>();
    // Random blocks with finite scales of any exponent (subnormal d included): ggml's f32
    // values are exact.
    let mut s = 11u64;
    for &t in DType::LATTICE_IQUANTS {
        for _ in 0..50 {
            let mut b: Vec<u8> = (0..t.block_bytes())
                .map(|_| {
                    s = s
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (s >> 56) as u8
                })
                .collect();
            let d = t.f16_scale(&b, 0).to_bits() & !0x4000;
            t.set_f16_scale(&mut b, 0, half::f16::from_bits(d));
            let x = decode1(t, &b);
            // The block decoders (by group of 8) agree with the per-element factors.
            for (e, x) in x.iter().enumerate() {
                assert_eq!(
                    *x,
                    super::iq_grid::parts(t, &b, e).exact(),
                    "{t} element {e}"
                );
            }
        }
    }
}
