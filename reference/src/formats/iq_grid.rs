//! The lattice i-quants (256-element super-blocks, section 2.5 of the interface spec): iq2_xxs,
//! iq2_xs, iq2_s and iq3_xxs, iq3_s (grid rows of 8 or 4 magnitudes with sign bits) and iq1_s,
//! iq1_m (rows of {−1, 0, +1} shifted by ±1/8). The tables come from [`iq_grids`].
//!
//! Every element is x = d · a · b · q with d the f16 super-block scale, a the sub-block factor
//! ((0.5 + s) for iq2/iq3_xxs, 1 + 2s for iq3_s and the iq1s), b a power of two (1/4 for
//! iq2, 1/2 for iq3_xxs, 1 otherwise) and q the signed grid value (iq1: grid + δ). ggml's f32
//! dequantization forms ((d·a)·b)·q in that order ([`Parts::ggml_f32`]).
//!
//! Exactness: d has at most 11 significant bits, a at most 5 (2s + 1 ≤ 31), q at most 6 (iq2
//! magnitudes 8, 25, 43; iq3_xxs ≤ 62; iq3_s ≤ 15; iq1: 8·(grid + δ) ∈ {±1, ±7, ±9}), and the
//! powers of two keep the exponent far inside f32's normal range even for a subnormal d
//! (≥ 2⁻²⁴·2⁻³), so every product is exact in f32: ggml's f32 values equal the exact values.
//!
//! Element e: sub-block ib = e / 32, group l = (e % 32) / 8 of 8 elements, j = e % 8.
//!
//! No reference quantizer ([`DType::has_quantizer`] is false): ggml's i-quant quantizers search
//! over the grids (some need an importance matrix); test data are raw blocks.

use half::f16;

use super::iq_tables::iq_grids;
use super::legacy::Block;
use super::DType;

/// Elements per super-block (ggml's QK_K).
const QK_K: usize = 256;

/// The factors of one element: x = d·a·b·q.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Parts {
    /// The super-block scale.
    pub d: f16,
    /// The sub-block factor: 0.5 + s or 1 + 2s.
    pub a: f32,
    /// A power of two: 0.25 (iq2), 0.5 (iq3_xxs) or 1.
    pub b: f32,
    /// The signed grid value (iq1: grid + δ, a multiple of 1/8).
    pub q: f32,
}

impl Parts {
    /// The exact value (every product is exact in f64).
    pub fn exact(&self) -> f64 {
        self.d.to_f64() * f64::from(self.a) * f64::from(self.b) * f64::from(self.q)
    }

    /// ggml's f32 value, ((d·a)·b)·q rounded at each step (exact for finite d, see the module
    /// notes).
    pub fn ggml_f32(&self) -> f32 {
        self.d.to_f32() * self.a * self.b * self.q
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// Byte `j` of a grid row.
fn grid_byte(row: u64, j: usize) -> u8 {
    (row >> (8 * j)) as u8
}

/// ±1 by bit `j` of a sign byte (set: −1).
fn sign(bits: u8, j: usize) -> f32 {
    if (bits >> j) & 1 == 1 {
        -1.0
    } else {
        1.0
    }
}

/// The f16 scale of an iq1_m block, assembled from the top nibbles of its four scale words.
pub fn iq1_m_scale(block: &[u8]) -> f16 {
    let sc = |i: usize| u16_at(block, 48 + 2 * i);
    f16::from_bits(
        (sc(0) >> 12) | ((sc(1) >> 8) & 0x00F0) | ((sc(2) >> 4) & 0x0F00) | (sc(3) & 0xF000),
    )
}

/// Writes `d` into the top nibbles of an iq1_m block's scale words (the inverse of
/// [`iq1_m_scale`]); the other bits are kept.
pub fn set_iq1_m_scale(block: &mut [u8], d: f16) {
    let bits = d.to_bits();
    for i in 0..4 {
        let at = 48 + 2 * i;
        let w = (u16_at(block, at) & 0x0FFF) | (((bits >> (4 * i)) & 0xF) << 12);
        block[at..at + 2].copy_from_slice(&w.to_le_bytes());
    }
}

/// The factors of one group of 8 elements (a grid row's worth): d, a and b are shared, q is per
/// element. Decoding by group reads the indices, signs and scale once for 8 elements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Group {
    /// The super-block scale.
    pub d: f16,
    /// The sub-block factor.
    pub a: f32,
    /// The power of two.
    pub b: f32,
    /// The signed grid values of elements j = 0..8.
    pub q: [f32; 8],
}

impl Group {
    /// Element `j`'s factors.
    pub fn parts(&self, j: usize) -> Parts {
        Parts {
            d: self.d,
            a: self.a,
            b: self.b,
            q: self.q[j],
        }
    }
}

/// The factors of element `e` of one block of `dtype` (a lattice i-quant).
///
/// # Panics
/// If `dtype` is not one of the seven lattice i-quants or the block has the wrong length.
pub fn parts(dtype: DType, b: &[u8], e: usize) -> Parts {
    group(dtype, b, e / 32, (e % 32) / 8).parts(e % 8)
}

/// The factors of group `l` (elements 32 ib + 8 l ..+ 8) of sub-block `ib` of one block of
/// `dtype` (a lattice i-quant).
///
/// # Panics
/// If `dtype` is not one of the seven lattice i-quants or the block has the wrong length.
pub fn group(dtype: DType, b: &[u8], ib: usize, l: usize) -> Group {
    assert_eq!(b.len(), dtype.block_bytes(), "{dtype} block");
    let g = iq_grids();
    let d = || f16::from_le_bytes([b[0], b[1]]);
    let half_plus = |s: u32| 0.5 + s as f32;
    let odd = |s: u32| (2 * s + 1) as f32;
    let eight = |q: &dyn Fn(usize) -> f32| std::array::from_fn(q);
    match dtype {
        DType::Iq2Xxs => {
            // qs @2: per ib, 4 grid indices then a u32 of 4 × 7 sign-index bits + 4-bit scale.
            let w = u32_at(b, 2 + 8 * ib + 4);
            let signs = g.ksigns_iq2xs[((w >> (7 * l)) & 127) as usize];
            let row = g.iq2xxs[usize::from(b[2 + 8 * ib + l])];
            Group {
                d: d(),
                a: half_plus(w >> 28),
                b: 0.25,
                q: eight(&|j| f32::from(grid_byte(row, j)) * sign(signs, j)),
            }
        }
        DType::Iq2Xs => {
            // qs @2: u16 per 8 elements (9-bit index, 7-bit sign index); scales @66.
            let u = u16_at(b, 2 + 2 * (4 * ib + l));
            let signs = g.ksigns_iq2xs[usize::from(u >> 9)];
            let row = g.iq2xs[usize::from(u & 511)];
            let s = (b[66 + ib] >> (4 * (l / 2))) & 0xF;
            Group {
                d: d(),
                a: half_plus(s.into()),
                b: 0.25,
                q: eight(&|j| f32::from(grid_byte(row, j)) * sign(signs, j)),
            }
        }
        DType::Iq2S => {
            // qs @2 (32 index bytes, then 32 sign bytes), qh @66, scales @74.
            let idx =
                usize::from(b[2 + 4 * ib + l]) | ((usize::from(b[66 + ib]) << (8 - 2 * l)) & 0x300);
            let signs = b[2 + 32 + 4 * ib + l];
            let s = (b[74 + ib] >> (4 * (l / 2))) & 0xF;
            let row = g.iq2s[idx];
            Group {
                d: d(),
                a: half_plus(s.into()),
                b: 0.25,
                q: eight(&|j| f32::from(grid_byte(row, j)) * sign(signs, j)),
            }
        }
        DType::Iq3Xxs => {
            // qs @2: 64 index bytes (one per 4 elements), then 8 u32 of signs + scale.
            let w = u32_at(b, 2 + 64 + 4 * ib);
            let signs = g.ksigns_iq2xs[((w >> (7 * l)) & 127) as usize];
            let rows = [0, 1].map(|h| g.iq3xxs[usize::from(b[2 + 8 * ib + 2 * l + h])]);
            Group {
                d: d(),
                a: half_plus(w >> 28),
                b: 0.5,
                q: eight(&|j| f32::from(grid_byte(rows[j / 4].into(), j % 4)) * sign(signs, j)),
            }
        }
        DType::Iq3S => {
            // qs @2 (64), qh @66 (8), signs @74 (32), scales @106 (4 bytes, 2 nibbles each).
            let rows = [0, 1].map(|h| {
                let k = 2 * l + h;
                let idx =
                    usize::from(b[2 + 8 * ib + k]) | (((usize::from(b[66 + ib]) >> k) & 1) << 8);
                g.iq3s[idx]
            });
            let signs = b[74 + 4 * ib + l];
            let s = (b[106 + ib / 2] >> (4 * (ib % 2))) & 0xF;
            Group {
                d: d(),
                a: odd(s.into()),
                b: 1.0,
                q: eight(&|j| f32::from(grid_byte(rows[j / 4].into(), j % 4)) * sign(signs, j)),
            }
        }
        DType::Iq1S => {
            // qs @2 (32), qh @34: u16 per ib (3 index bits per group, 3-bit scale, δ sign).
            let h = u16_at(b, 34 + 2 * ib);
            let idx = usize::from(b[2 + 4 * ib + l]) | (usize::from((h >> (3 * l)) & 7) << 8);
            let delta = if h & 0x8000 != 0 {
                -g.iq1_delta
            } else {
                g.iq1_delta
            };
            let row = g.iq1s[idx];
            Group {
                d: d(),
                a: odd(((h >> 12) & 7).into()),
                b: 1.0,
                q: eight(&|j| f32::from(grid_byte(row, j) as i8) + delta),
            }
        }
        DType::Iq1M => {
            // qs @0 (32), qh @32 (16: one byte per pair of groups), scales @48 (4 u16 words:
            // 3-bit sub-scales, the f16 d in the top nibbles).
            let w = u16_at(b, 48 + 2 * (ib / 2));
            let s = (w >> (6 * (ib % 2) + 3 * (l / 2))) & 7;
            let h = usize::from(b[32 + 2 * ib + l / 2]);
            let idx = usize::from(b[4 * ib + l]) | ((h << (8 - 4 * (l % 2))) & 0x700);
            let delta = if h & (0x08 << (4 * (l % 2))) != 0 {
                -g.iq1_delta
            } else {
                g.iq1_delta
            };
            let row = g.iq1s[idx];
            Group {
                d: iq1_m_scale(b),
                a: odd(s.into()),
                b: 1.0,
                q: eight(&|j| f32::from(grid_byte(row, j) as i8) + delta),
            }
        }
        _ => panic!("{dtype} is not a lattice i-quant"),
    }
}

macro_rules! lattice_block {
    ($name:ident, $dtype:expr, $bytes:expr, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name {
            /// The block's bytes (layout: [`parts`]).
            pub bytes: [u8; $bytes],
        }

        impl Block for $name {
            const DTYPE: DType = $dtype;
            const LEN: usize = QK_K;
            const BYTES: usize = $bytes;

            fn from_bytes(bytes: &[u8]) -> Self {
                assert_eq!(bytes.len(), $bytes, "{} block", $dtype);
                Self {
                    bytes: bytes.try_into().expect("length checked"),
                }
            }

            fn to_bytes(&self, out: &mut [u8]) {
                assert_eq!(out.len(), $bytes, "{} block", $dtype);
                out.copy_from_slice(&self.bytes);
            }

            fn decode(&self, out: &mut [f64]) {
                assert_eq!(out.len(), QK_K, "decoded block");
                // By group: d·a·b once, then one exact product a element (the same value as
                // Parts::exact, whose products are all exact).
                for (n, o) in out.chunks_exact_mut(8).enumerate() {
                    let g = group($dtype, &self.bytes, n / 4, n % 4);
                    let dab = g.d.to_f64() * f64::from(g.a) * f64::from(g.b);
                    for (o, q) in o.iter_mut().zip(g.q) {
                        *o = dab * f64::from(q);
                    }
                }
            }

            fn decode_f32(&self, out: &mut [f32]) {
                assert_eq!(out.len(), QK_K, "decoded block");
                // ((d·a)·b)·q as Parts::ggml_f32, with (d·a)·b formed once a group.
                for (n, o) in out.chunks_exact_mut(8).enumerate() {
                    let g = group($dtype, &self.bytes, n / 4, n % 4);
                    let dab = g.d.to_f32() * g.a * g.b;
                    for (o, q) in o.iter_mut().zip(g.q) {
                        *o = dab * q;
                    }
                }
            }
        }
    };
}

lattice_block!(
    BlockIq2Xxs,
    DType::Iq2Xxs,
    66,
    "An iq2_xxs block (66 bytes): 2.06 bits per element."
);
lattice_block!(BlockIq2Xs, DType::Iq2Xs, 74, "An iq2_xs block (74 bytes).");
lattice_block!(BlockIq2S, DType::Iq2S, 82, "An iq2_s block (82 bytes).");
lattice_block!(
    BlockIq3Xxs,
    DType::Iq3Xxs,
    98,
    "An iq3_xxs block (98 bytes)."
);
lattice_block!(BlockIq3S, DType::Iq3S, 110, "An iq3_s block (110 bytes).");
lattice_block!(BlockIq1S, DType::Iq1S, 50, "An iq1_s block (50 bytes).");
lattice_block!(
    BlockIq1M,
    DType::Iq1M,
    56,
    "An iq1_m block (56 bytes, its f16 scale spread over the top nibbles of the scale words)."
);
