//! Scalar 16-bit float encodings (section 2.2 of the interface spec) and the C conversion
//! rules the reference quantizers depend on.
//!
//! Every decode here is exact: binary16 and bfloat16 values are all representable in f32 and
//! f64. The encoders round to nearest, ties to even, exactly as ggml's CPU conversions do.

use half::f16;

/// Exact value of the IEEE binary16 number with bits `bits` (subnormals, infinities and NaN
/// included).
#[inline]
pub fn f16_to_f64(bits: u16) -> f64 {
    f16::from_bits(bits).to_f64()
}

/// Exact value of the IEEE binary16 number with bits `bits`, as f32.
#[inline]
pub fn f16_to_f32(bits: u16) -> f32 {
    f16::from_bits(bits).to_f32()
}

/// `ggml_fp32_to_fp16`: round to nearest, ties to even; overflow gives ±Inf and NaN stays a
/// (quiet) NaN.
#[inline]
pub fn f32_to_f16(x: f32) -> u16 {
    f16::from_f32(x).to_bits()
}

/// Value of the bfloat16 number with bits `bits`: the upper half of a binary32 (exact).
#[inline]
pub fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// `ggml_compute_fp32_to_bf16`, the CPU conversion: NaN becomes the quiet NaN
/// `(u >> 16) | 64` (sign and top payload bits kept), every other value is rounded to nearest,
/// ties to even (overflow rounds to ±Inf).
#[inline]
pub fn f32_to_bf16(x: f32) -> u16 {
    let u = x.to_bits();
    if u & 0x7fff_ffff > 0x7f80_0000 {
        return ((u >> 16) | 64) as u16;
    }
    f32_to_bf16_shader(x)
}

/// The shaders' `fp32_to_bf16` (types.comp): the same round to nearest even as
/// [`f32_to_bf16`] but without the NaN case, so a NaN whose payload lies only in the low half
/// can round to Inf or to another NaN.
#[inline]
pub fn f32_to_bf16_shader(x: f32) -> u16 {
    let u = x.to_bits();
    (u.wrapping_add(0x7fff + ((u >> 16) & 1)) >> 16) as u16
}

/// C's `(int)x` for an f32 as x86-64 compiles it (`cvttss2si`): truncation toward zero, and
/// the "integer indefinite" value `i32::MIN` for NaN and for values outside the i32 range
/// (undefined behaviour in C; this is what ggml's x86 builds do).
#[inline]
pub(crate) fn c_f32_to_i32(x: f32) -> i32 {
    // 2^31 is exactly representable; every f32 in [-2^31, 2^31) truncates into range.
    if x.is_nan() || !(-2_147_483_648.0..2_147_483_648.0).contains(&x) {
        i32::MIN
    } else {
        x as i32
    }
}

/// C's `(int8_t)x` for an f32, promoted back to `int`: compilers convert through a 32-bit
/// integer and keep its low byte, so an in-range value truncates toward zero and an
/// out-of-range one wraps (NaN and huge values give 0, the low byte of `i32::MIN`).
#[inline]
pub(crate) fn c_f32_to_i8(x: f32) -> i32 {
    i32::from(c_f32_to_i32(x) as i8)
}
