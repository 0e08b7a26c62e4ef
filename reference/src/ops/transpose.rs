//! Decoding eight A rows at once straight into a k-major panel, vectorized across the rows.
//!
//! The panel the tile kernel reads holds, for each k, the values of [`LANES`] rows side by
//! side. Decoding row by row and scattering each value to its lane costs a store per element.
//! Here the *stored* quants of eight rows are transposed first (bytes or 16-bit words, a few
//! SSE2 unpacks per 128 bytes), so that each k's eight values are computed together, eight
//! lanes wide, and written with one contiguous store. The values are the block decoders' own
//! expressions on the same operands, lane by lane (`rows8_is_dequantize` checks every format
//! against [`dequantize_into`](crate::formats::dequantize_into)).

use super::kernel::{f16_at, f16_table, LANES};
use crate::DType;

/// Whether [`decode_rows8`] handles `dtype` (whole blocks, 32 elements but q4_K's 256; for
/// f16 whole groups of 32).
pub(crate) fn vertical_format(dtype: DType) -> bool {
    matches!(
        dtype,
        DType::F16
            | DType::Q4_0
            | DType::Q4_1
            | DType::Q5_0
            | DType::Q5_1
            | DType::Q8_0
            | DType::Q4_K
    )
}

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

/// The per-row f16 field at byte `at` of block `bi` (block size `bytes`) of each row. With
/// F16C the eight words are gathered in registers and converted at once: eight scalar stores
/// read back as one vector would stall the load (no store forwarding).
#[inline(always)]
fn scales<const ISA: u8>(rows: &[&[u8]; 8], bi: usize, bytes: usize, at: usize) -> [f64; 8] {
    let mut d = [0.0; 8];
    #[cfg(target_arch = "x86_64")]
    if ISA >= AVX2 {
        use std::arch::x86_64::*;
        let (mut lo, mut hi) = (0u64, 0u64);
        for r in 0..4 {
            let (a, b) = (&rows[r][bi * bytes + at..], &rows[r + 4][bi * bytes + at..]);
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
    for (x, row) in d.iter_mut().zip(rows) {
        *x = f16_at(&row[bi * bytes..], at);
    }
    d
}

/// The per-row little-endian u32 at byte `at` of block `bi`.
#[inline(always)]
fn words(rows: &[&[u8]; 8], bi: usize, bytes: usize, at: usize) -> [u32; 8] {
    let mut w = [0; 8];
    for (x, row) in w.iter_mut().zip(rows) {
        let b = &row[bi * bytes + at..bi * bytes + at + 4];
        *x = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    w
}

/// `len` bytes at byte `at` of block `bi` of each row.
#[inline(always)]
fn part<'a>(rows: &[&'a [u8]; 8], bi: usize, bytes: usize, at: usize, len: usize) -> [&'a [u8]; 8] {
    let mut p: [&[u8]; 8] = [&[]; 8];
    for (x, row) in p.iter_mut().zip(rows) {
        *x = &row[bi * bytes + at..bi * bytes + at + len];
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
    debug_assert!(quarter.is_none() || dtype == DType::Q4_K, "{dtype}");
    let block = dtype.block_bytes() * if dtype == DType::F16 { 32 } else { 1 };
    let blocks = rows[0].len() / block;
    let zero = [0.0; 8];
    for bi in 0..blocks {
        let k0 = bi * 32;
        match dtype {
            DType::F16 => {
                for g in 0..4 {
                    let cols = transpose_8x8_u16(part(&rows, bi, block, 16 * g, 16));
                    for (j, w) in cols.iter().enumerate() {
                        f16x8::<ISA>(w, lanes(panel, k0 + 8 * g + j, l0));
                    }
                }
            }
            // x = d·(q − 8) + 0, as the block decoder computes it (the + 0 turns −0 into +0);
            // x = d·q + m for q4_1.
            DType::Q4_0 | DType::Q4_1 => {
                let d = scales::<ISA>(&rows, bi, block, 0);
                let (offset, m, at) = match dtype {
                    DType::Q4_0 => (8, zero, 2),
                    _ => (0, scales::<ISA>(&rows, bi, block, 2), 4),
                };
                let (lo, hi) = nibbles(&transpose_8x16(part(&rows, bi, block, at, 16)), offset);
                for j in 0..16 {
                    affine::<ISA>(lanes(panel, k0 + j, l0), &d, &lo[j], &m);
                    affine::<ISA>(lanes(panel, k0 + j + 16, l0), &d, &hi[j], &m);
                }
            }
            // The same with the fifth bit from qh: x = d·(q − 16) + 0, or d·q + m for q5_1.
            DType::Q5_0 | DType::Q5_1 => {
                let d = scales::<ISA>(&rows, bi, block, 0);
                let (offset, m, at) = match dtype {
                    DType::Q5_0 => (16, zero, 2),
                    _ => (0, scales::<ISA>(&rows, bi, block, 2), 4),
                };
                let qh = words(&rows, bi, block, at);
                let (lo, hi) = nibbles(&transpose_8x16(part(&rows, bi, block, at + 4, 16)), 0);
                for j in 0..16 {
                    for (e, q) in [(j, &lo[j]), (j + 16, &hi[j])] {
                        let h = high(&qh, e);
                        let mut q5 = [0; 8];
                        for r in 0..8 {
                            q5[r] = (q[r] | h[r]) - offset;
                        }
                        affine::<ISA>(lanes(panel, k0 + e, l0), &d, &q5, &m);
                    }
                }
            }
            // x = (d·sc)·q − dmin·m per 32-element sub-block, as the block decoder computes it:
            // sub-block 2p takes the low nibbles of qs[32p ..], 2p + 1 their high nibbles.
            DType::Q4_K => {
                let (k0, quarters) = match quarter {
                    Some(q) => (0, q..q + 1),
                    None => (bi * 256, 0..4),
                };
                let (d, dmin) = (
                    scales::<ISA>(&rows, bi, block, 0),
                    scales::<ISA>(&rows, bi, block, 2),
                );
                // Bytes 4..16 of each row: the twelve scale bytes (and four of qs, unused).
                let sc = transpose_8x16(part(&rows, bi, block, 4, 16));
                for p in quarters.clone() {
                    let (mut ds, mut dm) = ([[0.0; 8]; 2], [[0.0; 8]; 2]);
                    for h in 0..2 {
                        let (s, m) = scale_min_k4x8(&sc, 2 * p + h);
                        for r in 0..8 {
                            ds[h][r] = d[r] * f64::from(s[r]);
                            dm[h][r] = -(dmin[r] * f64::from(m[r]));
                        }
                    }
                    for half in 0..2 {
                        let at = 16 + 32 * p + 16 * half;
                        let (lo, hi) = nibbles(&transpose_8x16(part(&rows, bi, block, at, 16)), 0);
                        for j in 0..16 {
                            let e = k0 + 64 * (p - quarters.start) + 16 * half + j;
                            affine::<ISA>(lanes(panel, e, l0), &ds[0], &lo[j], &dm[0]);
                            affine::<ISA>(lanes(panel, e + 32, l0), &ds[1], &hi[j], &dm[1]);
                        }
                    }
                }
            }
            // x = d·q with signed 8-bit q (+ −0 changes nothing).
            DType::Q8_0 => {
                let d = scales::<ISA>(&rows, bi, block, 0);
                for half in 0..2 {
                    let cols = transpose_8x16(part(&rows, bi, block, 2 + 16 * half, 16));
                    for (j, c) in cols.iter().enumerate() {
                        let mut q = [0; 8];
                        for r in 0..8 {
                            q[r] = c[r] as i8;
                        }
                        let out = lanes(panel, k0 + 16 * half + j, l0);
                        affine::<ISA>(out, &d, &q, &[-0.0; 8]);
                    }
                }
            }
            _ => unreachable!("vertical_format is false for {dtype}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::dequantize_into;

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
        for dtype in [
            DType::F16,
            DType::Q4_0,
            DType::Q4_1,
            DType::Q5_0,
            DType::Q5_1,
            DType::Q8_0,
            DType::Q4_K,
        ] {
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
                use crate::ops::kernel::{has_avx2, has_avx512};
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
