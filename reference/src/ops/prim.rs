//! What the tile kernels (`kernel`) and the row decoders (`transpose`) share: the panel width,
//! the sum's starting value, the multiply-add, f16 decoding and the CPU feature checks.

use std::sync::OnceLock;

use crate::formats::float;

/// A rows per panel: the vector width of the tile (two AVX-512 registers of f64).
pub(crate) const LANES: usize = 16;

/// The value of an empty `Iterator::sum::<f64>()`: the reference's dot products are
/// `iter.map(|(x, y)| x * y).sum()`, and the sum's starting value decides the sign of an
/// all-(−0) sum, so the fast paths start from exactly the same value.
pub(crate) fn sum_init() -> f64 {
    std::iter::empty::<f64>().sum()
}

/// `c + a·b` for the tile kernels; with `FUSED`, as one fused multiply-add, which is the same
/// value when the product a·b is exact ([`exact_products`]): both round the exact a·b + c once.
#[inline(always)]
pub(crate) fn madd<const FUSED: bool>(c: f64, a: f64, b: f64) -> f64 {
    if FUSED {
        a.mul_add(b, c)
    } else {
        c + a * b
    }
}

/// Every f16 value, exactly as [`float::f16_to_f64`] gives it (so the table is bit-identical to
/// the decoder by construction): 512 KiB, built once.
pub(crate) fn f16_table() -> &'static [f64] {
    static TABLE: OnceLock<Vec<f64>> = OnceLock::new();
    TABLE.get_or_init(|| (0..=u16::MAX).map(float::f16_to_f64).collect())
}

#[inline(always)]
pub(crate) fn f16_at(b: &[u8], at: usize) -> f64 {
    float::f16_to_f64(u16::from_le_bytes([b[at], b[at + 1]]))
}

/// Whether the CPU has what [`super::transpose::AVX512`] code uses.
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx512() -> bool {
    use std::arch::is_x86_feature_detected as has;
    has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("f16c") && has!("fma")
}

/// Whether the CPU has what [`super::transpose::AVX2`] code uses.
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx2() -> bool {
    use std::arch::is_x86_feature_detected as has;
    has!("avx2") && has!("f16c") && has!("fma")
}
