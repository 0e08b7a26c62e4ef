//! ggml element types and block formats, bit-exact with ggml (sections 2.1–2.5 and 2.7 of the
//! interface spec; the K-quants live in `kquants.rs`, iq4_nl/iq4_xs in `iq4.rs`, the lattice
//! i-quants iq1_s … iq3_s in `iq_grid.rs` with their tables in `iq_tables.rs`, MXFP4 in
//! `mxfp4.rs`, NVFP4 in `nvfp4.rs`, the 1- and 2-bit formats q1_0, q2_0, tq1_0 and tq2_0 in
//! `lowbit.rs`).
//!
//! * [`dequantize`] / [`dequantize_into`] give the exact element values (as f64: every format
//!   here decodes exactly into f64).
//! * [`dequantize_f32`] gives ggml's own f32 numbers (`dequantize_row_<t>`), bit for bit.
//! * [`quantize`] is ggml's reference quantizer (`quantize_row_<t>_ref`, the f16/bf16 CPU
//!   conversions), bit for bit, for the formats whose quantizer the spec gives
//!   ([`DType::has_quantizer`]); the others are generated as raw blocks.
//!
//! Each block format's layout lives in one place: its `#[repr(C)]` struct and [`Block`] impl.

pub mod float;
mod iq4;
pub mod iq_grid;
pub mod iq_tables;
mod kquants;
mod legacy;
pub mod lowbit;
pub mod mxfp4;
pub mod nvfp4;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_iq;
#[cfg(test)]
mod tests_kquants;
#[cfg(test)]
mod tests_lowbit;
#[cfg(test)]
mod tests_mxfp4;

pub use iq4::{BlockIq4Nl, BlockIq4Xs, KVALUES_IQ4NL};
pub use iq_grid::{
    BlockIq1M, BlockIq1S, BlockIq2S, BlockIq2Xs, BlockIq2Xxs, BlockIq3S, BlockIq3Xxs,
};
pub use iq_tables::{iq_grids, IqGrids};
pub use kquants::{scale_min_k4, BlockQ2_K, BlockQ3_K, BlockQ4_K, BlockQ5_K, BlockQ6_K, QK_K};
pub use legacy::{Block, BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1, BlockQ8_0, BlockQ8_1};
pub use lowbit::{BlockQ1_0, BlockQ2_0, BlockTq1_0, BlockTq2_0};
pub use mxfp4::BlockMxfp4;
pub use nvfp4::BlockNvfp4;

use crate::{Error, Result};

/// A ggml element type.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum DType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16: the upper 16 bits of a binary32.
    Bf16,
    /// 32-element blocks of 4-bit quants with an f16 scale (18 bytes).
    Q4_0,
    /// 32-element blocks of 4-bit quants with f16 scale and minimum (20 bytes).
    Q4_1,
    /// 32-element blocks of 5-bit quants with an f16 scale (22 bytes).
    Q5_0,
    /// 32-element blocks of 5-bit quants with f16 scale and minimum (24 bytes).
    Q5_1,
    /// 32-element blocks of 8-bit quants with an f16 scale (34 bytes).
    Q8_0,
    /// 32-element blocks of 8-bit quants with an f16 scale and f16 scaled sum (36 bytes).
    Q8_1,
    /// 256-element super-blocks of 2-bit quants, 4-bit scales and mins (84 bytes).
    #[serde(rename = "q2_K")]
    #[allow(non_camel_case_types)] // ggml's spelling
    Q2_K,
    /// 256-element super-blocks of 3-bit quants and 6-bit scales (110 bytes).
    #[serde(rename = "q3_K")]
    #[allow(non_camel_case_types)] // ggml's spelling
    Q3_K,
    /// 256-element super-blocks of 4-bit quants, 6-bit scales and mins (144 bytes).
    #[serde(rename = "q4_K")]
    #[allow(non_camel_case_types)] // ggml's spelling
    Q4_K,
    /// 256-element super-blocks of 5-bit quants, 6-bit scales and mins (176 bytes).
    #[serde(rename = "q5_K")]
    #[allow(non_camel_case_types)] // ggml's spelling
    Q5_K,
    /// 256-element super-blocks of 6-bit quants and 8-bit scales (210 bytes).
    #[serde(rename = "q6_K")]
    #[allow(non_camel_case_types)] // ggml's spelling
    Q6_K,
    /// 256-element super-blocks of iq1s grid rows ({−1, 0, +1} ± 1/8), 3-bit scales (50 bytes).
    Iq1S,
    /// As iq1_s with two scales per 32 elements and the f16 scale split into nibbles (56 bytes).
    Iq1M,
    /// 256-element super-blocks of 8-wide iq2xxs grid rows with sign indices (66 bytes).
    Iq2Xxs,
    /// 256-element super-blocks of 9-bit iq2xs grid indices with sign indices (74 bytes).
    Iq2Xs,
    /// 256-element super-blocks of 10-bit iq2s grid indices with sign bytes (82 bytes).
    Iq2S,
    /// 256-element super-blocks of 4-wide iq3xxs grid rows with sign indices (98 bytes).
    Iq3Xxs,
    /// 256-element super-blocks of 9-bit iq3s grid indices with sign bytes (110 bytes).
    Iq3S,
    /// 32-element blocks of 4-bit indices into a non-linear table, f16 scale (18 bytes).
    Iq4Nl,
    /// 256-element super-blocks of 4-bit non-linear indices with 6-bit scales (136 bytes).
    Iq4Xs,
    /// OCP MX: 32-element blocks of E2M1 codes with a shared E8M0 scale (17 bytes).
    Mxfp4,
    /// 64-element blocks of E2M1 codes with four UE4M3 scales, one per 16 elements (36 bytes).
    Nvfp4,
    /// 128-element blocks of sign bits with an f16 scale: ±d (18 bytes).
    Q1_0,
    /// 64-element blocks of 2-bit codes with an f16 scale: d·(q − 1) (18 bytes).
    Q2_0,
    /// 256-element blocks of base-3 packed ternary codes with an f16 scale (54 bytes).
    #[allow(non_camel_case_types)] // ggml's spelling
    Tq1_0,
    /// 256-element blocks of 2-bit ternary codes with an f16 scale (66 bytes).
    #[allow(non_camel_case_types)] // ggml's spelling
    Tq2_0,
    /// Little-endian 32-bit signed integers.
    I32,
}

impl DType {
    /// Every variant, in declaration order.
    pub const ALL: &'static [DType] = &[
        DType::F32,
        DType::F16,
        DType::Bf16,
        DType::Q4_0,
        DType::Q4_1,
        DType::Q5_0,
        DType::Q5_1,
        DType::Q8_0,
        DType::Q8_1,
        DType::Q2_K,
        DType::Q3_K,
        DType::Q4_K,
        DType::Q5_K,
        DType::Q6_K,
        DType::Iq1S,
        DType::Iq1M,
        DType::Iq2Xxs,
        DType::Iq2Xs,
        DType::Iq2S,
        DType::Iq3Xxs,
        DType::Iq3S,
        DType::Iq4Nl,
        DType::Iq4Xs,
        DType::Mxfp4,
        DType::Nvfp4,
        DType::Q1_0,
        DType::Q2_0,
        DType::Tq1_0,
        DType::Tq2_0,
        DType::I32,
    ];

    /// The quantized weight formats (every block format but q8_1, which ggml uses only for
    /// activations).
    pub const WEIGHT_QUANTS: &'static [DType] = &[
        DType::Q4_0,
        DType::Q4_1,
        DType::Q5_0,
        DType::Q5_1,
        DType::Q8_0,
        DType::Q2_K,
        DType::Q3_K,
        DType::Q4_K,
        DType::Q5_K,
        DType::Q6_K,
        DType::Iq1S,
        DType::Iq1M,
        DType::Iq2Xxs,
        DType::Iq2Xs,
        DType::Iq2S,
        DType::Iq3Xxs,
        DType::Iq3S,
        DType::Iq4Nl,
        DType::Iq4Xs,
        DType::Mxfp4,
        DType::Nvfp4,
        DType::Q1_0,
        DType::Q2_0,
        DType::Tq1_0,
        DType::Tq2_0,
    ];

    /// The lattice i-quants (iq1_s … iq3_s: grid tables, [`iq_grid`]).
    pub const LATTICE_IQUANTS: &'static [DType] = &[
        DType::Iq1S,
        DType::Iq1M,
        DType::Iq2Xxs,
        DType::Iq2Xs,
        DType::Iq2S,
        DType::Iq3Xxs,
        DType::Iq3S,
    ];

    /// Elements per block (ggml's block size): 1 for the scalar types, 32 for the quants.
    pub const fn block_len(self) -> usize {
        match self {
            DType::F32 | DType::F16 | DType::Bf16 | DType::I32 => 1,
            DType::Q4_0 | DType::Q4_1 | DType::Q5_0 | DType::Q5_1 | DType::Q8_0 | DType::Q8_1 => {
                legacy::QK
            }
            DType::Iq4Nl => iq4::QK4_NL,
            DType::Mxfp4 => mxfp4::QK_MXFP4,
            DType::Nvfp4 => nvfp4::QK_NVFP4,
            DType::Q1_0 => lowbit::QK1_0,
            DType::Q2_0 => lowbit::QK2_0,
            DType::Tq1_0 | DType::Tq2_0 => kquants::QK_K,
            DType::Q2_K
            | DType::Q3_K
            | DType::Q4_K
            | DType::Q5_K
            | DType::Q6_K
            | DType::Iq1S
            | DType::Iq1M
            | DType::Iq2Xxs
            | DType::Iq2Xs
            | DType::Iq2S
            | DType::Iq3Xxs
            | DType::Iq3S
            | DType::Iq4Xs => kquants::QK_K,
        }
    }

    /// Bytes per block (ggml's type size).
    pub const fn block_bytes(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::Bf16 => 2,
            DType::Q4_0 => 18,
            DType::Q4_1 => 20,
            DType::Q5_0 => 22,
            DType::Q5_1 => 24,
            DType::Q8_0 => 34,
            DType::Q8_1 => 36,
            DType::Q2_K => 84,
            DType::Q3_K => 110,
            DType::Q4_K => 144,
            DType::Q5_K => 176,
            DType::Q6_K => 210,
            DType::Iq1S => 50,
            DType::Iq1M => 56,
            DType::Iq2Xxs => 66,
            DType::Iq2Xs => 74,
            DType::Iq2S => 82,
            DType::Iq3Xxs => 98,
            DType::Iq3S => 110,
            DType::Iq4Nl => 18,
            DType::Iq4Xs => 136,
            DType::Mxfp4 => 17,
            DType::Nvfp4 => 36,
            DType::Q1_0 | DType::Q2_0 => 18,
            DType::Tq1_0 => 54,
            DType::Tq2_0 => 66,
        }
    }

    /// ggml's type name (`ggml_type_name`), e.g. `"q4_0"`.
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
            DType::Q4_0 => "q4_0",
            DType::Q4_1 => "q4_1",
            DType::Q5_0 => "q5_0",
            DType::Q5_1 => "q5_1",
            DType::Q8_0 => "q8_0",
            DType::Q8_1 => "q8_1",
            DType::Q2_K => "q2_K",
            DType::Q3_K => "q3_K",
            DType::Q4_K => "q4_K",
            DType::Q5_K => "q5_K",
            DType::Q6_K => "q6_K",
            DType::Iq1S => "iq1_s",
            DType::Iq1M => "iq1_m",
            DType::Iq2Xxs => "iq2_xxs",
            DType::Iq2Xs => "iq2_xs",
            DType::Iq2S => "iq2_s",
            DType::Iq3Xxs => "iq3_xxs",
            DType::Iq3S => "iq3_s",
            DType::Iq4Nl => "iq4_nl",
            DType::Iq4Xs => "iq4_xs",
            DType::Mxfp4 => "mxfp4",
            DType::Nvfp4 => "nvfp4",
            DType::Q1_0 => "q1_0",
            DType::Q2_0 => "q2_0",
            DType::Tq1_0 => "tq1_0",
            DType::Tq2_0 => "tq2_0",
            DType::I32 => "i32",
        }
    }

    /// The type called `s` (as [`name`](Self::name) spells it, ignoring ASCII case).
    pub fn from_name(s: &str) -> Option<DType> {
        DType::ALL
            .iter()
            .copied()
            .find(|t| t.name().eq_ignore_ascii_case(s))
    }

    /// Whether this is a block format (more than one element per block).
    pub const fn is_quantized(self) -> bool {
        self.block_len() > 1
    }

    /// Byte offsets, within one block, of its f16 scale fields (d, then m or dmin). Every other
    /// bit of a block is a free code bit, so a generator can write any scale it wants here and
    /// random bytes elsewhere. Empty for the scalar types, for iq1_m, whose f16 scale is
    /// spread over four nibbles (read and write scales through [`f16_scale`](Self::f16_scale)
    /// and [`set_f16_scale`](Self::set_f16_scale), which cover every format), and for mxfp4
    /// and nvfp4, whose scales are bytes of their own formats ([`mxfp4`], [`nvfp4`]).
    pub const fn f16_fields(self) -> &'static [usize] {
        match self {
            DType::F32
            | DType::F16
            | DType::Bf16
            | DType::I32
            | DType::Iq1M
            | DType::Mxfp4
            | DType::Nvfp4 => &[],
            DType::Q4_0
            | DType::Q5_0
            | DType::Q8_0
            | DType::Iq1S
            | DType::Iq2Xxs
            | DType::Iq2Xs
            | DType::Iq2S
            | DType::Iq3Xxs
            | DType::Iq3S
            | DType::Iq4Nl
            | DType::Iq4Xs
            | DType::Q1_0
            | DType::Q2_0 => &[0],
            DType::Tq1_0 => &[52],
            DType::Tq2_0 => &[64],
            DType::Q4_1 | DType::Q5_1 | DType::Q8_1 | DType::Q4_K | DType::Q5_K => &[0, 2],
            DType::Q2_K => &[80, 82],
            DType::Q3_K => &[108],
            DType::Q6_K => &[208],
        }
    }

    /// Number of f16 scales in one block (d, then m or dmin): 0 for the scalar types.
    pub const fn f16_scales(self) -> usize {
        match self {
            DType::Iq1M => 1,
            _ => self.f16_fields().len(),
        }
    }

    /// The `i`-th f16 scale of `block` (one block of this type).
    pub fn f16_scale(self, block: &[u8], i: usize) -> half::f16 {
        match self {
            DType::Iq1M => {
                assert_eq!(i, 0, "iq1_m has one scale");
                iq_grid::iq1_m_scale(block)
            }
            _ => {
                let at = self.f16_fields()[i];
                half::f16::from_le_bytes([block[at], block[at + 1]])
            }
        }
    }

    /// Writes the `i`-th f16 scale of `block`, keeping every other bit.
    pub fn set_f16_scale(self, block: &mut [u8], i: usize, v: half::f16) {
        match self {
            DType::Iq1M => {
                assert_eq!(i, 0, "iq1_m has one scale");
                iq_grid::set_iq1_m_scale(block, v)
            }
            _ => {
                let at = self.f16_fields()[i];
                block[at..at + 2].copy_from_slice(&v.to_le_bytes());
            }
        }
    }

    /// Whether [`quantize`] can produce this type: false for the formats whose ggml reference
    /// quantizer vkdiff does not reproduce (docs/interface.md §2.7: the K-quants and
    /// iq4_nl/iq4_xs, whose quantizers search over candidate scales, the lattice i-quants, and
    /// mxfp4, whose shared exponent depends on the C library's log2f: [`mxfp4::encode`] is the
    /// MX specification's conversion instead, and the later nvfp4, q1_0, q2_0, tq1_0 and
    /// tq2_0); generate raw blocks for those instead.
    pub const fn has_quantizer(self) -> bool {
        !matches!(
            self,
            DType::Iq1S
                | DType::Iq1M
                | DType::Iq2Xxs
                | DType::Iq2Xs
                | DType::Iq2S
                | DType::Iq3Xxs
                | DType::Iq3S
                | DType::Q2_K
                | DType::Q3_K
                | DType::Q4_K
                | DType::Q5_K
                | DType::Q6_K
                | DType::Iq4Nl
                | DType::Iq4Xs
                | DType::Mxfp4
                | DType::Nvfp4
                | DType::Q1_0
                | DType::Q2_0
                | DType::Tq1_0
                | DType::Tq2_0
        )
    }

    /// Bytes taken by `n` elements; [`Error::RaggedRow`] unless `n` is a whole number of
    /// blocks.
    pub fn row_bytes(self, n: usize) -> Result<usize> {
        let block = self.block_len();
        if n % block != 0 {
            return Err(Error::RaggedRow {
                dtype: self,
                n,
                block,
            });
        }
        Ok(n / block * self.block_bytes())
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Checks that `bytes` holds exactly `n` elements of `dtype`.
fn check_bytes(dtype: DType, bytes: usize, n: usize) -> Result<()> {
    let expected = dtype.row_bytes(n)?;
    if bytes != expected {
        return Err(Error::ByteLength {
            what: format!("{n} {dtype} elements"),
            expected,
            got: bytes,
        });
    }
    Ok(())
}

/// Decodes each `N`-byte scalar of `bytes` with `f` into the matching slot of `out`.
fn scalars<const N: usize, T>(bytes: &[u8], out: &mut [T], f: impl Fn([u8; N]) -> T) {
    for (o, c) in out.iter_mut().zip(bytes.chunks_exact(N)) {
        *o = f(c.try_into().expect("chunk of length N"));
    }
}

/// Encodes each value of `src` with `f` into the matching `N` bytes of `out`.
fn encode_scalars<const N: usize>(src: &[f32], out: &mut [u8], f: impl Fn(f32) -> [u8; N]) {
    for (&v, o) in src.iter().zip(out.chunks_exact_mut(N)) {
        o.copy_from_slice(&f(v));
    }
}

fn decode_blocks<B: Block>(bytes: &[u8], out: &mut [f64]) {
    for (b, o) in bytes
        .chunks_exact(B::BYTES)
        .zip(out.chunks_exact_mut(B::LEN))
    {
        B::from_bytes(b).decode(o);
    }
}

fn decode_blocks_f32<B: Block>(bytes: &[u8], out: &mut [f32]) {
    for (b, o) in bytes
        .chunks_exact(B::BYTES)
        .zip(out.chunks_exact_mut(B::LEN))
    {
        B::from_bytes(b).decode_f32(o);
    }
}

fn encode_blocks<B: Block>(src: &[f32], out: &mut [u8]) {
    for (s, o) in src.chunks_exact(B::LEN).zip(out.chunks_exact_mut(B::BYTES)) {
        B::quantize(s).to_bytes(o);
    }
}

/// Exact element values of the `n` elements stored in `bytes`, which must be exactly
/// `dtype.row_bytes(n)` long.
///
/// Every format here decodes exactly into f64 (d·q + m has few enough bits), so these are the
/// mathematical values, not rounded ones. i32 decodes to its integer value; an mxfp4 block
/// whose E8M0 scale is the NaN code 0xFF decodes to NaN (the MX specification).
pub fn dequantize(dtype: DType, bytes: &[u8], n: usize) -> Result<Vec<f64>> {
    check_bytes(dtype, bytes.len(), n)?;
    let mut out = vec![0.0; n];
    dequantize_into(dtype, bytes, &mut out)?;
    Ok(out)
}

/// [`dequantize`] into `out` (its length is the element count), without allocating.
pub fn dequantize_into(dtype: DType, bytes: &[u8], out: &mut [f64]) -> Result<()> {
    check_bytes(dtype, bytes.len(), out.len())?;
    match dtype {
        DType::F32 => scalars(bytes, out, |b| f64::from(f32::from_le_bytes(b))),
        DType::F16 => scalars(bytes, out, |b| float::f16_to_f64(u16::from_le_bytes(b))),
        DType::Bf16 => scalars(bytes, out, |b| {
            f64::from(float::bf16_to_f32(u16::from_le_bytes(b)))
        }),
        DType::I32 => scalars(bytes, out, |b| f64::from(i32::from_le_bytes(b))),
        DType::Q4_0 => decode_blocks::<BlockQ4_0>(bytes, out),
        DType::Q4_1 => decode_blocks::<BlockQ4_1>(bytes, out),
        DType::Q5_0 => decode_blocks::<BlockQ5_0>(bytes, out),
        DType::Q5_1 => decode_blocks::<BlockQ5_1>(bytes, out),
        DType::Q8_0 => decode_blocks::<BlockQ8_0>(bytes, out),
        DType::Q8_1 => decode_blocks::<BlockQ8_1>(bytes, out),
        DType::Q2_K => decode_blocks::<BlockQ2_K>(bytes, out),
        DType::Q3_K => decode_blocks::<BlockQ3_K>(bytes, out),
        DType::Q4_K => decode_blocks::<BlockQ4_K>(bytes, out),
        DType::Q5_K => decode_blocks::<BlockQ5_K>(bytes, out),
        DType::Q6_K => decode_blocks::<BlockQ6_K>(bytes, out),
        DType::Iq1S => decode_blocks::<BlockIq1S>(bytes, out),
        DType::Iq1M => decode_blocks::<BlockIq1M>(bytes, out),
        DType::Iq2Xxs => decode_blocks::<BlockIq2Xxs>(bytes, out),
        DType::Iq2Xs => decode_blocks::<BlockIq2Xs>(bytes, out),
        DType::Iq2S => decode_blocks::<BlockIq2S>(bytes, out),
        DType::Iq3Xxs => decode_blocks::<BlockIq3Xxs>(bytes, out),
        DType::Iq3S => decode_blocks::<BlockIq3S>(bytes, out),
        DType::Iq4Nl => decode_blocks::<BlockIq4Nl>(bytes, out),
        DType::Iq4Xs => decode_blocks::<BlockIq4Xs>(bytes, out),
        DType::Mxfp4 => decode_blocks::<BlockMxfp4>(bytes, out),
        DType::Nvfp4 => decode_blocks::<BlockNvfp4>(bytes, out),
        DType::Q1_0 => decode_blocks::<BlockQ1_0>(bytes, out),
        DType::Q2_0 => decode_blocks::<BlockQ2_0>(bytes, out),
        DType::Tq1_0 => decode_blocks::<BlockTq1_0>(bytes, out),
        DType::Tq2_0 => decode_blocks::<BlockTq2_0>(bytes, out),
    }
    Ok(())
}

/// Per element, the magnitudes an error bound scales with ([`Block::magnitude`]): |x| for
/// scalar and scaled formats, |d·q| + |m| for q4_1 and q5_1, |d·sc·q| + |dmin·m| for q2_K,
/// q4_K and q5_K, |d·q| + |d| for tq2_0 (its stored code q, [`BlockTq2_0`]).
pub fn magnitude_into(dtype: DType, bytes: &[u8], out: &mut [f64]) -> Result<()> {
    fn blocks<B: Block>(bytes: &[u8], out: &mut [f64]) {
        for (b, o) in bytes
            .chunks_exact(B::BYTES)
            .zip(out.chunks_exact_mut(B::LEN))
        {
            B::from_bytes(b).magnitude(o);
        }
    }
    match dtype {
        DType::Q4_1 => {
            check_bytes(dtype, bytes.len(), out.len())?;
            blocks::<BlockQ4_1>(bytes, out)
        }
        DType::Q5_1 => {
            check_bytes(dtype, bytes.len(), out.len())?;
            blocks::<BlockQ5_1>(bytes, out)
        }
        DType::Q2_K => {
            check_bytes(dtype, bytes.len(), out.len())?;
            blocks::<BlockQ2_K>(bytes, out)
        }
        DType::Q4_K => {
            check_bytes(dtype, bytes.len(), out.len())?;
            blocks::<BlockQ4_K>(bytes, out)
        }
        DType::Q5_K => {
            check_bytes(dtype, bytes.len(), out.len())?;
            blocks::<BlockQ5_K>(bytes, out)
        }
        DType::Tq2_0 => {
            check_bytes(dtype, bytes.len(), out.len())?;
            blocks::<BlockTq2_0>(bytes, out)
        }
        _ => {
            dequantize_into(dtype, bytes, out)?;
            out.iter_mut().for_each(|x| *x = x.abs());
        }
    }
    Ok(())
}

/// ggml's own f32 dequantization (`dequantize_row_<t>`): products and sums rounded to f32 in
/// ggml's operation order (q4_1/q5_1 are `(f32)(q·d) + m`, rounded), for callers who want
/// ggml's CPU numbers bit for bit.
///
/// f32/f16/bf16 decode exactly; i32 is converted with `as f32` (round to nearest); q8_1, which
/// ggml does not dequantize, gives `q·d` (exact).
pub fn dequantize_f32(dtype: DType, bytes: &[u8], n: usize) -> Result<Vec<f32>> {
    check_bytes(dtype, bytes.len(), n)?;
    let mut out = vec![0.0; n];
    dequantize_f32_into(dtype, bytes, &mut out)?;
    Ok(out)
}

/// [`dequantize_f32`] into `out` (its length is the element count), without allocating.
pub fn dequantize_f32_into(dtype: DType, bytes: &[u8], out: &mut [f32]) -> Result<()> {
    check_bytes(dtype, bytes.len(), out.len())?;
    match dtype {
        DType::F32 => scalars(bytes, out, f32::from_le_bytes),
        DType::F16 => scalars(bytes, out, |b| float::f16_to_f32(u16::from_le_bytes(b))),
        DType::Bf16 => scalars(bytes, out, |b| float::bf16_to_f32(u16::from_le_bytes(b))),
        DType::I32 => scalars(bytes, out, |b| i32::from_le_bytes(b) as f32),
        DType::Q4_0 => decode_blocks_f32::<BlockQ4_0>(bytes, out),
        DType::Q4_1 => decode_blocks_f32::<BlockQ4_1>(bytes, out),
        DType::Q5_0 => decode_blocks_f32::<BlockQ5_0>(bytes, out),
        DType::Q5_1 => decode_blocks_f32::<BlockQ5_1>(bytes, out),
        DType::Q8_0 => decode_blocks_f32::<BlockQ8_0>(bytes, out),
        DType::Q8_1 => decode_blocks_f32::<BlockQ8_1>(bytes, out),
        DType::Q2_K => decode_blocks_f32::<BlockQ2_K>(bytes, out),
        DType::Q3_K => decode_blocks_f32::<BlockQ3_K>(bytes, out),
        DType::Q4_K => decode_blocks_f32::<BlockQ4_K>(bytes, out),
        DType::Q5_K => decode_blocks_f32::<BlockQ5_K>(bytes, out),
        DType::Q6_K => decode_blocks_f32::<BlockQ6_K>(bytes, out),
        DType::Iq1S => decode_blocks_f32::<BlockIq1S>(bytes, out),
        DType::Iq1M => decode_blocks_f32::<BlockIq1M>(bytes, out),
        DType::Iq2Xxs => decode_blocks_f32::<BlockIq2Xxs>(bytes, out),
        DType::Iq2Xs => decode_blocks_f32::<BlockIq2Xs>(bytes, out),
        DType::Iq2S => decode_blocks_f32::<BlockIq2S>(bytes, out),
        DType::Iq3Xxs => decode_blocks_f32::<BlockIq3Xxs>(bytes, out),
        DType::Iq3S => decode_blocks_f32::<BlockIq3S>(bytes, out),
        DType::Iq4Nl => decode_blocks_f32::<BlockIq4Nl>(bytes, out),
        DType::Iq4Xs => decode_blocks_f32::<BlockIq4Xs>(bytes, out),
        DType::Mxfp4 => decode_blocks_f32::<BlockMxfp4>(bytes, out),
        DType::Nvfp4 => decode_blocks_f32::<BlockNvfp4>(bytes, out),
        DType::Q1_0 => decode_blocks_f32::<BlockQ1_0>(bytes, out),
        DType::Q2_0 => decode_blocks_f32::<BlockQ2_0>(bytes, out),
        DType::Tq1_0 => decode_blocks_f32::<BlockTq1_0>(bytes, out),
        DType::Tq2_0 => decode_blocks_f32::<BlockTq2_0>(bytes, out),
    }
    Ok(())
}

/// ggml's reference quantizers, bit-exact: `quantize_row_<t>_ref` for the block formats
/// (their rounding formulas, `(int8_t)` truncations, `1/d = 0` when d = 0, q8_1's s = d·Σq),
/// `ggml_fp32_to_fp16` (round to nearest even) for f16, `ggml_compute_fp32_to_bf16` for bf16,
/// f32 as is and `v as i32` (truncating, saturating, NaN → 0) for i32.
///
/// Non-finite inputs to the block quantizers are undefined behaviour in C; they are handled as
/// ggml's x86-64 builds do. [`Error::RaggedRow`] when `src.len()` is not a whole number of
/// blocks; [`Error::NoQuantizer`] for the formats without a specified reference quantizer
/// ([`DType::has_quantizer`]).
pub fn quantize(dtype: DType, src: &[f32]) -> Result<Vec<u8>> {
    let mut out = vec![0; dtype.row_bytes(src.len())?];
    quantize_into(dtype, src, &mut out)?;
    Ok(out)
}

/// [`quantize`] into `out`, which must be exactly `dtype.row_bytes(src.len())` long.
pub fn quantize_into(dtype: DType, src: &[f32], out: &mut [u8]) -> Result<()> {
    if !dtype.has_quantizer() {
        return Err(Error::NoQuantizer { dtype });
    }
    check_bytes(dtype, out.len(), src.len())?;
    match dtype {
        DType::F32 => encode_scalars(src, out, f32::to_le_bytes),
        DType::F16 => encode_scalars(src, out, |v| float::f32_to_f16(v).to_le_bytes()),
        DType::Bf16 => encode_scalars(src, out, |v| float::f32_to_bf16(v).to_le_bytes()),
        DType::I32 => encode_scalars(src, out, |v| (v as i32).to_le_bytes()),
        DType::Q4_0 => encode_blocks::<BlockQ4_0>(src, out),
        DType::Q4_1 => encode_blocks::<BlockQ4_1>(src, out),
        DType::Q5_0 => encode_blocks::<BlockQ5_0>(src, out),
        DType::Q5_1 => encode_blocks::<BlockQ5_1>(src, out),
        DType::Q8_0 => encode_blocks::<BlockQ8_0>(src, out),
        DType::Q8_1 => encode_blocks::<BlockQ8_1>(src, out),
        DType::Q2_K
        | DType::Q3_K
        | DType::Q4_K
        | DType::Q5_K
        | DType::Q6_K
        | DType::Iq1S
        | DType::Iq1M
        | DType::Iq2Xxs
        | DType::Iq2Xs
        | DType::Iq2S
        | DType::Iq3Xxs
        | DType::Iq3S
        | DType::Iq4Nl
        | DType::Iq4Xs
        | DType::Mxfp4
        | DType::Nvfp4
        | DType::Q1_0
        | DType::Q2_0
        | DType::Tq1_0
        | DType::Tq2_0 => unreachable!("has_quantizer is false"),
    }
    Ok(())
}
