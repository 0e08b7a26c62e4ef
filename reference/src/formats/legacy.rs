//! The legacy 32-element block formats (section 2.3 of the interface spec) and their reference
//! quantizers (section 2.7).
//!
//! Each format has one `#[repr(C)]` struct whose size equals the on-device block size, and one
//! [`Block`] implementation that holds everything about its layout: byte offsets, the packing
//! of the quant values, the exact (f64) and ggml (f32) decoders and the reference quantizer.
//!
//! Packing shared by the nibble formats: byte `qs[j]` (0 ≤ j < 16) holds element j in its low
//! nibble and element j + 16 in its high nibble; for the 5-bit formats bit i of the
//! little-endian u32 `qh` is bit 4 of element i.

use half::f16;

use super::float::{c_f32_to_i8, f32_to_f16};
use super::DType;

/// Elements per block of every legacy format (ggml's QK4_0 = … = QK8_1 = 32).
pub const QK: usize = 32;
const HALF: usize = QK / 2;

/// One block of a block format: its layout, decoders and reference quantizer.
pub trait Block: Copy {
    /// The element type whose blocks this struct holds.
    const DTYPE: DType;
    /// Elements per block.
    const LEN: usize;
    /// Bytes per block (the struct's own size).
    const BYTES: usize;

    /// Reads a block from its `BYTES` bytes.
    ///
    /// # Panics
    /// If `bytes.len() != BYTES`.
    fn from_bytes(bytes: &[u8]) -> Self;

    /// Writes the block's `BYTES` bytes.
    ///
    /// # Panics
    /// If `out.len() != BYTES`.
    fn to_bytes(&self, out: &mut [u8]);

    /// The exact values of the block's `LEN` elements (every value is exact in f64).
    ///
    /// # Panics
    /// If `out.len() != LEN`.
    fn decode(&self, out: &mut [f64]);

    /// ggml's `dequantize_row_<t>` for one block: f32 arithmetic in ggml's operation order.
    ///
    /// # Panics
    /// If `out.len() != LEN`.
    fn decode_f32(&self, out: &mut [f32]);

    /// ggml's `quantize_row_<t>_ref` for one block of `LEN` values, bit for bit.
    ///
    /// Formats whose reference quantizer vkdiff does not reproduce (docs/interface.md §2.7: the
    /// K-quants and i-quants: [`DType::has_quantizer`] is false) keep this default, which
    /// panics; the public
    /// [`quantize`](super::quantize) returns [`Error::NoQuantizer`](crate::Error::NoQuantizer)
    /// for them before it would be called.
    ///
    /// # Panics
    /// If `src.len() != LEN`, or the format has no specified quantizer.
    fn quantize(src: &[f32]) -> Self {
        panic!(
            "{}: no reference quantizer ({} values given); DType::has_quantizer is false",
            Self::DTYPE,
            src.len()
        )
    }

    /// Per element, the sum of the magnitudes of the terms that make it up: |x| for scaled
    /// formats, |d·q| + |m| for formats with a minimum. An error analysis must scale with this,
    /// not with |x|, since a kernel may fold d and m into separate sums (d·Σq·b + m·Σb).
    ///
    /// # Panics
    /// If `out.len() != LEN`.
    fn magnitude(&self, out: &mut [f64]) {
        self.decode(out);
        out.iter_mut().for_each(|x| *x = x.abs());
    }
}

/// [`Block::magnitude`] of an affine block: |x − m| + |m| = |d·q| + |m| (exact in f64).
fn magnitude_affine<B: Block>(block: &B, m: f16, out: &mut [f64]) {
    block.decode(out);
    let m = m.to_f64();
    out.iter_mut().for_each(|x| *x = (*x - m).abs() + m.abs());
}

/// A q4_0 block (18 bytes): `d` at 0, `qs` at 2; x = d·(q − 8) with 4-bit q.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ4_0 {
    /// Scale.
    pub d: f16,
    /// Nibbles: element j low, element j + 16 high.
    pub qs: [u8; HALF],
}

/// A q4_1 block (20 bytes): `d` at 0, `m` at 2, `qs` at 4; x = d·q + m with 4-bit q.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ4_1 {
    /// Scale.
    pub d: f16,
    /// Offset (the block minimum).
    pub m: f16,
    /// Nibbles: element j low, element j + 16 high.
    pub qs: [u8; HALF],
}

/// A q5_0 block (22 bytes): `d` at 0, `qh` at 2, `qs` at 6; x = d·(q − 16) with 5-bit q.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ5_0 {
    /// Scale.
    pub d: f16,
    /// Little-endian u32 whose bit i is bit 4 of element i (kept as bytes: it sits at a
    /// 2-byte-aligned offset).
    pub qh: [u8; 4],
    /// Low 4 bits: element j low nibble, element j + 16 high nibble.
    pub qs: [u8; HALF],
}

/// A q5_1 block (24 bytes): `d` at 0, `m` at 2, `qh` at 4, `qs` at 8; x = d·q + m with 5-bit q.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ5_1 {
    /// Scale.
    pub d: f16,
    /// Offset (the block minimum).
    pub m: f16,
    /// Little-endian u32 whose bit i is bit 4 of element i.
    pub qh: [u8; 4],
    /// Low 4 bits: element j low nibble, element j + 16 high nibble.
    pub qs: [u8; HALF],
}

/// A q8_0 block (34 bytes): `d` at 0, `qs` at 2; x = d·q with signed 8-bit q.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ8_0 {
    /// Scale.
    pub d: f16,
    /// One signed quant per element.
    pub qs: [i8; QK],
}

/// A q8_1 block (36 bytes): `d` at 0, `s` at 2, `qs` at 4; x = d·q. `s` = d·Σq is only used by
/// the integer-dot kernels and plays no part in the element values.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ8_1 {
    /// Scale.
    pub d: f16,
    /// d times the sum of the quants, rounded to f16.
    pub s: f16,
    /// One signed quant per element.
    pub qs: [i8; QK],
}

const _: () = assert!(std::mem::size_of::<BlockQ4_0>() == 18);
const _: () = assert!(std::mem::size_of::<BlockQ4_1>() == 20);
const _: () = assert!(std::mem::size_of::<BlockQ5_0>() == 22);
const _: () = assert!(std::mem::size_of::<BlockQ5_1>() == 24);
const _: () = assert!(std::mem::size_of::<BlockQ8_0>() == 34);
const _: () = assert!(std::mem::size_of::<BlockQ8_1>() == 36);

// ---------------------------------------------------------------------------------------------
// Byte access.

fn f16_at(bytes: &[u8], at: usize) -> f16 {
    f16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn put_f16(out: &mut [u8], at: usize, v: f16) {
    out[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

fn array_at<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    bytes[at..at + N].try_into().expect("slice of length N")
}

fn i8_array_at(bytes: &[u8], at: usize) -> [i8; QK] {
    std::array::from_fn(|i| bytes[at + i] as i8)
}

fn put_i8s(out: &mut [u8], at: usize, qs: &[i8; QK]) {
    for (o, &q) in out[at..at + QK].iter_mut().zip(qs) {
        *o = q as u8;
    }
}

#[track_caller]
fn check_len(what: &str, got: usize, want: usize) {
    assert_eq!(got, want, "{what}: expected {want}, got {got}");
}

// ---------------------------------------------------------------------------------------------
// Quant packing.

/// The 32 unsigned quants of a nibble block: low nibbles first, then high nibbles.
fn unpack_nibbles(qs: &[u8; HALF]) -> [u8; QK] {
    std::array::from_fn(|i| {
        if i < HALF {
            qs[i] & 0xF
        } else {
            qs[i - HALF] >> 4
        }
    })
}

/// The 32 unsigned 5-bit quants of a q5 block.
fn unpack_5bit(qs: &[u8; HALF], qh: &[u8; 4]) -> [u8; QK] {
    let h = u32::from_le_bytes(*qh);
    let mut q = unpack_nibbles(qs);
    for (i, v) in q.iter_mut().enumerate() {
        *v |= (((h >> i) & 1) as u8) << 4;
    }
    q
}

/// Packs the low nibbles of 32 quants (element j low, element j + 16 high) and bit 4 of each
/// into `qh`, as ggml's q5 quantizers do.
fn pack_5bit(q: &[u8; QK]) -> ([u8; HALF], [u8; 4]) {
    let qs = std::array::from_fn(|j| (q[j] & 0x0F) | ((q[j + HALF] & 0x0F) << 4));
    let h = q
        .iter()
        .enumerate()
        .fold(0u32, |h, (i, &v)| h | (u32::from((v & 0x10) >> 4) << i));
    (qs, h.to_le_bytes())
}

// ---------------------------------------------------------------------------------------------
// Decoding helpers: x = d·(q − offset) + m.

fn decode_exact(q: &[u8; QK], offset: i32, d: f16, m: f64, out: &mut [f64]) {
    check_len("decoded block", out.len(), QK);
    let d = d.to_f64();
    for (o, &v) in out.iter_mut().zip(q) {
        // d has 11 significant bits and q at most 6, so d·q is exact; adding m (also an f16,
        // both with lsb ≥ 2^-24 and magnitude < 2^21) stays within 53 bits: exact too.
        *o = d * f64::from(i32::from(v) - offset) + m;
    }
}

/// ggml's symmetric formats: `y = x0*d` with `int x0` and `float d`.
fn decode_sym_f32(q: &[u8; QK], offset: i32, d: f16, out: &mut [f32]) {
    check_len("decoded block", out.len(), QK);
    let d = d.to_f32();
    for (o, &v) in out.iter_mut().zip(q) {
        *o = (i32::from(v) - offset) as f32 * d;
    }
}

/// ggml's affine formats: `y = x0*d + m`, the product and the sum each rounded to f32.
fn decode_affine_f32(q: &[u8; QK], d: f16, m: f16, out: &mut [f32]) {
    check_len("decoded block", out.len(), QK);
    let (d, m) = (d.to_f32(), m.to_f32());
    for (o, &v) in out.iter_mut().zip(q) {
        *o = f32::from(v) * d + m;
    }
}

// ---------------------------------------------------------------------------------------------
// Reference-quantizer helpers (all f32, in ggml's order).

/// `d ? 1.0f/d : 0.0f`.
fn inverse(d: f32) -> f32 {
    if d != 0.0 {
        1.0 / d
    } else {
        0.0
    }
}

/// The signed value of largest magnitude (first one on ties; NaN never wins), starting from 0.
fn signed_absmax(src: &[f32]) -> f32 {
    let (mut amax, mut vmax) = (0.0f32, 0.0f32);
    for &v in src {
        if amax < v.abs() {
            amax = v.abs();
            vmax = v;
        }
    }
    vmax
}

/// `(min, max)` by `if (v < min) min = v; if (v > max) max = v;` from (FLT_MAX, -FLT_MAX).
fn min_max(src: &[f32]) -> (f32, f32) {
    let (mut min, mut max) = (f32::MAX, -f32::MAX);
    for &v in src {
        if v < min {
            min = v;
        }
        if v > max {
            max = v;
        }
    }
    (min, max)
}

/// `amax = MAX(amax, fabsf(v))` from 0 with C's `((a) > (b) ? (a) : (b))`.
fn absmax(src: &[f32]) -> f32 {
    src.iter().fold(
        0.0f32,
        |amax, &v| if amax > v.abs() { amax } else { v.abs() },
    )
}

/// `MIN(top, (int8_t)v)` stored into a `uint8_t`.
fn clamp_i8(v: f32, top: i32) -> u8 {
    c_f32_to_i8(v).min(top) as u8
}

/// q4_0/q5_0: `d = vmax / -half_levels`, `q = MIN(top, (int8_t)(x*id + half_levels + 0.5))`.
fn quantize_sym(src: &[f32], half_levels: f32, top: i32) -> (f16, [u8; QK]) {
    check_len("quantized block", src.len(), QK);
    let d = signed_absmax(src) / -half_levels;
    let id = inverse(d);
    let q = std::array::from_fn(|i| clamp_i8(src[i] * id + (half_levels + 0.5), top));
    (f16::from_bits(f32_to_f16(d)), q)
}

/// q4_1/q5_1: `d = (max − min) / top`, `q = MIN(top, (int8_t)((x − min)*id + 0.5))`.
fn quantize_affine(src: &[f32], top: i32) -> (f16, f16, [u8; QK]) {
    check_len("quantized block", src.len(), QK);
    let (min, max) = min_max(src);
    let d = (max - min) / top as f32;
    let id = inverse(d);
    let q = std::array::from_fn(|i| clamp_i8((src[i] - min) * id + 0.5, top));
    (
        f16::from_bits(f32_to_f16(d)),
        f16::from_bits(f32_to_f16(min)),
        q,
    )
}

/// q8_0/q8_1: `d = amax / 127`, `q = roundf(x*id)` (stored through an `int8_t`). Returns d
/// unrounded (q8_1's s uses it).
fn quantize_q8(src: &[f32]) -> (f32, [i8; QK]) {
    check_len("quantized block", src.len(), QK);
    let d = absmax(src) / 127.0;
    let id = inverse(d);
    // f32::round is roundf: halves away from zero.
    let q = std::array::from_fn(|i| c_f32_to_i8((src[i] * id).round()) as i8);
    (d, q)
}

// ---------------------------------------------------------------------------------------------
// The formats.

impl Block for BlockQ4_0 {
    const DTYPE: DType = DType::Q4_0;
    const LEN: usize = QK;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        check_len("q4_0 block", bytes.len(), Self::BYTES);
        Self {
            d: f16_at(bytes, 0),
            qs: array_at(bytes, 2),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        check_len("q4_0 block", out.len(), Self::BYTES);
        put_f16(out, 0, self.d);
        out[2..].copy_from_slice(&self.qs);
    }

    fn decode(&self, out: &mut [f64]) {
        decode_exact(&unpack_nibbles(&self.qs), 8, self.d, 0.0, out);
    }

    fn decode_f32(&self, out: &mut [f32]) {
        decode_sym_f32(&unpack_nibbles(&self.qs), 8, self.d, out);
    }

    fn quantize(src: &[f32]) -> Self {
        let (d, q) = quantize_sym(src, 8.0, 15);
        // `qs[j] = xi0 | (xi1 << 4)` on uint8_t values: no masking, high bits fall off.
        Self {
            d,
            qs: std::array::from_fn(|j| q[j] | (q[j + HALF] << 4)),
        }
    }
}

impl Block for BlockQ4_1 {
    const DTYPE: DType = DType::Q4_1;
    const LEN: usize = QK;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        check_len("q4_1 block", bytes.len(), Self::BYTES);
        Self {
            d: f16_at(bytes, 0),
            m: f16_at(bytes, 2),
            qs: array_at(bytes, 4),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        check_len("q4_1 block", out.len(), Self::BYTES);
        put_f16(out, 0, self.d);
        put_f16(out, 2, self.m);
        out[4..].copy_from_slice(&self.qs);
    }

    fn decode(&self, out: &mut [f64]) {
        decode_exact(&unpack_nibbles(&self.qs), 0, self.d, self.m.to_f64(), out);
    }

    fn decode_f32(&self, out: &mut [f32]) {
        decode_affine_f32(&unpack_nibbles(&self.qs), self.d, self.m, out);
    }

    fn magnitude(&self, out: &mut [f64]) {
        magnitude_affine(self, self.m, out);
    }

    fn quantize(src: &[f32]) -> Self {
        let (d, m, q) = quantize_affine(src, 15);
        Self {
            d,
            m,
            qs: std::array::from_fn(|j| q[j] | (q[j + HALF] << 4)),
        }
    }
}

impl Block for BlockQ5_0 {
    const DTYPE: DType = DType::Q5_0;
    const LEN: usize = QK;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        check_len("q5_0 block", bytes.len(), Self::BYTES);
        Self {
            d: f16_at(bytes, 0),
            qh: array_at(bytes, 2),
            qs: array_at(bytes, 6),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        check_len("q5_0 block", out.len(), Self::BYTES);
        put_f16(out, 0, self.d);
        out[2..6].copy_from_slice(&self.qh);
        out[6..].copy_from_slice(&self.qs);
    }

    fn decode(&self, out: &mut [f64]) {
        decode_exact(&unpack_5bit(&self.qs, &self.qh), 16, self.d, 0.0, out);
    }

    fn decode_f32(&self, out: &mut [f32]) {
        decode_sym_f32(&unpack_5bit(&self.qs, &self.qh), 16, self.d, out);
    }

    fn quantize(src: &[f32]) -> Self {
        let (d, q) = quantize_sym(src, 16.0, 31);
        let (qs, qh) = pack_5bit(&q);
        Self { d, qh, qs }
    }
}

impl Block for BlockQ5_1 {
    const DTYPE: DType = DType::Q5_1;
    const LEN: usize = QK;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        check_len("q5_1 block", bytes.len(), Self::BYTES);
        Self {
            d: f16_at(bytes, 0),
            m: f16_at(bytes, 2),
            qh: array_at(bytes, 4),
            qs: array_at(bytes, 8),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        check_len("q5_1 block", out.len(), Self::BYTES);
        put_f16(out, 0, self.d);
        put_f16(out, 2, self.m);
        out[4..8].copy_from_slice(&self.qh);
        out[8..].copy_from_slice(&self.qs);
    }

    fn decode(&self, out: &mut [f64]) {
        decode_exact(
            &unpack_5bit(&self.qs, &self.qh),
            0,
            self.d,
            self.m.to_f64(),
            out,
        );
    }

    fn decode_f32(&self, out: &mut [f32]) {
        decode_affine_f32(&unpack_5bit(&self.qs, &self.qh), self.d, self.m, out);
    }

    fn magnitude(&self, out: &mut [f64]) {
        magnitude_affine(self, self.m, out);
    }

    fn quantize(src: &[f32]) -> Self {
        // Section 2.7: "as q4_1 with 31 levels". For finite inputs (x − min)·id + 0.5 < 32, so
        // the clamp never bites and this equals a plain `(uint8_t)` conversion as well.
        let (d, m, q) = quantize_affine(src, 31);
        let (qs, qh) = pack_5bit(&q);
        Self { d, m, qh, qs }
    }
}

impl Block for BlockQ8_0 {
    const DTYPE: DType = DType::Q8_0;
    const LEN: usize = QK;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        check_len("q8_0 block", bytes.len(), Self::BYTES);
        Self {
            d: f16_at(bytes, 0),
            qs: i8_array_at(bytes, 2),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        check_len("q8_0 block", out.len(), Self::BYTES);
        put_f16(out, 0, self.d);
        put_i8s(out, 2, &self.qs);
    }

    fn decode(&self, out: &mut [f64]) {
        check_len("decoded block", out.len(), QK);
        let d = self.d.to_f64();
        for (o, &q) in out.iter_mut().zip(&self.qs) {
            *o = d * f64::from(q);
        }
    }

    fn decode_f32(&self, out: &mut [f32]) {
        check_len("decoded block", out.len(), QK);
        let d = self.d.to_f32();
        for (o, &q) in out.iter_mut().zip(&self.qs) {
            *o = f32::from(q) * d;
        }
    }

    fn quantize(src: &[f32]) -> Self {
        let (d, qs) = quantize_q8(src);
        Self {
            d: f16::from_bits(f32_to_f16(d)),
            qs,
        }
    }
}

impl Block for BlockQ8_1 {
    const DTYPE: DType = DType::Q8_1;
    const LEN: usize = QK;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        check_len("q8_1 block", bytes.len(), Self::BYTES);
        Self {
            d: f16_at(bytes, 0),
            s: f16_at(bytes, 2),
            qs: i8_array_at(bytes, 4),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        check_len("q8_1 block", out.len(), Self::BYTES);
        put_f16(out, 0, self.d);
        put_f16(out, 2, self.s);
        put_i8s(out, 4, &self.qs);
    }

    fn decode(&self, out: &mut [f64]) {
        check_len("decoded block", out.len(), QK);
        let d = self.d.to_f64();
        for (o, &q) in out.iter_mut().zip(&self.qs) {
            *o = d * f64::from(q);
        }
    }

    /// ggml has no `dequantize_row_q8_1`; this is `q*d` in f32, which is exact.
    fn decode_f32(&self, out: &mut [f32]) {
        check_len("decoded block", out.len(), QK);
        let d = self.d.to_f32();
        for (o, &q) in out.iter_mut().zip(&self.qs) {
            *o = f32::from(q) * d;
        }
    }

    fn quantize(src: &[f32]) -> Self {
        let (d, qs) = quantize_q8(src);
        // `s = sum*d` with `int sum` of the stored quants and the unrounded f32 d.
        let sum: i32 = qs.iter().map(|&q| i32::from(q)).sum();
        Self {
            d: f16::from_bits(f32_to_f16(d)),
            s: f16::from_bits(f32_to_f16(sum as f32 * d)),
            qs,
        }
    }
}
