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
use crate::formats::scale_min_k4;
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

/// The 8 lanes l0 .. l0 + 8 of panel row k.
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
fn f16x8<const F16C: bool>(w: &[u16; 8], out: &mut [f64; 8]) {
    #[cfg(target_arch = "x86_64")]
    if F16C {
        use std::arch::x86_64::*;
        // SAFETY: only instantiated with F16C = true inside functions compiled with the
        // `f16c` and `avx` target features, on CPUs that have them; `w` is 16 bytes.
        unsafe {
            let h = _mm_loadu_si128(w.as_ptr() as *const __m128i);
            let f = _mm256_cvtph_ps(h);
            let lo = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
            let hi = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
            _mm256_storeu_pd(out.as_mut_ptr(), lo);
            _mm256_storeu_pd(out[4..].as_mut_ptr(), hi);
        }
        return;
    }
    let table: &[f64; 65536] = f16_table().try_into().expect("every f16");
    for (o, &x) in out.iter_mut().zip(w) {
        *o = table[usize::from(x)];
    }
}

// No closures below (`array::map`, `from_fn`): a closure is not compiled with its caller's
// target features, and these run inside the AVX-512/AVX2 copies of the decoder.

/// The per-row f16 field at byte `at` of block `bi` (block size `bytes`) of each row.
#[inline(always)]
fn scales(rows: &[&[u8]; 8], bi: usize, bytes: usize, at: usize) -> [f64; 8] {
    let mut d = [0.0; 8];
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
fn high(qh: &[u32; 8], j: usize) -> [i32; 8] {
    let mut h = [0; 8];
    for (x, &q) in h.iter_mut().zip(qh) {
        *x = (((q >> j) & 1) << 4) as i32;
    }
    h
}

/// Rows l0 .. l0 + 8 of `panel` from the rows' bytes (whole blocks of a [`vertical_format`],
/// for f16 whole groups of 32 values, the same number in each row). `F16C`: the CPU has F16C
/// and the caller is compiled with it.
#[inline(always)]
pub(crate) fn decode_rows8<const F16C: bool>(
    dtype: DType,
    rows: [&[u8]; 8],
    panel: &mut [f64],
    l0: usize,
) {
    let block = dtype.block_bytes() * if dtype == DType::F16 { 32 } else { 1 };
    let blocks = rows[0].len() / block;
    for bi in 0..blocks {
        let k0 = bi * 32;
        match dtype {
            DType::F16 => {
                for g in 0..4 {
                    let cols = transpose_8x8_u16(part(&rows, bi, block, 16 * g, 16));
                    for (j, w) in cols.iter().enumerate() {
                        f16x8::<F16C>(w, lanes(panel, k0 + 8 * g + j, l0));
                    }
                }
            }
            // x = d·(q − 8) + 0, as the block decoder computes it (the + 0 turns −0 into +0).
            DType::Q4_0 => {
                let d = scales(&rows, bi, block, 0);
                let cols = transpose_8x16(part(&rows, bi, block, 2, 16));
                for (j, c) in cols.iter().enumerate() {
                    let lo = lanes(panel, k0 + j, l0);
                    for r in 0..8 {
                        lo[r] = d[r] * f64::from(i32::from(c[r] & 0xF) - 8) + 0.0;
                    }
                    let hi = lanes(panel, k0 + j + 16, l0);
                    for r in 0..8 {
                        hi[r] = d[r] * f64::from(i32::from(c[r] >> 4) - 8) + 0.0;
                    }
                }
            }
            // x = d·q + m.
            DType::Q4_1 => {
                let (d, m) = (scales(&rows, bi, block, 0), scales(&rows, bi, block, 2));
                let cols = transpose_8x16(part(&rows, bi, block, 4, 16));
                for (j, c) in cols.iter().enumerate() {
                    let lo = lanes(panel, k0 + j, l0);
                    for r in 0..8 {
                        lo[r] = d[r] * f64::from(i32::from(c[r] & 0xF)) + m[r];
                    }
                    let hi = lanes(panel, k0 + j + 16, l0);
                    for r in 0..8 {
                        hi[r] = d[r] * f64::from(i32::from(c[r] >> 4)) + m[r];
                    }
                }
            }
            // x = d·(q − 16) + 0 with the fifth bit from qh.
            DType::Q5_0 => {
                let d = scales(&rows, bi, block, 0);
                let qh = words(&rows, bi, block, 2);
                let cols = transpose_8x16(part(&rows, bi, block, 6, 16));
                for (j, c) in cols.iter().enumerate() {
                    let (hl, hh) = (high(&qh, j), high(&qh, j + 16));
                    let lo = lanes(panel, k0 + j, l0);
                    for r in 0..8 {
                        lo[r] = d[r] * f64::from((i32::from(c[r] & 0xF) | hl[r]) - 16) + 0.0;
                    }
                    let hi = lanes(panel, k0 + j + 16, l0);
                    for r in 0..8 {
                        hi[r] = d[r] * f64::from((i32::from(c[r] >> 4) | hh[r]) - 16) + 0.0;
                    }
                }
            }
            // x = d·q + m with the fifth bit from qh.
            DType::Q5_1 => {
                let (d, m) = (scales(&rows, bi, block, 0), scales(&rows, bi, block, 2));
                let qh = words(&rows, bi, block, 4);
                let cols = transpose_8x16(part(&rows, bi, block, 8, 16));
                for (j, c) in cols.iter().enumerate() {
                    let (hl, hh) = (high(&qh, j), high(&qh, j + 16));
                    let lo = lanes(panel, k0 + j, l0);
                    for r in 0..8 {
                        lo[r] = d[r] * f64::from(i32::from(c[r] & 0xF) | hl[r]) + m[r];
                    }
                    let hi = lanes(panel, k0 + j + 16, l0);
                    for r in 0..8 {
                        hi[r] = d[r] * f64::from(i32::from(c[r] >> 4) | hh[r]) + m[r];
                    }
                }
            }
            // x = (d·sc)·q − dmin·m per 32-element sub-block, as the block decoder computes it:
            // sub-block 2p takes the low nibbles of qs[32p ..], 2p + 1 their high nibbles.
            DType::Q4_K => {
                let k0 = bi * 256;
                let (d, dmin) = (scales(&rows, bi, block, 0), scales(&rows, bi, block, 2));
                let sc = part(&rows, bi, block, 4, 12);
                for p in 0..4 {
                    let (mut ds, mut dm) = ([[0.0; 8]; 2], [[0.0; 8]; 2]);
                    for r in 0..8 {
                        let bytes: &[u8; 12] = sc[r].try_into().expect("12 scale bytes");
                        for h in 0..2 {
                            let (s, m) = scale_min_k4(bytes, 2 * p + h);
                            ds[h][r] = d[r] * f64::from(s);
                            dm[h][r] = dmin[r] * f64::from(m);
                        }
                    }
                    for half in 0..2 {
                        let cols =
                            transpose_8x16(part(&rows, bi, block, 16 + 32 * p + 16 * half, 16));
                        for (j, c) in cols.iter().enumerate() {
                            let e = 64 * p + 16 * half + j;
                            let lo = lanes(panel, k0 + e, l0);
                            for r in 0..8 {
                                lo[r] = ds[0][r] * f64::from(c[r] & 0xF) - dm[0][r];
                            }
                            let hi = lanes(panel, k0 + e + 32, l0);
                            for r in 0..8 {
                                hi[r] = ds[1][r] * f64::from(c[r] >> 4) - dm[1][r];
                            }
                        }
                    }
                }
            }
            // x = d·q with signed 8-bit q.
            DType::Q8_0 => {
                let d = scales(&rows, bi, block, 0);
                for half in 0..2 {
                    let cols = transpose_8x16(part(&rows, bi, block, 2 + 16 * half, 16));
                    for (j, c) in cols.iter().enumerate() {
                        let out = lanes(panel, k0 + 16 * half + j, l0);
                        for r in 0..8 {
                            out[r] = d[r] * f64::from(c[r] as i8);
                        }
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

    /// Every format, random bytes (scale bits too: NaN, ±∞, subnormals), both conversions of
    /// f16: the panel lanes hold exactly the block decoder's values (any NaN for a NaN).
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
            decode_rows8::<false>(dtype, refs, &mut panel, 3);
            check(&panel, "portable");
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("f16c")
                && std::arch::is_x86_feature_detected!("avx")
            {
                #[target_feature(enable = "avx,f16c")]
                unsafe fn with_f16c(dtype: DType, rows: [&[u8]; 8], panel: &mut [f64]) {
                    decode_rows8::<true>(dtype, rows, panel, 3)
                }
                let mut panel = vec![0.0; n * LANES];
                // SAFETY: the CPU has AVX and F16C.
                unsafe { with_f16c(dtype, refs, &mut panel) };
                check(&panel, "f16c");
            }
        }
    }
}
