//! MXFP4, the OCP Microscaling (MX) v1.0 format with E2M1 elements: 32-element blocks of one
//! shared E8M0 scale byte and sixteen bytes of 4-bit E2M1 codes (17 bytes, ggml's type 39,
//! gpt-oss's weight format).
//!
//! From the MX specification:
//! * **E8M0** (the shared scale X): an unsigned 8-bit exponent with bias 127, no sign and no
//!   mantissa: X = 2^(e − 127) for e = 0 … 254 (2⁻¹²⁷ … 2¹²⁷); e = 0xFF is NaN.
//! * **E2M1** (each element P): sign, 2 exponent bits (bias 1), 1 mantissa bit; exponent 0 is
//!   subnormal (0 and 0.5), no infinities or NaN. The eight magnitudes of codes 0 … 7 are
//!   0, 0.5, 1, 1.5, 2, 3, 4, 6; bit 3 is the sign (0b1000 is −0).
//! * The value of element i is X · P_i.
//!
//! ggml's layout (read in `ggml-common.h` of a recent tree): `e` at byte 0, `qs` at 1; byte j
//! of `qs` holds element j in its low nibble and element j + 16 in its high nibble, as q4_0.
//! ggml keeps the E2M1 magnitudes doubled as small integers (0, 1, 2, 3, 4, 6, 8, 12) and
//! halves the scale instead: x = kvalue · 2^(e − 128). Its CPU decoder has no NaN: e = 0xFF
//! gives 2¹²⁷ as the halved scale, so its f32 values are finite (kvalue 1) or +∞/−∞ by
//! overflow; its Vulkan decoder forms 2^(e − 127) by shifting e into a float's exponent field
//! (e = 0xFF: +∞, so kvalue 0 gives NaN and the others ±∞). [`BlockMxfp4::decode`] follows
//! the specification (NaN for the whole block), [`BlockMxfp4::decode_f32`] ggml's CPU decoder.
//!
//! Exactness: a value is a kvalue of at most 4 significant bits times a power of two, so it is
//! exact in f64 always, and in f32 from 2⁻¹⁴⁹ up to f32's largest finite value: every value of
//! e = 0 … 253 with kvalue ≤ 8, and of e = 254 with kvalue 1, is exact in f32 (the smallest,
//! 2⁻¹²⁸, is an f32 subnormal); the larger ones of e = 253, 254 exceed f32's range.
//!
//! ggml's reference quantizer (`quantize_row_mxfp4_ref`) takes its shared exponent from
//! `floorf(log2f(amax))`, which depends on the C library's log2f near powers of two, so it is
//! not reproduced ([`DType::has_quantizer`] is false); [`encode`] is the specification's own
//! conversion, for test inputs.

use super::legacy::Block;
use super::DType;

/// Elements per MXFP4 block (ggml's QK_MXFP4).
pub const QK_MXFP4: usize = 32;

/// E8M0's NaN encoding.
pub const E8M0_NAN: u8 = 0xFF;

/// The E2M1 magnitudes of codes 0 … 7, doubled (ggml's `kvalues_mxfp4` for the positive half).
const E2M1_DOUBLED: [i32; 8] = [0, 1, 2, 3, 4, 6, 8, 12];

/// An MXFP4 block (17 bytes): `e` at 0, `qs` at 1; x_j = P(qs_j & 0xF)·2^(e − 127),
/// x_(j+16) = P(qs_j >> 4)·2^(e − 127).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockMxfp4 {
    /// Shared E8M0 scale.
    pub e: u8,
    /// E2M1 codes: element j low nibble, element j + 16 high nibble.
    pub qs: [u8; QK_MXFP4 / 2],
}

const _: () = assert!(std::mem::size_of::<BlockMxfp4>() == 17);

/// Twice the E2M1 value of a 4-bit code (an integer in −12 … 12).
pub fn e2m1_doubled(code: u8) -> i32 {
    let m = E2M1_DOUBLED[usize::from(code & 7)];
    if code & 8 != 0 {
        -m
    } else {
        m
    }
}

/// The E8M0 scale 2^(e − 127) as f64; NaN for e = 0xFF.
pub fn e8m0_to_f64(e: u8) -> f64 {
    if e == E8M0_NAN {
        f64::NAN
    } else {
        2f64.powi(i32::from(e) - 127)
    }
}

/// ggml's halved scale 2^(e − 128) in f32 as its CPU decoder forms it (e = 0 and 1 are f32
/// subnormals; e = 0xFF gives 2¹²⁷, no NaN).
pub fn e8m0_half_ggml(e: u8) -> f32 {
    if e < 2 {
        f32::from_bits(0x0020_0000 << e)
    } else {
        f32::from_bits(u32::from(e - 1) << 23)
    }
}

impl BlockMxfp4 {
    /// The code of element `i` (0 … 31).
    pub fn code(&self, i: usize) -> u8 {
        let byte = self.qs[i % 16];
        if i >= 16 {
            byte >> 4
        } else {
            byte & 0xF
        }
    }
}

impl Block for BlockMxfp4 {
    const DTYPE: DType = DType::Mxfp4;
    const LEN: usize = QK_MXFP4;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        assert_eq!(bytes.len(), Self::BYTES, "mxfp4 block: 17 bytes");
        Self {
            e: bytes[0],
            qs: bytes[1..].try_into().expect("16 bytes"),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        assert_eq!(out.len(), Self::BYTES, "mxfp4 block: 17 bytes");
        out[0] = self.e;
        out[1..].copy_from_slice(&self.qs);
    }

    /// The specification's values: P·2^(e − 127), exact (code 0b1000 is −0); every element
    /// NaN when e = 0xFF.
    fn decode(&self, out: &mut [f64]) {
        assert_eq!(out.len(), QK_MXFP4, "decoded block");
        let x = e8m0_to_f64(self.e);
        for (i, o) in out.iter_mut().enumerate() {
            let code = self.code(i);
            let p = f64::from(E2M1_DOUBLED[usize::from(code & 7)]) * 0.5;
            *o = if code & 8 != 0 { -p } else { p } * x;
        }
    }

    /// ggml: `kvalue · e8m0_half(e)` in f32 (exact while in f32's range).
    fn decode_f32(&self, out: &mut [f32]) {
        assert_eq!(out.len(), QK_MXFP4, "decoded block");
        let d = e8m0_half_ggml(self.e);
        for (i, o) in out.iter_mut().enumerate() {
            *o = e2m1_doubled(self.code(i)) as f32 * d;
        }
    }
}

/// The E2M1 code nearest to `v` (a value already divided by the shared scale): round to
/// nearest, ties to the even code, magnitudes past 6 saturate to ±6 (the specification's
/// conversion); NaN becomes +0.
pub fn e2m1_code(v: f64) -> u8 {
    if v.is_nan() {
        return 0;
    }
    let sign = if v.is_sign_negative() { 8 } else { 0 };
    let a = v.abs();
    let mut best = 0u8;
    for c in 1..8u8 {
        let (dc, db) = (
            (f64::from(E2M1_DOUBLED[usize::from(c)]) * 0.5 - a).abs(),
            (f64::from(E2M1_DOUBLED[usize::from(best)]) * 0.5 - a).abs(),
        );
        if dc < db || (dc == db && c % 2 == 0) {
            best = c;
        }
    }
    best | sign
}

/// One block of `values` (32 of them) converted as the MX specification describes: shared
/// exponent ⌊log₂ amax⌋ − 2 (2 = E2M1's largest exponent), clamped to E8M0's finite range
/// (−127 … 127, never the NaN code), then each element rounded to the nearest E2M1 value.
/// amax is taken over the finite values; with none non-zero the scale is 2⁰.
pub fn encode_block(values: &[f32]) -> BlockMxfp4 {
    assert_eq!(values.len(), QK_MXFP4, "one mxfp4 block");
    let amax = values
        .iter()
        .filter(|v| v.is_finite())
        .fold(0f64, |m, &v| m.max(f64::from(v).abs()));
    let exp = if amax > 0.0 {
        // ⌊log₂ amax⌋ exactly, from the f64's exponent (amax is an f32, never subnormal here).
        ((amax.to_bits() >> 52) & 0x7FF) as i32 - 1023
    } else {
        2
    };
    let shared = (exp - 2).clamp(-127, 127);
    let e = (shared + 127) as u8;
    let x = e8m0_to_f64(e);
    let mut qs = [0u8; QK_MXFP4 / 2];
    for (j, q) in qs.iter_mut().enumerate() {
        let lo = e2m1_code(f64::from(values[j]) / x);
        let hi = e2m1_code(f64::from(values[j + 16]) / x);
        *q = lo | (hi << 4);
    }
    BlockMxfp4 { e, qs }
}

/// [`encode_block`] over whole blocks: `values.len()` must be a multiple of 32.
pub fn encode(values: &[f32]) -> Vec<u8> {
    assert_eq!(values.len() % QK_MXFP4, 0, "whole mxfp4 blocks");
    let mut out = vec![0u8; values.len() / QK_MXFP4 * BlockMxfp4::BYTES];
    for (v, o) in values
        .chunks_exact(QK_MXFP4)
        .zip(out.chunks_exact_mut(BlockMxfp4::BYTES))
    {
        encode_block(v).to_bytes(o);
    }
    out
}
