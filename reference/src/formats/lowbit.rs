//! The 1- and 2-bit formats with one f16 scale per block, read in `ggml-common.h` and
//! `ggml-quants.c` of a recent ggml tree (types 34, 35, 41 and 42; none is in the July 2025
//! interface vkdiff's own shaders follow):
//!
//! * **q1_0**: 128 elements, `d` at byte 0, then 16 bytes of sign bits: element j is bit j % 8
//!   of byte j / 8, x = +d for a set bit and −d for a clear one (18 bytes).
//! * **q2_0**: 64 elements, `d` at 0, then 16 bytes of 2-bit codes: element j is bits
//!   2·(j % 4) of byte j / 4, x = d·(q − 1), q ∈ {0, 1, 2, 3} (18 bytes).
//! * **tq2_0** (ternary, 256 elements): 64 bytes of 2-bit codes, then `d` at 64 (66 bytes).
//!   Byte 32·h + m holds, in its bit pairs l = 0 … 3, elements 128·h + 32·l + m; x = d·(q − 1)
//!   (q = 3 decodes to 2·d, though ggml's quantizer writes only 0 … 2).
//! * **tq1_0** (ternary, 256 elements, 5 trits a byte): 48 bytes `qs`, 4 bytes `qh`, then `d`
//!   at 52 (54 bytes). Trit t of a byte b is ⌊3·(b·3ᵗ mod 256) / 256⌋ ∈ {0, 1, 2}, x = d·(trit
//!   − 1). Bytes 0 … 31 of `qs` give elements 32·t + m (trits 0 … 4), bytes 32 … 47 elements
//!   160 + 16·t + (byte − 32), and `qh` byte j elements 240 + 4·t + j (trits 0 … 3). Every byte
//!   decodes (the formula needs no validity check), so raw bytes are valid blocks.
//!
//! Every value is an f16 times an integer of magnitude ≤ 2: exact in f64 and f32. The
//! quantizers (sign and round-to-nearest searches) are not reproduced
//! ([`DType::has_quantizer`]): test values are raw blocks.

use half::f16;

use super::legacy::Block;
use super::DType;
use super::QK_K;

/// Elements per q1_0 block (ggml's QK1_0).
pub const QK1_0: usize = 128;
/// Elements per q2_0 block (ggml's QK2_0).
pub const QK2_0: usize = 64;

fn f16_at(bytes: &[u8], at: usize) -> f16 {
    f16::from_le_bytes([bytes[at], bytes[at + 1]])
}

/// Writes `d·code − d` (code − 1 times d: exact in f64) for each code of `codes`.
fn decode_offset_codes(codes: impl Iterator<Item = u8>, d: f16, out: &mut [f64]) {
    let d = d.to_f64();
    for (o, q) in out.iter_mut().zip(codes) {
        *o = d * f64::from(i32::from(q) - 1);
    }
}

/// ggml's f32 decoders of these formats: `(float)(q − 1) * d`.
fn decode_offset_codes_f32(codes: impl Iterator<Item = u8>, d: f16, out: &mut [f32]) {
    let d = d.to_f32();
    for (o, q) in out.iter_mut().zip(codes) {
        *o = (i32::from(q) - 1) as f32 * d;
    }
}

/// A q1_0 block (18 bytes): x_j = ±d by bit j % 8 of `qs[j / 8]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ1_0 {
    /// Scale.
    pub d: f16,
    /// Sign bits, element j at bit j % 8 of byte j / 8 (set: +d).
    pub qs: [u8; QK1_0 / 8],
}

const _: () = assert!(std::mem::size_of::<BlockQ1_0>() == 18);

impl BlockQ1_0 {
    /// The code of element j as q2_0 spells it: 2 for +d, 0 for −d.
    fn codes(&self) -> impl Iterator<Item = u8> + '_ {
        (0..QK1_0).map(|j| ((self.qs[j / 8] >> (j % 8)) & 1) * 2)
    }
}

impl Block for BlockQ1_0 {
    const DTYPE: DType = DType::Q1_0;
    const LEN: usize = QK1_0;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        assert_eq!(bytes.len(), Self::BYTES, "q1_0 block: 18 bytes");
        Self {
            d: f16_at(bytes, 0),
            qs: bytes[2..].try_into().expect("16 bytes"),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        assert_eq!(out.len(), Self::BYTES, "q1_0 block: 18 bytes");
        out[..2].copy_from_slice(&self.d.to_le_bytes());
        out[2..].copy_from_slice(&self.qs);
    }

    fn decode(&self, out: &mut [f64]) {
        assert_eq!(out.len(), QK1_0, "decoded block");
        decode_offset_codes(self.codes(), self.d, out);
    }

    /// ggml: `bit ? d : -d` (the same numbers as (q − 1)·d with q ∈ {0, 2}).
    fn decode_f32(&self, out: &mut [f32]) {
        assert_eq!(out.len(), QK1_0, "decoded block");
        decode_offset_codes_f32(self.codes(), self.d, out);
    }
}

/// A q2_0 block (18 bytes): x_j = d·(q − 1), q the 2 bits at 2·(j % 4) of `qs[j / 4]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ2_0 {
    /// Scale.
    pub d: f16,
    /// 2-bit codes, four a byte, element j at bits 2·(j % 4) of byte j / 4.
    pub qs: [u8; QK2_0 / 4],
}

const _: () = assert!(std::mem::size_of::<BlockQ2_0>() == 18);

impl BlockQ2_0 {
    fn codes(&self) -> impl Iterator<Item = u8> + '_ {
        (0..QK2_0).map(|j| (self.qs[j / 4] >> (2 * (j % 4))) & 3)
    }
}

impl Block for BlockQ2_0 {
    const DTYPE: DType = DType::Q2_0;
    const LEN: usize = QK2_0;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        assert_eq!(bytes.len(), Self::BYTES, "q2_0 block: 18 bytes");
        Self {
            d: f16_at(bytes, 0),
            qs: bytes[2..].try_into().expect("16 bytes"),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        assert_eq!(out.len(), Self::BYTES, "q2_0 block: 18 bytes");
        out[..2].copy_from_slice(&self.d.to_le_bytes());
        out[2..].copy_from_slice(&self.qs);
    }

    fn decode(&self, out: &mut [f64]) {
        assert_eq!(out.len(), QK2_0, "decoded block");
        decode_offset_codes(self.codes(), self.d, out);
    }

    fn decode_f32(&self, out: &mut [f32]) {
        assert_eq!(out.len(), QK2_0, "decoded block");
        decode_offset_codes_f32(self.codes(), self.d, out);
    }
}

/// A tq2_0 block (66 bytes): 2-bit codes, then `d` at 64; x = d·(q − 1).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockTq2_0 {
    /// Byte 32·h + m: elements 128·h + 32·l + m in bit pair l.
    pub qs: [u8; QK_K / 4],
    /// Scale.
    pub d: f16,
}

const _: () = assert!(std::mem::size_of::<BlockTq2_0>() == 66);

impl BlockTq2_0 {
    /// The 2-bit code of element e.
    pub fn code(&self, e: usize) -> u8 {
        let (h, l, m) = (e / 128, (e % 128) / 32, e % 32);
        (self.qs[32 * h + m] >> (2 * l)) & 3
    }
}

impl Block for BlockTq2_0 {
    const DTYPE: DType = DType::Tq2_0;
    const LEN: usize = QK_K;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        assert_eq!(bytes.len(), Self::BYTES, "tq2_0 block: 66 bytes");
        Self {
            qs: bytes[..64].try_into().expect("64 bytes"),
            d: f16_at(bytes, 64),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        assert_eq!(out.len(), Self::BYTES, "tq2_0 block: 66 bytes");
        out[..64].copy_from_slice(&self.qs);
        out[64..].copy_from_slice(&self.d.to_le_bytes());
    }

    fn decode(&self, out: &mut [f64]) {
        assert_eq!(out.len(), QK_K, "decoded block");
        decode_offset_codes((0..QK_K).map(|e| self.code(e)), self.d, out);
    }

    fn decode_f32(&self, out: &mut [f32]) {
        assert_eq!(out.len(), QK_K, "decoded block");
        decode_offset_codes_f32((0..QK_K).map(|e| self.code(e)), self.d, out);
    }

    /// |d·q| + |d| (q the stored code 0 … 3): ggml's tq2_0 mat-vec forms d·(Σ b·q − Σ b), so
    /// its rounding scales with both sums, not with |x| = |d·(q − 1)| (zero for q = 1).
    fn magnitude(&self, out: &mut [f64]) {
        assert_eq!(out.len(), QK_K, "magnitude block");
        let d = self.d.to_f64().abs();
        for (e, o) in out.iter_mut().enumerate() {
            *o = d * f64::from(self.code(e)) + d;
        }
    }
}

/// A tq1_0 block (54 bytes): base-3 packed trits, then `d` at 52; x = d·(trit − 1).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockTq1_0 {
    /// Five trits a byte: bytes 0 … 31 elements 32·t + m, bytes 32 … 47 elements 160 + 16·t + m.
    pub qs: [u8; 48],
    /// Four trits a byte: byte j elements 240 + 4·t + j.
    pub qh: [u8; 4],
    /// Scale.
    pub d: f16,
}

const _: () = assert!(std::mem::size_of::<BlockTq1_0>() == 54);

/// Trit `t` of a packed byte: ⌊3·(b·3ᵗ mod 256) / 256⌋ (ggml's fixed-point base-3 digit).
pub fn tq1_0_trit(b: u8, t: u32) -> u8 {
    let q = b.wrapping_mul(3u8.pow(t));
    ((u16::from(q) * 3) >> 8) as u8
}

impl BlockTq1_0 {
    /// The trit (0 … 2) of element e.
    pub fn trit(&self, e: usize) -> u8 {
        match e {
            0..=159 => tq1_0_trit(self.qs[e % 32], (e / 32) as u32),
            160..=239 => tq1_0_trit(self.qs[32 + (e - 160) % 16], ((e - 160) / 16) as u32),
            _ => tq1_0_trit(self.qh[(e - 240) % 4], ((e - 240) / 4) as u32),
        }
    }
}

impl Block for BlockTq1_0 {
    const DTYPE: DType = DType::Tq1_0;
    const LEN: usize = QK_K;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        assert_eq!(bytes.len(), Self::BYTES, "tq1_0 block: 54 bytes");
        Self {
            qs: bytes[..48].try_into().expect("48 bytes"),
            qh: bytes[48..52].try_into().expect("4 bytes"),
            d: f16_at(bytes, 52),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        assert_eq!(out.len(), Self::BYTES, "tq1_0 block: 54 bytes");
        out[..48].copy_from_slice(&self.qs);
        out[48..52].copy_from_slice(&self.qh);
        out[52..].copy_from_slice(&self.d.to_le_bytes());
    }

    fn decode(&self, out: &mut [f64]) {
        assert_eq!(out.len(), QK_K, "decoded block");
        decode_offset_codes((0..QK_K).map(|e| self.trit(e)), self.d, out);
    }

    fn decode_f32(&self, out: &mut [f32]) {
        assert_eq!(out.len(), QK_K, "decoded block");
        decode_offset_codes_f32((0..QK_K).map(|e| self.trit(e)), self.d, out);
    }
}
