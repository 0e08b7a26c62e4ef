//! The inner loop every product shares, made fast without changing a single bit of its result.
//!
//! Each output of the reference is a dot product accumulated **sequentially** in f64:
//! `acc = ((init + a₀·b₀) + a₁·b₁) + …`, each product rounded once and each sum rounded once, in
//! index order. That order is the definition of the reference's value, so it is never changed:
//! no reassociation, no tree sums, no fused multiply-add (Rust never contracts `a * b + c`).
//! What *is* free is the order in which *different* outputs are computed, and that is where the
//! speed comes from:
//!
//! * [`block`] computes a tile of outputs at once: `LANES` (16) rows of A against several rows of
//!   B, all accumulators live in registers, vectorized across the lanes (16 different dot
//!   products, each still sequential in k). It is compiled three times (AVX-512, AVX, baseline)
//!   and picked at run time; the lanes are independent, so every version gives identical bits.
//!   Code that must get those target features avoids closures (a closure is compiled without
//!   its caller's features).
//! * A is decoded on the fly, a k block of [`LANES`] rows at a time, into a small transposed
//!   panel (k-major): no decoded copy of the whole matrix is ever made. With many B rows the
//!   block is [`KB`] long and the panel stays in L1 while every B row uses it. With few (a
//!   mat-vec, `task_few`) the four panels of a task are packed together, [`KB_VEC`] long, and
//!   each B row runs against all of them at once ([`wide`]): 64 independent sums in flight
//!   hide the adds' latency, and A's rows are prefetched ahead. Eight rows at a time are
//!   decoded "vertically" (`transpose.rs`) for the common formats.
//! * With one B row and A in a block format decoded vertically, there is no panel at all
//!   ([`dot_rows8`]): each block's quants of the task's 64 rows are transposed into a few
//!   hundred bytes, then each element's eight-row values are made in registers and summed
//!   at once (the panel's store and reload were as costly as the arithmetic).
//! * Where every product a·b is exact in f64 ([`exact_products`]: f32, f16, bf16, q4_0, q5_0
//!   and q8_0 values times f32, f16 or bf16 ones), `acc + a·b` and the fused multiply-add
//!   round the same exact value once: the kernels then use FMA, with the same bits.
//! * The k range is split into blocks whose partial sums are stored and reloaded between blocks
//!   (an f64 store and load change nothing), so each output still sees k = 0, 1, 2, … in order.

use rayon::prelude::*;

use super::prim::{f16_at, f16_table, madd, LANES};
#[cfg(target_arch = "x86_64")]
use super::prim::{has_avx2, has_avx512};
use super::transpose;
use crate::formats::{dequantize_into, float, magnitude_into, scale_min_k4};
use crate::tensor::{Decoder, TensorView};
use crate::{DType, Result};

/// What a decoder produces from the stored elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Values {
    /// The exact values ([`dequantize_into`]).
    Exact,
    /// The magnitudes an error bound scales with ([`magnitude_into`]).
    Magnitude,
}

impl Values {
    /// The decoder producing these values.
    pub(crate) fn decoder(self) -> Decoder {
        match self {
            Values::Exact => dequantize_into,
            Values::Magnitude => magnitude_into,
        }
    }
}

/// Returns the AVX-512 build of a function's result where the CPU has what it is compiled
/// with, else the AVX2 build's; on other CPUs (and targets) it falls through to the portable
/// code after it. With `fused: FLAG` first, the const-generic instance FLAG names.
macro_rules! isa_dispatch {
    ($avx512:ident, $avx2:ident, ($($arg:expr),*)) => {
        #[cfg(target_arch = "x86_64")]
        {
            if has_avx512() {
                // SAFETY: the CPU has the features the function is compiled with (just checked).
                return unsafe { $avx512($($arg),*) };
            }
            if has_avx2() {
                // SAFETY: as above.
                return unsafe { $avx2($($arg),*) };
            }
        }
    };
    (fused: $fused:expr, $avx512:ident, $avx2:ident, ($($arg:expr),*)) => {
        #[cfg(target_arch = "x86_64")]
        {
            if has_avx512() {
                // SAFETY: the CPU has the features the function is compiled with (just checked).
                return match $fused {
                    true => unsafe { $avx512::<true>($($arg),*) },
                    false => unsafe { $avx512::<false>($($arg),*) },
                };
            }
            if has_avx2() {
                // SAFETY: as above.
                return match $fused {
                    true => unsafe { $avx2::<true>($($arg),*) },
                    false => unsafe { $avx2::<false>($($arg),*) },
                };
            }
        }
    };
}

/// Elements of k decoded per panel: a multiple of every block length (1, 32, 256), and
/// 256 · 16 · 8 bytes = 32 KiB of panel.
pub(crate) const KB: usize = 256;

/// A rows per parallel task (four panels).
const MT: usize = 4 * LANES;

/// B rows per pass over a task's A rows: bounds the accumulators of a task to NCH · MT f64.
const NCH: usize = 256;

/// Significant bits of every exact value of `dtype`, where at most 26 (so that any two of them
/// multiply exactly in f64's 53): f32's 24, f16's 11, bf16's 8, and d·q for the blocks with one
/// f16 scale d (11 bits) and no offset, q of 4 (q4_0), 5 (q5_0) or 8 (q8_0) bits. Their
/// products also stay far inside f64's normal range (f32's smallest subnormal, 2⁻¹⁴⁹, squared
/// is 2⁻²⁹⁸).
fn value_bits(dtype: DType) -> Option<u32> {
    match dtype {
        DType::F32 => Some(24),
        DType::F16 => Some(11),
        DType::Bf16 => Some(8),
        DType::Q4_0 => Some(15),
        DType::Q5_0 => Some(16),
        DType::Q8_0 => Some(19),
        _ => None,
    }
}

/// Whether the product of any exact value of `a` with any of `b` is exact in f64: then the
/// tile kernels may fuse each product with its sum (see [`madd`]).
pub(crate) fn exact_products(a: DType, b: DType) -> bool {
    matches!((value_bits(a), value_bits(b)), (Some(x), Some(y)) if x + y <= 53)
}

/// `acc[r][l] = acc[r][l] + a[k·stride + l] · b[r][k]` for k = 0, 1, …, kn − 1 in order
/// (fused as [`madd`] says).
#[inline(always)]
fn micro<const NR: usize, const FUSED: bool>(
    kn: usize,
    a: &[f64],
    stride: usize,
    b: [&[f64]; NR],
    acc: &mut [[f64; LANES]; NR],
) {
    let mut rows: [&[f64]; NR] = [&[]; NR];
    for (r, row) in rows.iter_mut().zip(b) {
        *r = &row[..kn];
    }
    let a = &a[..(kn - 1) * stride + LANES];
    let mut c = *acc;
    for k in 0..kn {
        let av: &[f64; LANES] = a[k * stride..k * stride + LANES].try_into().expect("LANES");
        for r in 0..NR {
            let bk = rows[r][k];
            for l in 0..LANES {
                c[r][l] = madd::<FUSED>(c[r][l], av[l], bk);
            }
        }
    }
    *acc = c;
}

#[inline(always)]
fn block_body<const NR: usize, const FUSED: bool>(
    kn: usize,
    a: &[f64],
    stride: usize,
    b: &[&[f64]],
    acc: &mut [[f64; LANES]],
) {
    let mut b_groups = b.chunks_exact(NR);
    let mut acc_groups = acc.chunks_exact_mut(NR);
    for (bg, ag) in (&mut b_groups).zip(&mut acc_groups) {
        let bg: [&[f64]; NR] = bg.try_into().expect("NR rows");
        let ag: &mut [[f64; LANES]; NR] = ag.try_into().expect("NR rows");
        micro::<NR, FUSED>(kn, a, stride, bg, ag);
    }
    // The rest four rows at a time where NR is larger (a decode step's few rows), then one by
    // one.
    let (mut b_rest, mut acc_rest) = (b_groups.remainder(), acc_groups.into_remainder());
    while NR > 4 && b_rest.len() >= 4 {
        let (bg, bt) = b_rest.split_at(4);
        let (ag, at) = std::mem::take(&mut acc_rest).split_at_mut(4);
        let bg: [&[f64]; 4] = bg.try_into().expect("4 rows");
        let ag: &mut [[f64; LANES]; 4] = ag.try_into().expect("4 rows");
        micro::<4, FUSED>(kn, a, stride, bg, ag);
        (b_rest, acc_rest) = (bt, at);
    }
    for (br, ar) in b_rest.iter().zip(acc_rest) {
        micro::<1, FUSED>(kn, a, stride, [br], std::array::from_mut(ar));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn block_avx512<const FUSED: bool>(
    kn: usize,
    a: &[f64],
    stride: usize,
    b: &[&[f64]],
    acc: &mut [[f64; LANES]],
) {
    block_body::<NR_AVX512, FUSED>(kn, a, stride, b, acc)
}

/// B rows per tile with AVX-512: 2·NR accumulators of the 32 registers.
const NR_AVX512: usize = 8;

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn block_avx2<const FUSED: bool>(
    kn: usize,
    a: &[f64],
    stride: usize,
    b: &[&[f64]],
    acc: &mut [[f64; LANES]],
) {
    block_body::<2, FUSED>(kn, a, stride, b, acc)
}

/// For every B row r: `acc[r][l] = acc[r][l] + a[k·stride + l] · b[r][k]`, k = 0 … kn − 1 in
/// order. `a` holds kn panel rows of at least [`LANES`] values, `stride` apart; each `b[r]` at
/// least kn values; `acc` one tile row per B row. `fused`: every product is exact
/// ([`exact_products`]).
pub(crate) fn block(
    kn: usize,
    a: &[f64],
    stride: usize,
    b: &[&[f64]],
    acc: &mut [[f64; LANES]],
    fused: bool,
) {
    debug_assert_eq!(b.len(), acc.len());
    if kn == 0 {
        return;
    }
    assert!(a.len() >= (kn - 1) * stride + LANES, "panel too short");
    isa_dispatch!(fused: fused, block_avx512, block_avx2, (kn, a, stride, b, acc));
    block_body::<1, false>(kn, a, stride, b, acc)
}

/// For one B row and P panels side by side: `acc[p][l] = acc[p][l] + a[p·pstride + k·LANES + l]
/// · b[k]` for k = 0 … kn − 1 in order. The P·LANES sums are independent, so that with P = 4
/// (eight AVX-512 accumulators) the adds' latency hides behind one another: the mat-vec case,
/// where the one-panel tile has only two chains.
#[inline(always)]
fn wide_body<const P: usize, const FUSED: bool>(
    kn: usize,
    a: &[f64],
    pstride: usize,
    b: &[f64],
    acc: &mut [[f64; LANES]; P],
) {
    let b = &b[..kn];
    let mut panels: [&[f64]; P] = [&[]; P];
    for (p, x) in panels.iter_mut().enumerate() {
        *x = &a[p * pstride..p * pstride + kn * LANES];
    }
    let mut c = *acc;
    for (k, &bk) in b.iter().enumerate() {
        for p in 0..P {
            let av: &[f64; LANES] = panels[p][k * LANES..(k + 1) * LANES]
                .try_into()
                .expect("LANES");
            for l in 0..LANES {
                c[p][l] = madd::<FUSED>(c[p][l], av[l], bk);
            }
        }
    }
    *acc = c;
}

#[inline(always)]
fn wide_dispatch<const FUSED: bool>(
    kn: usize,
    a: &[f64],
    pstride: usize,
    b: &[f64],
    acc: &mut [[f64; LANES]],
) {
    match acc.len() {
        4 => wide_body::<4, FUSED>(kn, a, pstride, b, acc.try_into().expect("4")),
        3 => wide_body::<3, FUSED>(kn, a, pstride, b, acc.try_into().expect("3")),
        2 => wide_body::<2, FUSED>(kn, a, pstride, b, acc.try_into().expect("2")),
        _ => {
            for (p, x) in acc.iter_mut().enumerate() {
                let acc = std::array::from_mut(x);
                wide_body::<1, FUSED>(kn, &a[p * pstride..], pstride, b, acc);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn wide_avx512<const FUSED: bool>(
    kn: usize,
    a: &[f64],
    pstride: usize,
    b: &[f64],
    acc: &mut [[f64; LANES]],
) {
    wide_dispatch::<FUSED>(kn, a, pstride, b, acc)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn wide_avx2<const FUSED: bool>(
    kn: usize,
    a: &[f64],
    pstride: usize,
    b: &[f64],
    acc: &mut [[f64; LANES]],
) {
    wide_dispatch::<FUSED>(kn, a, pstride, b, acc)
}

/// [`wide_body`] for `acc.len()` panels `pstride` apart in `a`; `fused`: the products are exact
/// ([`exact_products`]).
fn wide(kn: usize, a: &[f64], pstride: usize, b: &[f64], acc: &mut [[f64; LANES]], fused: bool) {
    if kn == 0 {
        return;
    }
    isa_dispatch!(fused: fused, wide_avx512, wide_avx2, (kn, a, pstride, b, acc));
    wide_dispatch::<false>(kn, a, pstride, b, acc)
}

/// Packs rows `m0 .. m0 + mn` (mn ≤ [`LANES`]) of matrix (i2, i3) of `a`, elements
/// `k0 .. k0 + kn`, decoded as `values`, into `panel[k·LANES + l]` (zero for l ≥ mn). `tmp`
/// holds at least kn values. `k0` and `kn` are whole blocks of `a`'s type (or kn reaches the
/// row's end).
#[allow(clippy::too_many_arguments)]
pub(crate) fn pack_panel(
    a: &TensorView,
    (i2, i3): (usize, usize),
    m0: usize,
    mn: usize,
    (k0, kn): (usize, usize),
    values: Values,
    tmp: &mut [f64],
    panel: &mut [f64],
) -> Result<()> {
    let panel = &mut panel[..kn * LANES];
    if mn < LANES {
        panel.iter_mut().for_each(|x| *x = 0.0);
    }
    let tmp = &mut tmp[..kn];
    let fast = values == Values::Exact && fast_format(a.dtype());
    let mut l = 0;
    // Eight rows at a time: their values written 8 consecutive lanes at once.
    while fast && kn % 32 == 0 && l + 8 <= mn {
        let rows: [Option<&[u8]>; 8] =
            std::array::from_fn(|r| a.row_bytes(m0 + l + r, i2, i3, k0, kn));
        if rows.iter().any(Option::is_none) {
            break;
        }
        decode_rows8(
            a.dtype(),
            rows.map(|r| r.unwrap_or_default()),
            None,
            panel,
            l,
        );
        l += 8;
    }
    for l in l..mn {
        if fast {
            if let Some(bytes) = a.row_bytes(m0 + l, i2, i3, k0, kn) {
                decode_fast(a.dtype(), bytes, &mut panel[l..], LANES);
                continue;
            }
        }
        a.decode_row(m0 + l, i2, i3, k0, tmp, values.decoder())?;
        for (p, &x) in panel.chunks_exact_mut(LANES).zip(tmp.iter()) {
            p[l] = x;
        }
    }
    Ok(())
}

/// Whether [`decode_fast`] handles `dtype`.
pub(crate) fn fast_format(dtype: DType) -> bool {
    matches!(
        dtype,
        DType::F32
            | DType::F16
            | DType::Bf16
            | DType::Q4_0
            | DType::Q4_1
            | DType::Q5_0
            | DType::Q5_1
            | DType::Q8_0
            | DType::Q4_K
    )
}

/// One block of a legacy 32-element format decoded to its exact values.
trait LegacyBlock {
    const BYTES: usize;
    fn values(b: &[u8], v: &mut [f64; 32]);
}

/// Decodes the blocks of a legacy 32-element format, the values stored `stride` apart.
#[inline(always)]
fn legacy<B: LegacyBlock>(bytes: &[u8], out: &mut [f64], stride: usize) {
    let mut vals = [0.0; 32];
    for (i, b) in bytes.chunks_exact(B::BYTES).enumerate() {
        B::values(b, &mut vals);
        // Keeps the 32 values computed as vectors apart from the strided stores (fused, both
        // end up scalar).
        let vals = std::hint::black_box(&vals);
        let base = i * 32 * stride;
        assert!(base + 31 * stride < out.len(), "room for the block");
        for (j, &v) in vals.iter().enumerate() {
            out[base + j * stride] = v;
        }
    }
}

/// Rows l0 .. l0 + 8 of `panel` (k-major, [`LANES`] wide) from their bytes: whole 32-element
/// groups of a [`fast_format`] type, the same number in each row; `quarter` as
/// [`transpose::decode_rows8`] takes it.
fn decode_rows8(
    dtype: DType,
    rows: [&[u8]; 8],
    quarter: Option<usize>,
    panel: &mut [f64],
    l0: usize,
) {
    isa_dispatch!(
        decode_rows8_avx512,
        decode_rows8_avx2,
        (dtype, rows, quarter, panel, l0)
    );
    decode_rows8_body::<{ transpose::BASE }>(dtype, rows, quarter, panel, l0)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,f16c,fma")]
unsafe fn decode_rows8_avx512(
    dtype: DType,
    rows: [&[u8]; 8],
    quarter: Option<usize>,
    panel: &mut [f64],
    l0: usize,
) {
    decode_rows8_body::<{ transpose::AVX512 }>(dtype, rows, quarter, panel, l0)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c,fma")]
unsafe fn decode_rows8_avx2(
    dtype: DType,
    rows: [&[u8]; 8],
    quarter: Option<usize>,
    panel: &mut [f64],
    l0: usize,
) {
    decode_rows8_body::<{ transpose::AVX2 }>(dtype, rows, quarter, panel, l0)
}

/// The mat-vec of groups of eight rows straight from their bytes ([`transpose::dot_rows8`]):
/// `acc[g][r] = acc[g][r] + x · b[k]` in k order for row r of `groups[g]`; `fused`: the products
/// are exact ([`exact_products`]).
fn dot_rows8(
    dtype: DType,
    groups: &[[&[u8]; 8]],
    quarter: Option<usize>,
    b: &[f64],
    acc: &mut [[f64; 8]],
    fused: bool,
) {
    isa_dispatch!(fused: fused, dot_rows8_avx512, dot_rows8_avx2, (dtype, groups, quarter, b, acc));
    transpose::dot_rows8::<{ transpose::BASE }, false>(dtype, groups, quarter, b, acc)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,f16c,fma")]
unsafe fn dot_rows8_avx512<const FUSED: bool>(
    dtype: DType,
    groups: &[[&[u8]; 8]],
    quarter: Option<usize>,
    b: &[f64],
    acc: &mut [[f64; 8]],
) {
    transpose::dot_rows8::<{ transpose::AVX512 }, FUSED>(dtype, groups, quarter, b, acc)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c,fma")]
unsafe fn dot_rows8_avx2<const FUSED: bool>(
    dtype: DType,
    groups: &[[&[u8]; 8]],
    quarter: Option<usize>,
    b: &[f64],
    acc: &mut [[f64; 8]],
) {
    transpose::dot_rows8::<{ transpose::AVX2 }, FUSED>(dtype, groups, quarter, b, acc)
}

#[inline(always)]
fn decode_rows8_body<const ISA: u8>(
    dtype: DType,
    rows: [&[u8]; 8],
    quarter: Option<usize>,
    panel: &mut [f64],
    l0: usize,
) {
    match dtype {
        DType::F32 => rows8::<FastF32>(rows, panel, l0),
        DType::Bf16 => rows8::<FastBf16>(rows, panel, l0),
        _ => {
            debug_assert!(transpose::vertical_format(dtype), "{dtype}");
            transpose::decode_rows8::<ISA>(dtype, rows, quarter, panel, l0)
        }
    }
}

#[inline(always)]
fn rows8<B: LegacyBlock>(rows: [&[u8]; 8], panel: &mut [f64], l0: usize) {
    let mut vals = [[0.0f64; 32]; 8];
    let blocks = rows[0].len() / B::BYTES;
    for (bi, out) in panel.chunks_exact_mut(32 * LANES).take(blocks).enumerate() {
        for (v, row) in vals.iter_mut().zip(rows) {
            B::values(&row[bi * B::BYTES..(bi + 1) * B::BYTES], v);
        }
        for (j, k_row) in out.chunks_exact_mut(LANES).enumerate() {
            let dst: &mut [f64; 8] = (&mut k_row[l0..l0 + 8]).try_into().expect("8 lanes");
            for r in 0..8 {
                dst[r] = vals[r][j];
            }
        }
    }
}

struct FastF32;
struct FastBf16;
struct FastQ4_0;
struct FastQ4_1;
struct FastQ5_0;
struct FastQ5_1;
struct FastQ8_0;

// The float types, 32 elements at a time.
impl LegacyBlock for FastF32 {
    const BYTES: usize = 128;
    #[inline(always)]
    fn values(b: &[u8], v: &mut [f64; 32]) {
        for (o, c) in v.iter_mut().zip(b.chunks_exact(4)) {
            *o = f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        }
    }
}

impl LegacyBlock for FastBf16 {
    const BYTES: usize = 64;
    #[inline(always)]
    fn values(b: &[u8], v: &mut [f64; 32]) {
        for (o, c) in v.iter_mut().zip(b.chunks_exact(2)) {
            *o = f64::from(float::bf16_to_f32(u16::from_le_bytes([c[0], c[1]])));
        }
    }
}

// x = d·(q − offset) + 0 for the symmetric formats: the + 0 turns −0 into +0, as the block
// decoders do; d·q + m for the affine ones; d·q for q8_0.
impl LegacyBlock for FastQ4_0 {
    const BYTES: usize = 18;
    #[inline(always)]
    fn values(b: &[u8], v: &mut [f64; 32]) {
        let d = f16_at(b, 0);
        let q = nibbles(&b[2..18]);
        for j in 0..32 {
            v[j] = d * f64::from(q[j] - 8) + 0.0;
        }
    }
}

impl LegacyBlock for FastQ4_1 {
    const BYTES: usize = 20;
    #[inline(always)]
    fn values(b: &[u8], v: &mut [f64; 32]) {
        let (d, m) = (f16_at(b, 0), f16_at(b, 2));
        let q = nibbles(&b[4..20]);
        for j in 0..32 {
            v[j] = d * f64::from(q[j]) + m;
        }
    }
}

impl LegacyBlock for FastQ5_0 {
    const BYTES: usize = 22;
    #[inline(always)]
    fn values(b: &[u8], v: &mut [f64; 32]) {
        let d = f16_at(b, 0);
        let h = high_bits(u32::from_le_bytes([b[2], b[3], b[4], b[5]]));
        let q = nibbles(&b[6..22]);
        for j in 0..32 {
            v[j] = d * f64::from((q[j] | h[j]) - 16) + 0.0;
        }
    }
}

impl LegacyBlock for FastQ5_1 {
    const BYTES: usize = 24;
    #[inline(always)]
    fn values(b: &[u8], v: &mut [f64; 32]) {
        let (d, m) = (f16_at(b, 0), f16_at(b, 2));
        let h = high_bits(u32::from_le_bytes([b[4], b[5], b[6], b[7]]));
        let q = nibbles(&b[8..24]);
        for j in 0..32 {
            v[j] = d * f64::from(q[j] | h[j]) + m;
        }
    }
}

impl LegacyBlock for FastQ8_0 {
    const BYTES: usize = 34;
    #[inline(always)]
    fn values(b: &[u8], v: &mut [f64; 32]) {
        let d = f16_at(b, 0);
        for j in 0..32 {
            v[j] = d * f64::from(b[2 + j] as i8);
        }
    }
}

/// The low and high nibble of byte j of `qs` are elements j and j + 16.
#[inline(always)]
fn nibbles(qs: &[u8]) -> [i32; 32] {
    let mut q = [0; 32];
    for j in 0..16 {
        q[j] = i32::from(qs[j] & 0xF);
        q[j + 16] = i32::from(qs[j] >> 4);
    }
    q
}

/// Bit j of `h` as bit 4 of element j.
#[inline(always)]
fn high_bits(h: u32) -> [i32; 32] {
    std::array::from_fn(|j| (((h >> j) & 1) << 4) as i32)
}

/// Exact values of `bytes` (whole blocks of `dtype`, one of [`fast_format`]'s), element k
/// written to `out[k·stride]`: the same values, bit for bit, as
/// [`dequantize_into`] (the same expressions on the same
/// operands; `fast_decode_is_dequantize` checks it), without its per-block copies.
pub(crate) fn decode_fast(dtype: DType, bytes: &[u8], out: &mut [f64], stride: usize) {
    isa_dispatch!(
        decode_fast_avx512,
        decode_fast_avx2,
        (dtype, bytes, out, stride)
    );
    decode_fast_body::<{ transpose::BASE }>(dtype, bytes, out, stride)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,f16c,fma")]
unsafe fn decode_fast_avx512(dtype: DType, bytes: &[u8], out: &mut [f64], stride: usize) {
    decode_fast_body::<{ transpose::AVX512 }>(dtype, bytes, out, stride)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c,fma")]
unsafe fn decode_fast_avx2(dtype: DType, bytes: &[u8], out: &mut [f64], stride: usize) {
    decode_fast_body::<{ transpose::AVX2 }>(dtype, bytes, out, stride)
}

#[inline(always)]
fn decode_fast_body<const ISA: u8>(dtype: DType, bytes: &[u8], out: &mut [f64], stride: usize) {
    let n = bytes.len() / dtype.block_bytes() * dtype.block_len();
    let out = &mut out[..(n.max(1) - 1) * stride + 1];
    match dtype {
        DType::F32 => {
            for (k, c) in bytes.chunks_exact(4).enumerate() {
                out[k * stride] = f64::from(f32::from_le_bytes(c.try_into().expect("4 bytes")));
            }
        }
        // Contiguous, eight at a time with F16C where the caller has it (a V row).
        #[cfg(target_arch = "x86_64")]
        DType::F16 if stride == 1 && ISA >= transpose::AVX2 => {
            let (mut outs, mut ins) = (out.chunks_exact_mut(8), bytes.chunks_exact(16));
            for (o, c) in (&mut outs).zip(&mut ins) {
                let w: &[u8; 16] = c.try_into().expect("16 bytes");
                transpose::f16x8_bytes::<ISA>(w, o.try_into().expect("8 values"));
            }
            let table: &[f64; 65536] = f16_table().try_into().expect("every f16");
            for (o, c) in outs
                .into_remainder()
                .iter_mut()
                .zip(ins.remainder().chunks_exact(2))
            {
                *o = table[usize::from(u16::from_le_bytes([c[0], c[1]]))];
            }
        }
        DType::F16 => {
            let table: &[f64; 65536] = f16_table().try_into().expect("every f16");
            for (k, c) in bytes.chunks_exact(2).enumerate() {
                out[k * stride] = table[usize::from(u16::from_le_bytes([c[0], c[1]]))];
            }
        }
        DType::Bf16 => {
            for (k, c) in bytes.chunks_exact(2).enumerate() {
                out[k * stride] = f64::from(float::bf16_to_f32(u16::from_le_bytes([c[0], c[1]])));
            }
        }
        DType::Q4_0 => legacy::<FastQ4_0>(bytes, out, stride),
        DType::Q4_1 => legacy::<FastQ4_1>(bytes, out, stride),
        DType::Q5_0 => legacy::<FastQ5_0>(bytes, out, stride),
        DType::Q5_1 => legacy::<FastQ5_1>(bytes, out, stride),
        DType::Q8_0 => legacy::<FastQ8_0>(bytes, out, stride),
        DType::Q4_K => q4_k(bytes, out, stride),
        _ => unreachable!("fast_format is false for {dtype}"),
    }
}

/// q4_K blocks (256 elements, 144 bytes) decoded to their exact values, stored `stride` apart:
/// x = d·sc·q − dmin·m as the block decoder writes it, `(d·sc)·q − dmin·m`, with d·sc and
/// dmin·m taken once per 32-element sub-block instead of once per element (the same operations
/// on the same operands: the same bits, NaN and ±∞ included).
#[inline(always)]
fn q4_k(bytes: &[u8], out: &mut [f64], stride: usize) {
    let mut vals = [0.0; 256];
    for (i, b) in bytes.chunks_exact(144).enumerate() {
        let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
        let scales: &[u8; 12] = b[4..16].try_into().expect("12 scale bytes");
        let qs: &[u8; 128] = b[16..144].try_into().expect("128 quant bytes");
        for (sb, v) in vals.chunks_exact_mut(32).enumerate() {
            let (sc, m) = scale_min_k4(scales, sb);
            let (ds, dm) = (d * f64::from(sc), dmin * f64::from(m));
            let (q, shift) = (&qs[32 * (sb / 2)..32 * (sb / 2) + 32], 4 * (sb % 2));
            for (o, &byte) in v.iter_mut().zip(q) {
                *o = ds * f64::from((byte >> shift) & 0xF) - dm;
            }
        }
        // As in `legacy`: the vector arithmetic apart from the strided stores.
        let vals = std::hint::black_box(&vals);
        let base = i * 256 * stride;
        assert!(base + 255 * stride < out.len(), "room for the block");
        for (j, &v) in vals.iter().enumerate() {
            out[base + j * stride] = v;
        }
    }
}

/// One product of a matrix of A with a list of B rows: dst row `dst_rows[n]` = A · B row
/// `b_rows[n]` (an index into the decoded B values, K apiece).
pub(crate) struct Job {
    /// A's matrix: its (i2, i3).
    pub a_mat: (usize, usize),
    /// Index of each B row in the decoded B values.
    pub b_rows: Vec<usize>,
    /// The dst row each B row's results go to.
    pub dst_rows: Vec<usize>,
}

/// `dst[dst_row][m] = Σ_k A[m][k] · B[b_row][k]`, sequential in k from `init`, for every job and
/// every m < ne1 of A (A's elements decoded as `values`); `bv` holds B's decoded rows (K
/// values each, of type `b_dtype`), `dst` the dst rows (ne1 of A values each).
pub(crate) fn gemm(
    a: &TensorView,
    values: Values,
    (jobs, b_dtype): (&[Job], DType),
    bv: &[f64],
    init: f64,
    dst: &mut [f64],
) -> Result<()> {
    let [k, m, ..] = a.ne();
    let fused = values == Values::Exact && exact_products(a.dtype(), b_dtype);
    let tasks: Vec<(usize, usize)> = jobs
        .iter()
        .enumerate()
        .filter(|(_, j)| !j.b_rows.is_empty())
        .flat_map(|(j, _)| (0..m).step_by(MT).map(move |m0| (j, m0)))
        .collect();
    let blocks = tasks
        .par_iter()
        .map(|&(j, m0)| {
            let job = &jobs[j];
            let mt = MT.min(m - m0);
            if job.b_rows.len() <= FEW {
                return task_few(a, values, job, bv, init, m0, mt, fused);
            }
            let panels = mt.div_ceil(LANES);
            let n_all = job.b_rows.len();
            // out[n][0..mt]: this task's part of every dst row of the job.
            let mut out = vec![0.0; n_all * mt];
            // Short k blocks: the panel stays in L1 while the many B rows use it.
            let kb = KB;
            let mut panel = vec![0.0; kb * LANES];
            let mut tmp = vec![0.0; kb];
            let mut b_slices: Vec<&[f64]> = Vec::with_capacity(NCH);
            for n0 in (0..n_all).step_by(NCH) {
                let nch = NCH.min(n_all - n0);
                // acc[p][n]: panel p's tile row for B row n0 + n.
                let mut acc = vec![[init; LANES]; panels * nch];
                for k0 in (0..k).step_by(kb) {
                    let kn = kb.min(k - k0);
                    b_slices.clear();
                    b_slices.extend(
                        job.b_rows[n0..n0 + nch]
                            .iter()
                            .map(|&r| &bv[r * k + k0..r * k + k0 + kn]),
                    );
                    // One panel at a time: packed, then used by every B row while in L1.
                    for p in 0..panels {
                        let mp = LANES.min(mt - p * LANES);
                        pack_panel(
                            a,
                            job.a_mat,
                            m0 + p * LANES,
                            mp,
                            (k0, kn),
                            values,
                            &mut tmp,
                            &mut panel,
                        )?;
                        block(
                            kn,
                            &panel,
                            LANES,
                            &b_slices,
                            &mut acc[p * nch..(p + 1) * nch],
                            fused,
                        );
                    }
                }
                for n in 0..nch {
                    let row = &mut out[(n0 + n) * mt..(n0 + n + 1) * mt];
                    for (p, chunk) in row.chunks_mut(LANES).enumerate() {
                        chunk.copy_from_slice(&acc[p * nch + n][..chunk.len()]);
                    }
                }
            }
            Ok(out)
        })
        .collect::<Result<Vec<_>>>()?;
    for (&(j, m0), out) in tasks.iter().zip(blocks) {
        let mt = MT.min(m - m0);
        for (&d, row) in jobs[j].dst_rows.iter().zip(out.chunks_exact(mt)) {
            dst[d * m + m0..d * m + m0 + mt].copy_from_slice(row);
        }
    }
    Ok(())
}

/// B rows up to which a job takes [`task_few`] (a decode step's few tokens).
const FEW: usize = 8;

/// Elements of k per panel in [`task_few`] where whole rows are decoded eight at a time: the
/// task's four panels then take 32 KiB, in L1 while the B rows use them.
const KB_VEC: usize = 64;

/// Bytes ahead of the current k block that [`task_few`] asks the CPU to fetch in each A row:
/// its 64 rows are read a few dozen bytes at a time each (36 for q4_0, 128 for f16), too many
/// short runs for the hardware prefetcher to follow (measured: f16 mat-vec 2× faster with it;
/// 256 and 512 bytes did alike, 1536 worse).
const PREFETCH_AHEAD: usize = 256;

/// One task of [`gemm`] for a job with few B rows (a mat-vec): for each k block, every panel
/// of the task is packed first, then each B row runs against all of them at once ([`wide`]),
/// so that the sums of 64 A rows are in flight together instead of the tile's 16. With one B
/// row and rows the vertical decoders take, no panel: [`dot_rows8`] decodes into registers.
/// `fused`: the products are exact ([`exact_products`]).
#[allow(clippy::too_many_arguments)]
fn task_few(
    a: &TensorView,
    values: Values,
    job: &Job,
    bv: &[f64],
    init: f64,
    m0: usize,
    mt: usize,
    fused: bool,
) -> Result<Vec<f64>> {
    let (dtype, k) = (a.dtype(), a.ne()[0]);
    let (i2, i3) = job.a_mat;
    let panels = mt.div_ceil(LANES);
    // Whole rows of bytes, eight at a time, where the vertical decoders take them; else panels
    // as `pack_panel` makes them, in blocks of KB.
    let rows: Option<Vec<&[u8]>> =
        (values == Values::Exact && fast_format(dtype) && mt % 8 == 0 && k % 32 == 0)
            .then(|| {
                (m0..m0 + mt)
                    .map(|m| a.row_bytes(m, i2, i3, 0, k))
                    .collect()
            })
            .flatten();
    // f16 keeps the panel: its rows are four times q4_0's bytes, and the direct path, which
    // loads them in short bursts between long runs of arithmetic, waits on memory (measured
    // 1.3–1.4× slower on 14336×4096).
    let direct = rows.is_some()
        && job.b_rows.len() == 1
        && transpose::vertical_format(dtype)
        && dtype != DType::F16;
    let (block, bytes) = (dtype.block_len(), dtype.block_bytes());
    // The direct path takes KB at a time (a q4_K super-block: its scales read once; fewer
    // rounds of slicing, prefetching and dispatch); panels are KB_VEC long so that they stay
    // in L1.
    let kb = match (&rows, direct) {
        (Some(_), true) => KB,
        (Some(_), false) => KB_VEC,
        (None, _) => KB,
    };
    let mut panel = vec![0.0; if direct { 0 } else { panels * kb * LANES }];
    let mut tmp = vec![0.0; kb];
    // acc[n·panels + p]: B row n's sums over panel p.
    let mut acc = vec![[init; LANES]; job.b_rows.len() * panels];
    // The direct path's sums and each k block's bytes, eight rows a group.
    let mut acc8 = vec![[init; 8]; if direct { mt / 8 } else { 0 }];
    let mut groups = [[&[][..]; 8]; MT / 8];
    for k0 in (0..k).step_by(kb) {
        let kn = kb.min(k - k0);
        match &rows {
            Some(rows) => {
                // The k block's bytes in each row: for q4_K a quarter of a super-block.
                let (span, quarter) = match block {
                    256 if kb < 256 => (
                        k0 / 256 * bytes..(k0 / 256 + 1) * bytes,
                        Some(k0 % 256 / 64),
                    ),
                    _ => (k0 / block * bytes..(k0 + kn) / block * bytes, None),
                };
                // The bytes as far ahead, once per span.
                let ahead = span.end + PREFETCH_AHEAD..span.end + PREFETCH_AHEAD + span.len();
                let ahead = if quarter.unwrap_or(0) == 0 {
                    ahead
                } else {
                    0..0
                };
                for (g, group) in rows.chunks_exact(8).enumerate() {
                    for row in group {
                        for line in row.get(ahead.clone()).unwrap_or_default().chunks(64) {
                            prefetch(line);
                        }
                    }
                    let group: [&[u8]; 8] = std::array::from_fn(|r| &group[r][span.clone()]);
                    match direct {
                        true => groups[g] = group,
                        false => {
                            let pan = &mut panel[g / 2 * kb * LANES..];
                            decode_rows8(dtype, group, quarter, pan, g % 2 * 8);
                        }
                    }
                }
                if direct {
                    let b = &bv[job.b_rows[0] * k + k0..][..kn];
                    dot_rows8(dtype, &groups[..mt / 8], quarter, b, &mut acc8, fused);
                    continue;
                }
            }
            None => {
                for (p, pan) in panel.chunks_exact_mut(kb * LANES).enumerate() {
                    let (m, mp) = (m0 + p * LANES, LANES.min(mt - p * LANES));
                    pack_panel(a, job.a_mat, m, mp, (k0, kn), values, &mut tmp, pan)?;
                }
            }
        }
        for (&r, acc) in job.b_rows.iter().zip(acc.chunks_exact_mut(panels)) {
            let b = &bv[r * k + k0..r * k + k0 + kn];
            wide(kn, &panel, kb * LANES, b, acc, fused);
        }
    }
    if direct {
        return Ok(acc8.concat());
    }
    let mut out = vec![0.0; job.b_rows.len() * mt];
    for (row, acc) in out.chunks_exact_mut(mt).zip(acc.chunks_exact(panels)) {
        for (chunk, a) in row.chunks_mut(LANES).zip(acc) {
            chunk.copy_from_slice(&a[..chunk.len()]);
        }
    }
    Ok(out)
}

/// Hints the CPU to bring the first cache line of `bytes` into cache (a no-op for an empty
/// slice, or where there is no such hint).
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    if !bytes.is_empty() {
        // SAFETY: SSE is part of x86_64; a prefetch never faults and the address is valid.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                bytes.as_ptr() as *const i8
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

/// A zeroed f64 buffer of `n` values (None: more than a usize can count), or
/// [`crate::Error::Shape`] when they cannot be allocated (instead of a capacity-overflow panic
/// or an abort).
pub(crate) fn zeroed(op: &'static str, n: Option<usize>) -> Result<Vec<f64>> {
    let mut v = reserved(op, n)?;
    v.resize(n.unwrap_or_default(), 0.0);
    Ok(v)
}

/// An empty f64 buffer with room for exactly `n` values, for a result written in order
/// (no zeroing pass), or [`crate::Error::Shape`] as [`zeroed`] says.
pub(crate) fn reserved(op: &'static str, n: Option<usize>) -> Result<Vec<f64>> {
    let too_large = |n: Option<usize>| crate::Error::Shape {
        op,
        reason: match n {
            Some(n) => format!("the result's {n} values do not fit in memory"),
            None => "the result has too many elements to address".into(),
        },
    };
    let n = n.ok_or_else(|| too_large(None))?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| too_large(Some(n)))?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::prim::sum_init;

    /// The fast decoders give `dequantize_into`'s bits (NaN payloads aside): every f16 and bf16
    /// value, and random
    /// blocks (random scale bits too: NaN, ±∞, subnormals) of every block format they handle.
    #[test]
    fn fast_decode_is_dequantize() {
        let check = |dtype: DType, bytes: &[u8]| {
            let n = bytes.len() / dtype.block_bytes() * dtype.block_len();
            let mut want = vec![0.0; n];
            dequantize_into(dtype, bytes, &mut want).unwrap();
            for stride in [1, 3] {
                let mut got = vec![7.0; n * stride];
                decode_fast(dtype, bytes, &mut got, stride);
                for (k, w) in want.iter().enumerate() {
                    let g = got[k * stride];
                    // Any NaN matches any NaN: with NaN in both d and m, which payload the add
                    // passes on depends on the operand order the compiler picks.
                    let same = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
                    assert!(same, "{dtype} element {k}: {g} vs {w}");
                }
            }
        };
        let all16: Vec<u8> = (0..=u16::MAX).flat_map(|x| x.to_le_bytes()).collect();
        check(DType::F16, &all16);
        check(DType::Bf16, &all16);
        let mut seed = 12345u64;
        let mut byte = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 56) as u8
        };
        let f32s: Vec<u8> = (0..4 * 4096).map(|_| byte()).collect();
        check(DType::F32, &f32s);
        for dtype in [
            DType::Q4_0,
            DType::Q4_1,
            DType::Q5_0,
            DType::Q5_1,
            DType::Q8_0,
            DType::Q4_K,
        ] {
            assert!(fast_format(dtype));
            let bytes: Vec<u8> = (0..dtype.block_bytes() * 4096).map(|_| byte()).collect();
            check(dtype, &bytes);
        }
    }

    /// Values with a wide exponent range, both signs, some exact zeros and negative zeros; with
    /// `exact`, rounded to f16 (the A side) or f32 (the B side) so that their products are exact.
    fn test_values(seed: u64) -> impl FnMut(Option<DType>) -> f64 {
        let mut seed = seed;
        move |round: Option<DType>| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let x = match seed % 16 {
                0 => 0.0,
                1 => -0.0,
                _ => {
                    ((seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5)
                        * 2f64.powi((seed % 40) as i32 - 20)
                }
            };
            match round {
                Some(DType::F16) => half::f16::from_f64(x).to_f64(),
                Some(_) => f64::from(x as f32),
                None => x,
            }
        }
    }

    /// Every ISA version of the tile gives the sequential dot product's bits; fused too where
    /// the products are exact (f16 × f32 values).
    #[test]
    fn block_is_the_sequential_dot_product_on_every_isa() {
        let mut next = test_values(0x9e37_79b9_7f4a_7c15);
        for (kn, nrows, stride) in [
            (1, 1, LANES),
            (7, 5, LANES),
            (300, 9, LANES + 3),
            (64, 4, 40),
            (50, 14, LANES),
        ] {
            for exact in [false, true] {
                assert!(exact_products(DType::F16, DType::F32));
                let (ra, rb) = match exact {
                    true => (Some(DType::F16), Some(DType::F32)),
                    false => (None, None),
                };
                let a: Vec<f64> = (0..kn * stride + LANES).map(|_| next(ra)).collect();
                let b: Vec<Vec<f64>> = (0..nrows)
                    .map(|_| (0..kn).map(|_| next(rb)).collect())
                    .collect();
                let b_refs: Vec<&[f64]> = b.iter().map(|r| r.as_slice()).collect();
                let want: Vec<[f64; LANES]> = b
                    .iter()
                    .map(|row| {
                        std::array::from_fn(|l| {
                            (0..kn).map(|k| a[k * stride + l] * row[k]).sum::<f64>()
                        })
                    })
                    .collect();
                let check = |acc: &[[f64; LANES]]| {
                    for (g, w) in acc.iter().zip(&want) {
                        for (x, y) in g.iter().zip(w) {
                            assert_eq!(x.to_bits(), y.to_bits(), "kn {kn} rows {nrows} {exact}");
                        }
                    }
                };
                let mut acc = vec![[sum_init(); LANES]; nrows];
                block(kn, &a, stride, &b_refs, &mut acc, exact);
                check(&acc);
                let mut acc = vec![[sum_init(); LANES]; nrows];
                block_body::<1, false>(kn, &a, stride, &b_refs, &mut acc);
                check(&acc);
                #[cfg(target_arch = "x86_64")]
                if has_avx2() {
                    let mut acc = vec![[sum_init(); LANES]; nrows];
                    // SAFETY: the CPU has AVX2 and FMA.
                    match exact {
                        true => unsafe { block_avx2::<true>(kn, &a, stride, &b_refs, &mut acc) },
                        false => unsafe { block_avx2::<false>(kn, &a, stride, &b_refs, &mut acc) },
                    }
                    check(&acc);
                }
            }
        }
    }

    /// The mat-vec kernel over 1 to 4 panels gives the sequential dot product's bits, plain
    /// and (exact products) fused.
    #[test]
    fn wide_is_the_sequential_dot_product() {
        let mut next = test_values(0x2545_f491_4f6c_dd1d);
        for (kn, panels) in [(1, 1), (7, 2), (64, 3), (300, 4), (33, 4)] {
            for exact in [false, true] {
                let (ra, rb) = match exact {
                    true => (Some(DType::F16), Some(DType::F32)),
                    false => (None, None),
                };
                let pstride = kn * LANES + 8;
                let a: Vec<f64> = (0..panels * pstride).map(|_| next(ra)).collect();
                let b: Vec<f64> = (0..kn).map(|_| next(rb)).collect();
                let mut acc = vec![[sum_init(); LANES]; panels];
                wide(kn, &a, pstride, &b, &mut acc, exact);
                for (p, got) in acc.iter().enumerate() {
                    for (l, g) in got.iter().enumerate() {
                        let w: f64 = (0..kn).map(|k| a[p * pstride + k * LANES + l] * b[k]).sum();
                        assert_eq!(g.to_bits(), w.to_bits(), "kn {kn} panel {p} {exact}");
                    }
                }
            }
        }
    }
}
