//! The non-linear 4-bit formats iq4_nl (32-element blocks, section 2.3 of the interface spec)
//! and iq4_xs (256-element super-blocks, section 2.5): 4-bit indices into the 16-entry table
//! [`KVALUES_IQ4NL`].
//!
//! ggml's reference quantizers for both (`quantize_row_iq4_nl_ref`, `quantize_row_iq4_xs_ref`:
//! weighted searches over candidate scales) are not reproduced here (docs/interface.md §2.7), so
//! none is implemented ([`DType::has_quantizer`] is false); test data are raw blocks.
//!
//! Exactness: d (≤ 11 significant bits) × (ls − 32) (≤ 5) × table value (≤ 7) has at most 23
//! significant bits, so every element is exact in f32 as well as f64, and ggml's f32
//! dequantization returns the exact values.

use half::f16;

use super::legacy::Block;
use super::DType;

/// ggml's `kvalues_iq4nl`: the value of each 4-bit index.
pub const KVALUES_IQ4NL: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

/// Elements per iq4_nl block (ggml's QK4_NL).
pub const QK4_NL: usize = 32;

/// Elements per iq4_xs super-block (ggml's QK_K).
const QK_K: usize = 256;

/// An iq4_nl block (18 bytes): `d` at 0, `qs` at 2; `x[j] = d·K[qs[j] & 0xF]`,
/// `x[j + 16] = d·K[qs[j] >> 4]` (K = [`KVALUES_IQ4NL`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockIq4Nl {
    /// Scale.
    pub d: f16,
    /// Indices: element j low nibble, element j + 16 high nibble.
    pub qs: [u8; QK4_NL / 2],
}

/// An iq4_xs block (136 bytes): `d` at 0, `scales_h` at 2, `scales_l` at 4, `qs` at 8.
/// Sub-block ib (32 elements) has the 6-bit scale ls_ib (low 4 bits: nibble ib mod 2 of
/// scales_l[ib/2]; high 2 bits: bits 2ib.. of scales_h); x[32ib + j] = d·(ls − 32)·K[qs[16ib + j]
/// & 0xF], x[32ib + 16 + j] = d·(ls − 32)·K[qs[16ib + j] >> 4].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockIq4Xs {
    /// Super-block scale.
    pub d: f16,
    /// High 2 bits of the eight sub-block scales (little-endian u16).
    pub scales_h: u16,
    /// Low 4 bits of the sub-block scales, two per byte (even sub-block in the low nibble).
    pub scales_l: [u8; 4],
    /// Indices, 16 bytes per sub-block.
    pub qs: [u8; QK_K / 2],
}

const _: () = assert!(std::mem::size_of::<BlockIq4Nl>() == 18);
const _: () = assert!(std::mem::size_of::<BlockIq4Xs>() == 136);

#[track_caller]
fn check_len(what: &str, got: usize, want: usize) {
    assert_eq!(got, want, "{what}: expected {want}, got {got}");
}

fn f16_at(bytes: &[u8], at: usize) -> f16 {
    f16::from_le_bytes([bytes[at], bytes[at + 1]])
}

/// The table value of the index in the low (`high` false) or high nibble of `byte`.
fn kvalue(byte: u8, high: bool) -> i32 {
    let idx = if high { byte >> 4 } else { byte & 0xF };
    i32::from(KVALUES_IQ4NL[usize::from(idx)])
}

impl BlockIq4Nl {
    fn index_value(&self, i: usize) -> i32 {
        kvalue(self.qs[i % 16], i >= 16)
    }
}

impl Block for BlockIq4Nl {
    const DTYPE: DType = DType::Iq4Nl;
    const LEN: usize = QK4_NL;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        check_len("iq4_nl block", bytes.len(), Self::BYTES);
        Self {
            d: f16_at(bytes, 0),
            qs: bytes[2..].try_into().expect("16 bytes"),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        check_len("iq4_nl block", out.len(), Self::BYTES);
        out[..2].copy_from_slice(&self.d.to_le_bytes());
        out[2..].copy_from_slice(&self.qs);
    }

    fn decode(&self, out: &mut [f64]) {
        check_len("decoded block", out.len(), QK4_NL);
        let d = self.d.to_f64();
        for (i, o) in out.iter_mut().enumerate() {
            *o = d * f64::from(self.index_value(i));
        }
    }

    /// ggml: `d * kvalues_iq4nl[q]` in f32 (exact).
    fn decode_f32(&self, out: &mut [f32]) {
        check_len("decoded block", out.len(), QK4_NL);
        let d = self.d.to_f32();
        for (i, o) in out.iter_mut().enumerate() {
            *o = d * self.index_value(i) as f32;
        }
    }
}

impl BlockIq4Xs {
    /// The 6-bit scale ls of sub-block `ib` (0..8), before subtracting 32.
    pub fn scale(&self, ib: usize) -> u8 {
        assert!(ib < 8, "sub-block {ib} of an iq4_xs block");
        let low = (self.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF;
        let high = ((self.scales_h >> (2 * ib)) & 3) as u8;
        low | (high << 4)
    }

    /// (ls − 32, table value) of element e.
    fn scale_value(&self, e: usize) -> (i32, i32) {
        let (ib, j) = (e / 32, e % 32);
        let byte = self.qs[16 * ib + j % 16];
        (i32::from(self.scale(ib)) - 32, kvalue(byte, j >= 16))
    }
}

impl Block for BlockIq4Xs {
    const DTYPE: DType = DType::Iq4Xs;
    const LEN: usize = QK_K;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        check_len("iq4_xs block", bytes.len(), Self::BYTES);
        Self {
            d: f16_at(bytes, 0),
            scales_h: u16::from_le_bytes([bytes[2], bytes[3]]),
            scales_l: bytes[4..8].try_into().expect("4 bytes"),
            qs: bytes[8..].try_into().expect("128 bytes"),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        check_len("iq4_xs block", out.len(), Self::BYTES);
        out[..2].copy_from_slice(&self.d.to_le_bytes());
        out[2..4].copy_from_slice(&self.scales_h.to_le_bytes());
        out[4..8].copy_from_slice(&self.scales_l);
        out[8..].copy_from_slice(&self.qs);
    }

    fn decode(&self, out: &mut [f64]) {
        check_len("decoded block", out.len(), QK_K);
        let d = self.d.to_f64();
        for (e, o) in out.iter_mut().enumerate() {
            let (ls, k) = self.scale_value(e);
            *o = d * f64::from(ls) * f64::from(k);
        }
    }

    /// ggml: `dl = d * (ls - 32)`, then `dl * kvalues_iq4nl[q]` in f32 (both exact).
    fn decode_f32(&self, out: &mut [f32]) {
        check_len("decoded block", out.len(), QK_K);
        let d = self.d.to_f32();
        for (e, o) in out.iter_mut().enumerate() {
            let (ls, k) = self.scale_value(e);
            let dl = d * ls as f32;
            *o = dl * k as f32;
        }
    }
}
