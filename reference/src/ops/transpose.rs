//! Decoding eight A rows at once straight into a k-major panel, vectorized across the rows.
//!
//! The panel the tile kernel reads holds, for each k, the values of [`LANES`] rows side by
//! side. Decoding row by row and scattering each value to its lane costs a store per element.
//! Here the *stored* quants of eight rows are transposed first (bytes or 16-bit words, a few
//! SSE2 unpacks per 128 bytes), so that each k's eight values are computed together, eight
//! lanes wide, and written with one contiguous store. The values are the block decoders' own
//! expressions on the same operands, lane by lane (`rows8_is_dequantize` checks every format
//! against [`dequantize_into`](crate::formats::dequantize_into)).
//!
//! For a mat-vec the values need not be stored at all: [`dot_rows8`] adds each one to its sum
//! as it is made (`dot_rows8_is_the_sequential_dot_product`). Both go through one [`Step`] per
//! format.

use super::prim::{f16_at, f16_table, madd, LANES};
use crate::DType;

/// Whether [`decode_rows8`] handles `dtype` (whole blocks, 32 elements but q4_K's 256; for
/// f16 whole groups of 32).
pub(crate) fn vertical_format(dtype: DType) -> bool {
    VERTICAL_FORMATS.contains(&dtype)
}

/// The formats [`vertical_format`] takes, in the order the tests walk them.
pub(crate) const VERTICAL_FORMATS: [DType; 7] = [
    DType::F16,
    DType::Q4_0,
    DType::Q4_1,
    DType::Q5_0,
    DType::Q5_1,
    DType::Q8_0,
    DType::Q4_K,
];

/// Column j of an 8 × 16 byte matrix: the eight rows' byte j.
type Cols16 = [[u8; 8]; 16];

/// Transposes eight 16-byte rows.
#[inline(always)]
fn transpose_8x16(rows: [&[u8]; 8]) -> Cols16 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let mut out = [[0u8; 8]; 16];
        // SAFETY: SSE2 is part of x86_64; each row holds at least 16 bytes (checked by the
        // slice below) and `out` is 128 bytes.
        unsafe {
            let mut a = [_mm_setzero_si128(); 8];
            for (v, r) in a.iter_mut().zip(rows) {
                *v = _mm_loadu_si128(r[..16].as_ptr() as *const __m128i);
            }
            // Pairs of rows interleaved by byte, then by 16 bits, then by 32 bits.
            let b = [
                _mm_unpacklo_epi8(a[0], a[1]),
                _mm_unpackhi_epi8(a[0], a[1]),
                _mm_unpacklo_epi8(a[2], a[3]),
                _mm_unpackhi_epi8(a[2], a[3]),
                _mm_unpacklo_epi8(a[4], a[5]),
                _mm_unpackhi_epi8(a[4], a[5]),
                _mm_unpacklo_epi8(a[6], a[7]),
                _mm_unpackhi_epi8(a[6], a[7]),
            ];
            let c = [
                _mm_unpacklo_epi16(b[0], b[2]),
                _mm_unpackhi_epi16(b[0], b[2]),
                _mm_unpacklo_epi16(b[1], b[3]),
                _mm_unpackhi_epi16(b[1], b[3]),
                _mm_unpacklo_epi16(b[4], b[6]),
                _mm_unpackhi_epi16(b[4], b[6]),
                _mm_unpacklo_epi16(b[5], b[7]),
                _mm_unpackhi_epi16(b[5], b[7]),
            ];
            let d = [
                _mm_unpacklo_epi32(c[0], c[4]),
                _mm_unpackhi_epi32(c[0], c[4]),
                _mm_unpacklo_epi32(c[1], c[5]),
                _mm_unpackhi_epi32(c[1], c[5]),
                _mm_unpacklo_epi32(c[2], c[6]),
                _mm_unpackhi_epi32(c[2], c[6]),
                _mm_unpacklo_epi32(c[3], c[7]),
                _mm_unpackhi_epi32(c[3], c[7]),
            ];
            for (i, v) in d.iter().enumerate() {
                _mm_storeu_si128(out[2 * i..].as_mut_ptr() as *mut __m128i, *v);
            }
        }
        out
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::array::from_fn(|j| std::array::from_fn(|r| rows[r][j]))
    }
}

/// Column j of an 8 × 8 matrix of 16-bit words: the eight rows' word j.
type Cols8x16 = [[u16; 8]; 8];

/// Transposes eight rows of eight little-endian 16-bit words (16 bytes each).
#[inline(always)]
fn transpose_8x8_u16(rows: [&[u8]; 8]) -> Cols8x16 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let mut out = [[0u16; 8]; 8];
        // SAFETY: SSE2 is part of x86_64; each row holds at least 16 bytes (checked by the
        // slice below) and `out` is 128 bytes.
        unsafe {
            let mut a = [_mm_setzero_si128(); 8];
            for (v, r) in a.iter_mut().zip(rows) {
                *v = _mm_loadu_si128(r[..16].as_ptr() as *const __m128i);
            }
            let b = [
                _mm_unpacklo_epi16(a[0], a[1]),
                _mm_unpackhi_epi16(a[0], a[1]),
                _mm_unpacklo_epi16(a[2], a[3]),
                _mm_unpackhi_epi16(a[2], a[3]),
                _mm_unpacklo_epi16(a[4], a[5]),
                _mm_unpackhi_epi16(a[4], a[5]),
                _mm_unpacklo_epi16(a[6], a[7]),
                _mm_unpackhi_epi16(a[6], a[7]),
            ];
            let c = [
                _mm_unpacklo_epi32(b[0], b[2]),
                _mm_unpackhi_epi32(b[0], b[2]),
                _mm_unpacklo_epi32(b[1], b[3]),
                _mm_unpackhi_epi32(b[1], b[3]),
                _mm_unpacklo_epi32(b[4], b[6]),
                _mm_unpackhi_epi32(b[4], b[6]),
                _mm_unpacklo_epi32(b[5], b[7]),
                _mm_unpackhi_epi32(b[5], b[7]),
            ];
            for i in 0..4 {
                let lo = _mm_unpacklo_epi64(c[i], c[i + 4]);
                let hi = _mm_unpackhi_epi64(c[i], c[i + 4]);
                _mm_storeu_si128(out[2 * i].as_mut_ptr() as *mut __m128i, lo);
                _mm_storeu_si128(out[2 * i + 1].as_mut_ptr() as *mut __m128i, hi);
            }
        }
        out
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::array::from_fn(|j| {
            std::array::from_fn(|r| u16::from_le_bytes([rows[r][2 * j], rows[r][2 * j + 1]]))
        })
    }
}

/// The instructions a decode body is compiled with, as a const parameter (one body serves
/// every target-feature wrapper; closures would not get the features): the x86_64 baseline or
/// another architecture.
pub(crate) const BASE: u8 = 0;
/// AVX2, F16C and FMA.
pub(crate) const AVX2: u8 = 1;
/// AVX-512F, BW and DQ besides.
pub(crate) const AVX512: u8 = 2;

/// `a·b + c` where the product a·b is exact (a block scale of at most 17 significant bits
/// times an integer of at most 8): a single rounding either way, so the fused multiply-add,
/// where the caller has FMA, gives the same bits (zeros' signs, ±∞ and NaN included).
#[inline(always)]
fn exact_madd<const ISA: u8>(a: f64, b: f64, c: f64) -> f64 {
    if ISA >= AVX2 {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// The 8 lanes l0 .. l0 + 8 of panel row k. (Its bounds check also keeps the compiler from
/// vectorizing the callers' loops over k, with scattered stores, instead of over the lanes.)
#[inline(always)]
fn lanes(panel: &mut [f64], k: usize, l0: usize) -> &mut [f64; 8] {
    (&mut panel[k * LANES + l0..k * LANES + l0 + 8])
        .try_into()
        .expect("8 lanes")
}

/// Eight f16 words to their exact values, as [`float::f16_to_f64`](crate::formats::float)
/// gives them: with F16C the same instructions half uses per value (vcvtph2ps, then an exact
/// widening), else the table built from that function.
#[inline(always)]
fn f16x8<const ISA: u8>(w: &[u16; 8], out: &mut [f64; 8]) {
    #[cfg(target_arch = "x86_64")]
    if ISA >= AVX2 {
        // SAFETY: `w` is 16 bytes; ISA ≥ AVX2 as f16x8_at needs.
        return unsafe { f16x8_at::<ISA>(w.as_ptr() as *const u8, out) };
    }
    let table: &[f64; 65536] = f16_table().try_into().expect("every f16");
    for (o, &x) in out.iter_mut().zip(w) {
        *o = table[usize::from(x)];
    }
}

/// [`f16x8`] of eight little-endian f16 in 16 bytes, for callers with F16C (ISA ≥ AVX2).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn f16x8_bytes<const ISA: u8>(b: &[u8; 16], out: &mut [f64; 8]) {
    assert!(ISA >= AVX2, "F16C");
    // SAFETY: `b` is 16 bytes; ISA ≥ AVX2 (checked).
    unsafe { f16x8_at::<ISA>(b.as_ptr(), out) }
}

/// # Safety
/// `at` points to 16 readable bytes; only instantiated with ISA ≥ AVX2 inside functions
/// compiled with the `f16c` and `avx` target features, on CPUs that have them.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn f16x8_at<const ISA: u8>(at: *const u8, out: &mut [f64; 8]) {
    use std::arch::x86_64::*;
    let f = _mm256_cvtph_ps(_mm_loadu_si128(at as *const __m128i));
    let lo = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
    let hi = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
    _mm256_storeu_pd(out.as_mut_ptr(), lo);
    _mm256_storeu_pd(out[4..].as_mut_ptr(), hi);
}

// No closures below (`array::map`, `from_fn`): a closure is not compiled with its caller's
// target features, and these run inside the AVX-512/AVX2 copies of the decoder.

/// The per-row f16 field at byte `at` of each row's block `blk`. With
/// F16C the eight words are gathered in registers and converted at once: eight scalar stores
/// read back as one vector would stall the load (no store forwarding).
#[inline(always)]
fn scales<const ISA: u8>(blk: &[&[u8]; 8], at: usize) -> [f64; 8] {
    let mut d = [0.0; 8];
    #[cfg(target_arch = "x86_64")]
    if ISA >= AVX2 {
        use std::arch::x86_64::*;
        let (mut lo, mut hi) = (0u64, 0u64);
        for r in 0..4 {
            let (a, b) = (&blk[r][at..], &blk[r + 4][at..]);
            lo |= u64::from(u16::from_le_bytes([a[0], a[1]])) << (16 * r);
            hi |= u64::from(u16::from_le_bytes([b[0], b[1]])) << (16 * r);
        }
        // SAFETY: only instantiated with ISA ≥ AVX2 inside functions compiled with AVX and
        // F16C, on CPUs that have them; `d` is 64 bytes.
        unsafe {
            let f = _mm256_cvtph_ps(_mm_set_epi64x(hi as i64, lo as i64));
            _mm256_storeu_pd(d.as_mut_ptr(), _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
            let f_hi = _mm256_extractf128_ps(f, 1);
            _mm256_storeu_pd(d[4..].as_mut_ptr(), _mm256_cvtps_pd(f_hi));
        }
        return d;
    }
    for (x, b) in d.iter_mut().zip(blk) {
        *x = f16_at(b, at);
    }
    d
}

/// The per-row little-endian u32 at byte `at` of the blocks.
#[inline(always)]
fn words(blk: &[&[u8]; 8], at: usize) -> [u32; 8] {
    let mut w = [0; 8];
    for (x, b) in w.iter_mut().zip(blk) {
        let b = &b[at..at + 4];
        *x = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    w
}

/// `len` bytes at byte `at` of each row's `bytes`.
#[inline(always)]
fn part<'a>(bytes: &[&'a [u8]; 8], at: usize, len: usize) -> [&'a [u8]; 8] {
    let mut p: [&[u8]; 8] = [&[]; 8];
    for (x, b) in p.iter_mut().zip(bytes) {
        *x = &b[at..at + len];
    }
    p
}

/// Bit j of each row's `qh` moved to bit 4.
#[inline(always)]
fn high(qh: &[u32; 8], j: usize) -> [i8; 8] {
    let mut h = [0; 8];
    for (x, &q) in h.iter_mut().zip(qh) {
        *x = (((q >> j) & 1) << 4) as i8;
    }
    h
}

/// Column j of an 8 × 16 matrix of small signed integers.
type Ints16 = [[i8; 8]; 16];

/// The low and the high nibble of every byte of `cols`, less `offset`: the quants of elements
/// j and j + 16 of a 32-element block (q4_0 … q5_1), 128 bytes at a time.
#[inline(always)]
fn nibbles(cols: &Cols16, offset: i8) -> (Ints16, Ints16) {
    let (mut lo, mut hi) = ([[0; 8]; 16], [[0; 8]; 16]);
    for j in 0..16 {
        for r in 0..8 {
            lo[j][r] = (cols[j][r] & 0xF) as i8 - offset;
            hi[j][r] = (cols[j][r] >> 4) as i8 - offset;
        }
    }
    (lo, hi)
}

/// The q4_K/q5_K 6-bit scale and min of sub-block `sb` of eight rows, from the rows' twelve
/// scale bytes transposed (`sc[i][r]` is byte i of row r):
/// [`scale_min_k4`](crate::formats::scale_min_k4) lane by lane.
#[inline(always)]
fn scale_min_k4x8(sc: &Cols16, sb: usize) -> ([i8; 8], [i8; 8]) {
    let (mut s, mut m) = ([0; 8], [0; 8]);
    for r in 0..8 {
        let (x, y) = if sb < 4 {
            (sc[sb][r] & 63, sc[sb + 4][r] & 63)
        } else {
            (
                (sc[sb + 4][r] & 0xF) | ((sc[sb - 4][r] >> 6) << 4),
                (sc[sb + 4][r] >> 4) | ((sc[sb][r] >> 6) << 4),
            )
        };
        (s[r], m[r]) = (x as i8, y as i8);
    }
    (s, m)
}

/// Lanes `out[r] = d[r]·q[r] + c[r]`: the block formats' values, d·q exact (c = +0 turns −0
/// into +0 as the block decoders do; c = −0 leaves d·q as it is).
#[inline(always)]
fn affine<const ISA: u8>(out: &mut [f64; 8], d: &[f64; 8], q: &[i8; 8], c: &[f64; 8]) {
    for r in 0..8 {
        out[r] = exact_madd::<ISA>(d[r], f64::from(q[r]), c[r]);
    }
}

/// One step of a vertical decoder: the stored quants of eight rows for [`Step::LEN`]
/// consecutive elements, transposed, with the scales they need (64-byte aligned: the mat-vec
/// reads the scales as whole vectors, and one split across cache lines costs two reads). Both consumers, the panel
/// ([`decode_rows8`]) and the mat-vec straight from registers ([`dot_rows8`]), go through it,
/// so each format's expressions are written once.
pub(crate) trait Step: Copy {
    /// Elements per step.
    const LEN: usize;
    /// Bytes of a block of the format (for f16 a group of 32 values).
    const BYTES: usize;
    /// Steps per block.
    const PER_BLOCK: usize = 1;
    /// A placeholder to fill arrays of steps with (no closures, see above).
    const EMPTY: Self;
    /// What the steps of a block share, worked out once a block (q4_K: the scales of its
    /// eight sub-blocks).
    type Shared: Copy;
    /// A placeholder, as [`Step::EMPTY`].
    const NO_SHARED: Self::Shared;
    /// The shared part of the block whose bytes `blk` holds in each row (exactly
    /// [`Step::BYTES`] each, so that the constant offsets below need no bounds checks).
    fn shared<const ISA: u8>(blk: &[&[u8]; 8]) -> Self::Shared;
    /// Step p of that block.
    fn load<const ISA: u8>(shared: &Self::Shared, blk: &[&[u8]; 8], p: usize) -> Self;
    /// The eight rows' values of the step's element j.
    fn value<const ISA: u8>(&self, j: usize, out: &mut [f64; 8]);
}

/// f16: 32 elements a step, the eight rows' words side by side.
#[derive(Clone, Copy)]
#[repr(align(64))]
struct F16Step([[u16; 8]; 32]);

impl Step for F16Step {
    const LEN: usize = 32;
    const BYTES: usize = 64;
    const EMPTY: Self = F16Step([[0; 8]; 32]);
    type Shared = ();
    const NO_SHARED: () = ();
    fn shared<const ISA: u8>(_: &[&[u8]; 8]) {}
    #[inline(always)]
    fn load<const ISA: u8>(_: &(), blk: &[&[u8]; 8], _: usize) -> Self {
        let mut w = [[0; 8]; 32];
        for g in 0..4 {
            let cols = transpose_8x8_u16(part(blk, 16 * g, 16));
            w[8 * g..8 * g + 8].copy_from_slice(&cols);
        }
        F16Step(w)
    }
    #[inline(always)]
    fn value<const ISA: u8>(&self, j: usize, out: &mut [f64; 8]) {
        f16x8::<ISA>(&self.0[j], out)
    }
}

/// The legacy block formats of one f16 scale d and 32 elements, x = d·q + c (see
/// [`affine`]); `F` names the format ([`Q4_0`] … [`Q8_0`]).
#[derive(Clone, Copy)]
#[repr(align(64))]
struct Legacy<const F: u8> {
    d: [f64; 8],
    c: [f64; 8],
    q: [[i8; 8]; 32],
}

const Q4_0: u8 = 0;
const Q4_1: u8 = 1;
const Q5_0: u8 = 2;
const Q5_1: u8 = 3;
const Q8_0: u8 = 4;

impl<const F: u8> Step for Legacy<F> {
    const LEN: usize = 32;
    const BYTES: usize = [18, 20, 22, 24, 34][F as usize];
    const EMPTY: Self = Legacy {
        d: [0.0; 8],
        c: [0.0; 8],
        q: [[0; 8]; 32],
    };
    type Shared = ();
    const NO_SHARED: () = ();
    fn shared<const ISA: u8>(_: &[&[u8]; 8]) {}
    #[inline(always)]
    fn load<const ISA: u8>(_: &(), blk: &[&[u8]; 8], _: usize) -> Self {
        let d = scales::<ISA>(blk, 0);
        // The affine formats' m follows d; their quants start two bytes later.
        let (c, at) = match F {
            Q4_1 | Q5_1 => (scales::<ISA>(blk, 2), 4),
            _ => ([0.0; 8], 2),
        };
        let mut q = [[0; 8]; 32];
        match F {
            // x = d·(q − 8) + 0, as the block decoder computes it (the + 0 turns −0 into +0);
            // x = d·q + m for q4_1.
            Q4_0 | Q4_1 => {
                let offset = if F == Q4_0 { 8 } else { 0 };
                let (lo, hi) = nibbles(&transpose_8x16(part(blk, at, 16)), offset);
                q[..16].copy_from_slice(&lo);
                q[16..].copy_from_slice(&hi);
            }
            // The same with the fifth bit from qh: x = d·(q − 16) + 0, or d·q + m for q5_1.
            Q5_0 | Q5_1 => {
                let offset = if F == Q5_0 { 16 } else { 0 };
                let qh = words(blk, at);
                let (lo, hi) = nibbles(&transpose_8x16(part(blk, at + 4, 16)), 0);
                for j in 0..16 {
                    for (e, q4) in [(j, &lo[j]), (j + 16, &hi[j])] {
                        let h = high(&qh, e);
                        for r in 0..8 {
                            q[e][r] = (q4[r] | h[r]) - offset;
                        }
                    }
                }
            }
            // x = d·q with signed 8-bit q (+ −0 changes nothing).
            _ => {
                for half in 0..2 {
                    let cols = transpose_8x16(part(blk, 2 + 16 * half, 16));
                    for (j, col) in cols.iter().enumerate() {
                        for r in 0..8 {
                            q[16 * half + j][r] = col[r] as i8;
                        }
                    }
                }
                return Legacy { d, c: [-0.0; 8], q };
            }
        }
        Legacy { d, c, q }
    }
    #[inline(always)]
    fn value<const ISA: u8>(&self, j: usize, out: &mut [f64; 8]) {
        affine::<ISA>(out, &self.d, &self.q[j], &self.c)
    }
}

/// q4_K a quarter super-block (64 elements: sub-blocks 2p and 2p + 1) a step:
/// x = (d·sc)·q − dmin·m per sub-block, as the block decoder computes it. Sub-block 2p takes the
/// low nibbles of qs[32p ..], 2p + 1 their high nibbles.
#[derive(Clone, Copy)]
#[repr(align(64))]
struct Q4KStep {
    ds: [[f64; 8]; 2],
    dm: [[f64; 8]; 2],
    q: [[i8; 8]; 64],
}

impl Step for Q4KStep {
    const LEN: usize = 64;
    const BYTES: usize = 144;
    const PER_BLOCK: usize = 4;
    const EMPTY: Self = Q4KStep {
        ds: [[0.0; 8]; 2],
        dm: [[0.0; 8]; 2],
        q: [[0; 8]; 64],
    };
    /// d·sc and −dmin·m of each sub-block.
    type Shared = [[[f64; 8]; 2]; 8];
    const NO_SHARED: Self::Shared = [[[0.0; 8]; 2]; 8];
    #[inline(always)]
    fn shared<const ISA: u8>(blk: &[&[u8]; 8]) -> Self::Shared {
        let (d, dmin) = (scales::<ISA>(blk, 0), scales::<ISA>(blk, 2));
        // Bytes 4..16 of each row: the twelve scale bytes (and four of qs, unused).
        let sc = transpose_8x16(part(blk, 4, 16));
        let mut shared = [[[0.0; 8]; 2]; 8];
        for (sb, [ds, dm]) in shared.iter_mut().enumerate() {
            let (s, m) = scale_min_k4x8(&sc, sb);
            for r in 0..8 {
                ds[r] = d[r] * f64::from(s[r]);
                dm[r] = -(dmin[r] * f64::from(m[r]));
            }
        }
        shared
    }
    #[inline(always)]
    fn load<const ISA: u8>(shared: &Self::Shared, blk: &[&[u8]; 8], p: usize) -> Self {
        let [ds0, dm0] = shared[2 * p];
        let [ds1, dm1] = shared[2 * p + 1];
        let (ds, dm) = ([ds0, ds1], [dm0, dm1]);
        let mut q = [[0; 8]; 64];
        for half in 0..2 {
            let at = 16 + 32 * p + 16 * half;
            let (lo, hi) = nibbles(&transpose_8x16(part(blk, at, 16)), 0);
            q[16 * half..16 * half + 16].copy_from_slice(&lo);
            q[32 + 16 * half..48 + 16 * half].copy_from_slice(&hi);
        }
        Q4KStep { ds, dm, q }
    }
    #[inline(always)]
    fn value<const ISA: u8>(&self, j: usize, out: &mut [f64; 8]) {
        let h = j / 32;
        affine::<ISA>(out, &self.ds[h], &self.q[j], &self.dm[h])
    }
}

/// Calls `$body!(Type)` with the [`Step`] type of `$dtype` (a [`vertical_format`]).
macro_rules! with_step {
    ($dtype:expr, $body:ident) => {
        match $dtype {
            DType::F16 => $body!(F16Step),
            DType::Q4_0 => $body!(Legacy<Q4_0>),
            DType::Q4_1 => $body!(Legacy<Q4_1>),
            DType::Q5_0 => $body!(Legacy<Q5_0>),
            DType::Q5_1 => $body!(Legacy<Q5_1>),
            DType::Q8_0 => $body!(Legacy<Q8_0>),
            DType::Q4_K => $body!(Q4KStep),
            dtype => unreachable!("vertical_format is false for {dtype}"),
        }
    };
}

/// The steps of `rows` (whole blocks of `S`'s format): all of them, or with `quarter` = Some(q)
/// (q4_K only, the rows holding one super-block) only quarter q's.
fn steps<S: Step>(rows: &[&[u8]; 8], quarter: Option<usize>) -> std::ops::Range<usize> {
    debug_assert!(quarter.is_none() || S::PER_BLOCK == 4);
    match quarter {
        Some(q) => q..q + 1,
        None => 0..rows[0].len() / S::BYTES * S::PER_BLOCK,
    }
}

/// Step s of the rows: its block's bytes in each row (one bounds check a row) and its index in
/// the block; `shared` is the block's shared part, worked out anew at a block's first step or
/// where `first`.
#[inline(always)]
fn load<S: Step, const ISA: u8>(
    rows: &[&[u8]; 8],
    s: usize,
    shared: &mut S::Shared,
    first: bool,
) -> S {
    let blk = part(rows, s / S::PER_BLOCK * S::BYTES, S::BYTES);
    let p = s % S::PER_BLOCK;
    if first || p == 0 {
        *shared = S::shared::<ISA>(&blk);
    }
    S::load::<ISA>(shared, &blk, p)
}

/// Rows l0 .. l0 + 8 of `panel` from the rows' bytes (whole blocks of a [`vertical_format`],
/// for f16 whole groups of 32 values, the same number in each row). With `quarter` = Some(q)
/// (q4_K only), the rows hold one super-block and only its elements 64q .. 64q + 64 are
/// decoded, to panel rows 0 .. 64. `ISA`: what the caller is compiled with and the CPU has
/// ([`BASE`], [`AVX2`], [`AVX512`]).
#[inline(always)]
pub(crate) fn decode_rows8<const ISA: u8>(
    dtype: DType,
    rows: [&[u8]; 8],
    quarter: Option<usize>,
    panel: &mut [f64],
    l0: usize,
) {
    // f16 converted as it is transposed, four groups of eight words a block: faster than
    // through its step, whose words wait in memory (measured 1.2–1.5× on long rows).
    if dtype == DType::F16 {
        for (i, blk) in (0..rows[0].len() / 64).enumerate() {
            for g in 0..4 {
                let cols = transpose_8x8_u16(part(&rows, 64 * blk + 16 * g, 16));
                for (j, w) in cols.iter().enumerate() {
                    f16x8::<ISA>(w, lanes(panel, 32 * i + 8 * g + j, l0));
                }
            }
        }
        return;
    }
    macro_rules! fill {
        ($step:ty) => {
            fill::<$step, ISA>(&rows, steps::<$step>(&rows, quarter), panel, l0)
        };
    }
    with_step!(dtype, fill)
}

#[inline(always)]
fn fill<S: Step, const ISA: u8>(
    rows: &[&[u8]; 8],
    steps: std::ops::Range<usize>,
    panel: &mut [f64],
    l0: usize,
) {
    let mut shared = S::NO_SHARED;
    for (i, s) in steps.enumerate() {
        let step = load::<S, ISA>(rows, s, &mut shared, i == 0);
        for j in 0..S::LEN {
            step.value::<ISA>(j, lanes(panel, i * S::LEN + j, l0));
        }
    }
}

/// Groups of eight rows [`dot_rows8`] takes at once: 64 sums in flight, enough to hide the
/// adds' latency behind the decoding.
pub(crate) const GROUPS: usize = 8;
const _: () = assert!(GROUPS <= 8, "dot writes out eight groups");

/// The mat-vec straight from the stored rows, no panel in between: for each group g of eight
/// rows (`groups[g]`, as [`decode_rows8`] takes them, `quarter` too),
/// `acc[g][r] = acc[g][r] + x[g][r][k] · b[k]` for k = 0, 1, … in order, x the rows' exact
/// values (fused as [`madd`] says). Each step's quants of every group are loaded first, then
/// used element by element across the groups: the sums of 64 rows are in flight together.
#[inline(always)]
pub(crate) fn dot_rows8<const ISA: u8, const FUSED: bool>(
    dtype: DType,
    groups: &[[&[u8]; 8]],
    quarter: Option<usize>,
    b: &[f64],
    acc: &mut [[f64; 8]],
) {
    debug_assert_eq!(groups.len(), acc.len());
    let Some(first) = groups.first() else {
        return;
    };
    macro_rules! dot {
        ($step:ty) => {{
            let steps = steps::<$step>(first, quarter);
            let (mut gs, mut accs) = (groups.chunks_exact(GROUPS), acc.chunks_exact_mut(GROUPS));
            for (g, a) in (&mut gs).zip(&mut accs) {
                let (g, a) = (g.try_into().expect("GROUPS"), a.try_into().expect("GROUPS"));
                dot::<$step, ISA, FUSED, GROUPS>(g, steps.clone(), b, a);
            }
            for (g, a) in gs.remainder().iter().zip(accs.into_remainder()) {
                let (g, a) = (std::array::from_ref(g), std::array::from_mut(a));
                dot::<$step, ISA, FUSED, 1>(g, steps.clone(), b, a);
            }
        }};
    }
    with_step!(dtype, dot)
}

#[inline(always)]
fn dot<S: Step, const ISA: u8, const FUSED: bool, const G: usize>(
    groups: &[[&[u8]; 8]; G],
    steps: std::ops::Range<usize>,
    b: &[f64],
    acc: &mut [[f64; 8]; G],
) {
    let b = &b[..steps.len() * S::LEN];
    let mut c = *acc;
    let (mut step, mut shared) = ([S::EMPTY; G], [S::NO_SHARED; G]);
    for (i, s) in steps.enumerate() {
        for g in 0..G {
            step[g] = load::<S, ISA>(&groups[g], s, &mut shared[g], i == 0);
        }
        let b: &[f64] = &b[i * S::LEN..(i + 1) * S::LEN];
        for (j, &bj) in b.iter().enumerate() {
            // The groups written out one by one: as a loop over g the compiler vectorizes
            // across the groups (gathers) instead of across each group's eight rows.
            macro_rules! group {
                ($($g:literal)*) => {$(
                    if $g < G {
                        let mut x = [0.0; 8];
                        step[$g].value::<ISA>(j, &mut x);
                        for r in 0..8 {
                            c[$g][r] = madd::<FUSED>(c[$g][r], x[r], bj);
                        }
                    }
                )*};
            }
            group!(0 1 2 3 4 5 6 7);
        }
    }
    *acc = c;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::dequantize_into;
    use crate::ops::kernel::exact_products;
    use crate::ops::prim::sum_init;

    /// The mat-vec straight from the rows, every format and every ISA's body (fused where the
    /// products are exact, as the kernel runs it), whole rows and q4_K quarters, with eight
    /// groups at once and the groups left over: each sum has the bits of the sequential dot
    /// product of the block decoder's values (any NaN for a NaN; random scale bits give NaN,
    /// ±∞ and subnormal scales).
    #[test]
    fn dot_rows8_is_the_sequential_dot_product() {
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 32
        };
        for dtype in VERTICAL_FORMATS {
            let fused = exact_products(dtype, DType::F32);
            for (groups, quarter) in [(1, None), (3, None), (8, None), (11, None), (9, Some(2))] {
                if quarter.is_some() && dtype != DType::Q4_K {
                    continue;
                }
                let n = match quarter {
                    Some(_) => 256,
                    None => 512,
                };
                let row_bytes = dtype.row_bytes(n).unwrap();
                let rows: Vec<Vec<u8>> = (0..8 * groups)
                    .map(|_| (0..row_bytes).map(|_| next() as u8).collect())
                    .collect();
                // f32 values (as the B side), zeros of both signs among them.
                let b: Vec<f64> = (0..n)
                    .map(|k| match next() % 16 {
                        0 => 0.0,
                        1 => -0.0,
                        x => f64::from((x as f32 - 8.5) * 0.37 / (k + 1) as f32),
                    })
                    .collect();
                let range = match quarter {
                    Some(q) => 64 * q..64 * q + 64,
                    None => 0..n,
                };
                let want: Vec<f64> = rows
                    .iter()
                    .map(|row| {
                        let mut x = vec![0.0; n];
                        dequantize_into(dtype, row, &mut x).unwrap();
                        x[range.clone()]
                            .iter()
                            .zip(&b[range.clone()])
                            .map(|(x, y)| x * y)
                            .sum()
                    })
                    .collect();
                let refs: Vec<[&[u8]; 8]> = rows
                    .chunks_exact(8)
                    .map(|g| std::array::from_fn(|r| g[r].as_slice()))
                    .collect();
                let b = &b[range.clone()];
                let check = |acc: &[[f64; 8]], what: &str| {
                    for (i, (g, w)) in acc.as_flattened().iter().zip(&want).enumerate() {
                        let same = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
                        assert!(same, "{dtype} {what} {groups} groups: row {i}: {g} vs {w}");
                    }
                };
                let mut acc = vec![[sum_init(); 8]; groups];
                dot_rows8::<BASE, false>(dtype, &refs, quarter, b, &mut acc);
                check(&acc, "portable");
                #[cfg(target_arch = "x86_64")]
                {
                    use crate::ops::prim::{has_avx2, has_avx512};
                    type Args<'a> = (&'a [[&'a [u8]; 8]], Option<usize>, &'a [f64]);
                    #[target_feature(enable = "avx2,f16c,fma")]
                    unsafe fn avx2<const F: bool>(t: DType, (g, q, b): Args, acc: &mut [[f64; 8]]) {
                        dot_rows8::<AVX2, F>(t, g, q, b, acc)
                    }
                    #[target_feature(enable = "avx512f,avx512bw,avx512dq,f16c,fma")]
                    unsafe fn avx512<const F: bool>(
                        t: DType,
                        (g, q, b): Args,
                        acc: &mut [[f64; 8]],
                    ) {
                        dot_rows8::<AVX512, F>(t, g, q, b, acc)
                    }
                    type Body = unsafe fn(DType, Args, &mut [[f64; 8]]);
                    let (avx2, avx512): (Body, Body) = match fused {
                        true => (avx2::<true>, avx512::<true>),
                        false => (avx2::<false>, avx512::<false>),
                    };
                    for (name, present, body) in
                        [("avx2", has_avx2(), avx2), ("avx512", has_avx512(), avx512)]
                    {
                        if present {
                            let mut acc = vec![[sum_init(); 8]; groups];
                            // SAFETY: the CPU has the body's features (checked just above).
                            unsafe { body(dtype, (&refs, quarter, b), &mut acc) };
                            check(&acc, name);
                        }
                    }
                }
            }
        }
    }

    /// Every format, random bytes (scale bits too: NaN, ±∞, subnormals), every ISA's body: the
    /// panel lanes hold exactly the block decoder's values (any NaN for a NaN).
    #[test]
    fn rows8_is_dequantize() {
        let mut seed = 99u64;
        let mut byte = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 56) as u8
        };
        for dtype in VERTICAL_FORMATS {
            assert!(vertical_format(dtype));
            let n = 32 * 40;
            let row_bytes = dtype.row_bytes(n).unwrap();
            let rows: Vec<Vec<u8>> = (0..8)
                .map(|_| (0..row_bytes).map(|_| byte()).collect())
                .collect();
            let refs: [&[u8]; 8] = std::array::from_fn(|r| rows[r].as_slice());
            let check = |panel: &[f64], what: &str| {
                for (r, row) in rows.iter().enumerate() {
                    let mut want = vec![0.0; n];
                    dequantize_into(dtype, row, &mut want).unwrap();
                    for (k, w) in want.iter().enumerate() {
                        let g = panel[k * LANES + 3 + r];
                        let same = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
                        assert!(same, "{dtype} {what}: row {r} element {k}: {g} vs {w}");
                    }
                }
            };
            let mut panel = vec![0.0; n * LANES];
            decode_rows8::<BASE>(dtype, refs, None, &mut panel, 3);
            check(&panel, "portable");
            #[cfg(target_arch = "x86_64")]
            {
                use crate::ops::prim::{has_avx2, has_avx512};
                #[target_feature(enable = "avx2,f16c,fma")]
                unsafe fn avx2(dtype: DType, rows: [&[u8]; 8], panel: &mut [f64]) {
                    decode_rows8::<AVX2>(dtype, rows, None, panel, 3)
                }
                #[target_feature(enable = "avx512f,avx512bw,avx512dq,f16c,fma")]
                unsafe fn avx512(dtype: DType, rows: [&[u8]; 8], panel: &mut [f64]) {
                    decode_rows8::<AVX512>(dtype, rows, None, panel, 3)
                }
                type Body = unsafe fn(DType, [&[u8]; 8], &mut [f64]);
                for (name, present, body) in [
                    ("avx2", has_avx2(), avx2 as Body),
                    ("avx512", has_avx512(), avx512 as Body),
                ] {
                    if present {
                        let mut panel = vec![0.0; n * LANES];
                        // SAFETY: the CPU has the body's features (checked just above).
                        unsafe { body(dtype, refs, &mut panel) };
                        check(&panel, name);
                    }
                }
            }
        }
    }
}
