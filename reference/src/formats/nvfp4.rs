//! NVFP4 as ggml stores it (type 40, read in `ggml-common.h` and `ggml-impl.h` of a recent
//! tree): 64-element blocks of four UE4M3 scale bytes (one per 16 elements) and 32 bytes of
//! E2M1 codes (36 bytes).
//!
//! * **E2M1** elements as in MXFP4 ([`super::mxfp4`]): ggml keeps their magnitudes doubled
//!   (0, 1, 2, 3, 4, 6, 8, 12) and halves the scale.
//! * **UE4M3** scales: an unsigned 8-bit float with 4 exponent bits (bias 7) and 3 mantissa
//!   bits: man·2⁻⁹ for exponent 0, (1 + man/8)·2^(exp − 7) otherwise (2⁻⁹ … 448). Code 0x7F,
//!   NaN in the E4M3 format the scale comes from, decodes to 0 in every ggml decoder (CPU, the
//!   Vulkan table, the Vulkan float8 path), and so here. Bit 7 is not part of the format
//!   (ggml's quantizer never sets it; its Vulkan table has 128 entries): the CPU decoder
//!   ignores it except that 0xFF gives 480, and vkdiff never draws it.
//! * Layout: `d[4]` at 0, `qs[32]` at 4; sub-block s reads `qs[8s .. 8s + 8]`, byte j holding
//!   element 16·s + j (low nibble) and 16·s + j + 8 (high nibble).
//! * Value: kvalue · (scale · 0.5), exact in f32 and f64 (≤ 4 significant bits, 2⁻¹⁰ … 2688).
//!
//! ggml's quantizer rounds the scale with its own float-to-UE4M3 conversion; it is not
//! reproduced ([`DType::has_quantizer`]): test values are raw blocks.

use super::legacy::Block;
use super::mxfp4::e2m1_doubled;
use super::DType;

/// Elements per NVFP4 block (ggml's QK_NVFP4).
pub const QK_NVFP4: usize = 64;
/// Elements per UE4M3 scale (ggml's QK_NVFP4_SUB).
pub const QK_NVFP4_SUB: usize = 16;

/// UE4M3's NaN code, which ggml decodes to 0.
pub const UE4M3_NAN: u8 = 0x7F;

/// ggml's `ggml_ue4m3_to_fp32`: the scale of `x`, halved (the doubled kvalues' convention).
pub fn ue4m3_half(x: u8) -> f32 {
    if x == 0 || x == UE4M3_NAN {
        return 0.0;
    }
    let exp = i32::from((x >> 3) & 0xF);
    let man = f32::from(x & 7);
    let raw = if exp == 0 {
        man * 2f32.powi(-9)
    } else {
        (1.0 + man / 8.0) * 2f32.powi(exp - 7)
    };
    raw * 0.5
}

/// An NVFP4 block (36 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockNvfp4 {
    /// UE4M3 scales of the four 16-element sub-blocks.
    pub d: [u8; QK_NVFP4 / QK_NVFP4_SUB],
    /// E2M1 codes: byte 8·s + j holds elements 16·s + j (low) and 16·s + j + 8 (high).
    pub qs: [u8; QK_NVFP4 / 2],
}

const _: () = assert!(std::mem::size_of::<BlockNvfp4>() == 36);

impl BlockNvfp4 {
    /// The E2M1 code of element e (0 … 63).
    pub fn code(&self, e: usize) -> u8 {
        let (s, j) = (e / QK_NVFP4_SUB, e % QK_NVFP4_SUB);
        let byte = self.qs[8 * s + j % 8];
        if j >= 8 {
            byte >> 4
        } else {
            byte & 0xF
        }
    }

    /// ggml's f32 value of element e: kvalue · ue4m3_half(scale) (exact).
    fn value(&self, e: usize) -> f32 {
        e2m1_doubled(self.code(e)) as f32 * ue4m3_half(self.d[e / QK_NVFP4_SUB])
    }
}

impl Block for BlockNvfp4 {
    const DTYPE: DType = DType::Nvfp4;
    const LEN: usize = QK_NVFP4;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        assert_eq!(bytes.len(), Self::BYTES, "nvfp4 block: 36 bytes");
        Self {
            d: bytes[..4].try_into().expect("4 bytes"),
            qs: bytes[4..].try_into().expect("32 bytes"),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        assert_eq!(out.len(), Self::BYTES, "nvfp4 block: 36 bytes");
        out[..4].copy_from_slice(&self.d);
        out[4..].copy_from_slice(&self.qs);
    }

    /// Every value is exact in f32 (module docs), so the exact values are ggml's.
    fn decode(&self, out: &mut [f64]) {
        assert_eq!(out.len(), QK_NVFP4, "decoded block");
        for (e, o) in out.iter_mut().enumerate() {
            *o = f64::from(self.value(e));
        }
    }

    fn decode_f32(&self, out: &mut [f32]) {
        assert_eq!(out.len(), QK_NVFP4, "decoded block");
        for (e, o) in out.iter_mut().enumerate() {
            *o = self.value(e);
        }
    }
}
