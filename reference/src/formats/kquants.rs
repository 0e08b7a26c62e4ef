//! The K-quant 256-element super-block formats q2_K … q6_K (section 2.4 of the interface spec).
//!
//! Each format has one `#[repr(C)]` struct whose size equals the on-device block size and one
//! [`Block`] implementation holding its layout and decoders. ggml's reference quantizers for
//! these formats (`quantize_row_q2_K_ref` …: iterative scale searches) are not reproduced
//! here (docs/interface.md §2.7), so none is implemented: [`DType::has_quantizer`] is false and
//! [`quantize`](super::quantize) returns [`Error::NoQuantizer`](crate::Error::NoQuantizer).
//! Test data for them are raw blocks (every bit pattern with finite f16 fields is valid).
//!
//! Index names used throughout, for an element e (0 ≤ e < 256) of a super-block: n = ⌊e/128⌋
//! (half), g = ⌊(e mod 128)/32⌋ (quarter of the half), l = e mod 32, sb = ⌊e/32⌋ (32-element
//! sub-block), p = ⌊e/64⌋, and grp = ⌊e/16⌋ (16-element group; q2_K, q3_K and q6_K have one scale
//! per group, and grp = 8n + 2g + ⌊l/16⌋).
//!
//! Exactness: every element is exact in f64, and every product d·sc·q and dmin·m is exact even
//! in f32 (d has at most 11 significant bits, a scale at most 7, a quant at most 5: ≤ 23 bits).
//! With a min, d·sc·q − dmin·m (both multiples of 2⁻²⁴ below 2²⁸) is exact in f64 and rounds
//! once in f32; without one, ggml's f32 values are exact.

use half::f16;

use super::legacy::Block;
use super::DType;

/// Elements per super-block (ggml's QK_K).
pub const QK_K: usize = 256;

/// A q2_K block (84 bytes): `scales` at 0, `qs` at 16, `d` at 80, `dmin` at 82;
/// `x = d·(scales[grp] & 0xF)·q − dmin·(scales[grp] >> 4)` with 2-bit q.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ2_K {
    /// Per 16-element group: scale in the low nibble, min in the high nibble.
    pub scales: [u8; 16],
    /// 2-bit quants: element e in bits 2g..2g+1 of byte 32n + l.
    pub qs: [u8; 64],
    /// Super-block scale of the scales.
    pub d: f16,
    /// Super-block scale of the mins.
    pub dmin: f16,
}

/// A q3_K block (110 bytes): `hmask` at 0, `qs` at 32, `scales` at 96, `d` at 108;
/// x = d·(s_grp − 32)·(q − (h ? 0 : 4)) with 2-bit q, high bit h and 6-bit s.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ3_K {
    /// High bits: element e's is bit 4n + g of byte l.
    pub hmask: [u8; 32],
    /// Low 2 bits: element e's are bits 2g..2g+1 of byte 32n + l.
    pub qs: [u8; 64],
    /// Sixteen 6-bit scales (see [`BlockQ3_K::scale`]).
    pub scales: [u8; 12],
    /// Super-block scale.
    pub d: f16,
}

/// A q4_K block (144 bytes): `d` at 0, `dmin` at 2, `scales` at 4, `qs` at 16;
/// x = d·sc_sb·q − dmin·m_sb with 4-bit q and 6-bit sc, m.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ4_K {
    /// Super-block scale of the scales.
    pub d: f16,
    /// Super-block scale of the mins.
    pub dmin: f16,
    /// Eight 6-bit scales and eight 6-bit mins (see [`scale_min_k4`]).
    pub scales: [u8; 12],
    /// Nibbles: element e is the low (sb even) or high (sb odd) nibble of byte 32p + l.
    pub qs: [u8; 128],
}

/// A q5_K block (176 bytes): `d` at 0, `dmin` at 2, `scales` at 4, `qh` at 16, `qs` at 48;
/// x = d·sc_sb·q − dmin·m_sb with 5-bit q.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ5_K {
    /// Super-block scale of the scales.
    pub d: f16,
    /// Super-block scale of the mins.
    pub dmin: f16,
    /// As q4_K's.
    pub scales: [u8; 12],
    /// Fifth bits: element e's is bit sb of byte l.
    pub qh: [u8; 32],
    /// Low 4 bits, as q4_K's `qs`.
    pub qs: [u8; 128],
}

/// A q6_K block (210 bytes): `ql` at 0, `qh` at 128, `scales` at 192, `d` at 208;
/// `x = d·scales[grp]·(q − 32)` with 6-bit q and signed 8-bit scales.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ6_K {
    /// Low 4 bits: element e's are bits 4⌊g/2⌋.. of byte 64n + 32·(g mod 2) + l.
    pub ql: [u8; 128],
    /// High 2 bits: element e's are bits 2g..2g+1 of byte 32n + l.
    pub qh: [u8; 64],
    /// One signed scale per 16-element group.
    pub scales: [i8; 16],
    /// Super-block scale.
    pub d: f16,
}

const _: () = assert!(std::mem::size_of::<BlockQ2_K>() == 84);
const _: () = assert!(std::mem::size_of::<BlockQ3_K>() == 110);
const _: () = assert!(std::mem::size_of::<BlockQ4_K>() == 144);
const _: () = assert!(std::mem::size_of::<BlockQ5_K>() == 176);
const _: () = assert!(std::mem::size_of::<BlockQ6_K>() == 210);

// ---------------------------------------------------------------------------------------------
// Byte access.

fn f16_at(bytes: &[u8], at: usize) -> f16 {
    f16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn put_f16(out: &mut [u8], at: usize, v: f16) {
    out[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

fn array_at<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    bytes[at..at + N].try_into().expect("slice of length N")
}

#[track_caller]
fn check_len(what: &str, got: usize, want: usize) {
    assert_eq!(got, want, "{what}: expected {want}, got {got}");
}

/// The (half, quarter, l) coordinates (n, g, l) of element e.
fn coords(e: usize) -> (usize, usize, usize) {
    (e / 128, (e % 128) / 32, e % 32)
}

/// q4_K/q5_K's `get_scale_min_k4`: the 6-bit (scale, min) of 32-element sub-block `sb` (0..8).
/// Sub-blocks 0..3 keep theirs in the low 6 bits of bytes sb and sb + 4; sub-blocks 4..7 keep
/// the low 4 bits in the nibbles of byte sb + 4 and the high 2 bits in the top 2 bits of bytes
/// sb − 4 (scale) and sb (min).
pub fn scale_min_k4(scales: &[u8; 12], sb: usize) -> (u8, u8) {
    assert!(sb < 8, "sub-block {sb} of a q4_K/q5_K block");
    if sb < 4 {
        (scales[sb] & 63, scales[sb + 4] & 63)
    } else {
        (
            (scales[sb + 4] & 0xF) | ((scales[sb - 4] >> 6) << 4),
            (scales[sb + 4] >> 4) | ((scales[sb] >> 6) << 4),
        )
    }
}

/// Decodes an affine super-block x_e = d·sc(e)·q(e) − dmin·m(e) (exact in f64).
fn decode_affine(d: f16, dmin: f16, out: &mut [f64], sc_m_q: impl Fn(usize) -> (u8, u8, u8)) {
    check_len("decoded block", out.len(), QK_K);
    let (d, dmin) = (d.to_f64(), dmin.to_f64());
    for (e, o) in out.iter_mut().enumerate() {
        let (sc, m, q) = sc_m_q(e);
        *o = d * f64::from(sc) * f64::from(q) - dmin * f64::from(m);
    }
}

/// ggml's f32 order for the affine K-quants: `dl = d*sc`, `ml = dmin*m` (both exact), then
/// `dl*q - ml` (the product is exact; the difference rounds once).
fn decode_affine_f32(d: f16, dmin: f16, out: &mut [f32], sc_m_q: impl Fn(usize) -> (u8, u8, u8)) {
    check_len("decoded block", out.len(), QK_K);
    let (d, dmin) = (d.to_f32(), dmin.to_f32());
    for (e, o) in out.iter_mut().enumerate() {
        let (sc, m, q) = sc_m_q(e);
        let (dl, ml) = (d * f32::from(sc), dmin * f32::from(m));
        *o = dl * f32::from(q) - ml;
    }
}

/// [`Block::magnitude`] of an affine super-block: |d·sc·q| + |dmin·m| per element.
fn magnitude_affine(d: f16, dmin: f16, out: &mut [f64], sc_m_q: impl Fn(usize) -> (u8, u8, u8)) {
    check_len("magnitudes", out.len(), QK_K);
    let (d, dmin) = (d.to_f64(), dmin.to_f64());
    for (e, o) in out.iter_mut().enumerate() {
        let (sc, m, q) = sc_m_q(e);
        *o = (d * f64::from(sc) * f64::from(q)).abs() + (dmin * f64::from(m)).abs();
    }
}

// ---------------------------------------------------------------------------------------------
// q2_K.

impl BlockQ2_K {
    /// (scale, min, q) of element e.
    fn sc_m_q(&self, e: usize) -> (u8, u8, u8) {
        let (n, g, l) = coords(e);
        let s = self.scales[e / 16];
        (s & 0xF, s >> 4, (self.qs[32 * n + l] >> (2 * g)) & 3)
    }
}

impl Block for BlockQ2_K {
    const DTYPE: DType = DType::Q2_K;
    const LEN: usize = QK_K;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        check_len("q2_K block", bytes.len(), Self::BYTES);
        Self {
            scales: array_at(bytes, 0),
            qs: array_at(bytes, 16),
            d: f16_at(bytes, 80),
            dmin: f16_at(bytes, 82),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        check_len("q2_K block", out.len(), Self::BYTES);
        out[..16].copy_from_slice(&self.scales);
        out[16..80].copy_from_slice(&self.qs);
        put_f16(out, 80, self.d);
        put_f16(out, 82, self.dmin);
    }

    fn decode(&self, out: &mut [f64]) {
        decode_affine(self.d, self.dmin, out, |e| self.sc_m_q(e));
    }

    fn decode_f32(&self, out: &mut [f32]) {
        decode_affine_f32(self.d, self.dmin, out, |e| self.sc_m_q(e));
    }

    fn magnitude(&self, out: &mut [f64]) {
        magnitude_affine(self.d, self.dmin, out, |e| self.sc_m_q(e));
    }
}

// ---------------------------------------------------------------------------------------------
// q3_K.

impl BlockQ3_K {
    /// The 6-bit scale s_k of group k (0..16): low 4 bits from the nibbles of bytes 0..7 (low
    /// nibbles for k < 8, high nibbles of byte k − 8 after), high 2 bits from bits 2⌊k/4⌋.. of
    /// byte 8 + (k mod 4).
    pub fn scale(&self, k: usize) -> u8 {
        assert!(k < 16, "group {k} of a q3_K block");
        let low = if k < 8 {
            self.scales[k] & 0xF
        } else {
            self.scales[k - 8] >> 4
        };
        let high = (self.scales[8 + k % 4] >> (2 * (k / 4))) & 3;
        low | (high << 4)
    }

    /// (s − 32, q − (h ? 0 : 4)) of element e: both signed integers.
    fn scale_q(&self, e: usize) -> (i32, i32) {
        let (n, g, l) = coords(e);
        let q = (self.qs[32 * n + l] >> (2 * g)) & 3;
        let h = (self.hmask[l] >> (4 * n + g)) & 1;
        (
            i32::from(self.scale(e / 16)) - 32,
            i32::from(q) - if h != 0 { 0 } else { 4 },
        )
    }
}

impl Block for BlockQ3_K {
    const DTYPE: DType = DType::Q3_K;
    const LEN: usize = QK_K;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        check_len("q3_K block", bytes.len(), Self::BYTES);
        Self {
            hmask: array_at(bytes, 0),
            qs: array_at(bytes, 32),
            scales: array_at(bytes, 96),
            d: f16_at(bytes, 108),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        check_len("q3_K block", out.len(), Self::BYTES);
        out[..32].copy_from_slice(&self.hmask);
        out[32..96].copy_from_slice(&self.qs);
        out[96..108].copy_from_slice(&self.scales);
        put_f16(out, 108, self.d);
    }

    fn decode(&self, out: &mut [f64]) {
        check_len("decoded block", out.len(), QK_K);
        let d = self.d.to_f64();
        for (e, o) in out.iter_mut().enumerate() {
            let (s, q) = self.scale_q(e);
            *o = d * f64::from(s) * f64::from(q);
        }
    }

    /// ggml: `dl = d_all * (scale - 32)`, then `dl * q`; both products are exact in f32
    /// (11 + 6 + 3 significant bits).
    fn decode_f32(&self, out: &mut [f32]) {
        check_len("decoded block", out.len(), QK_K);
        let d = self.d.to_f32();
        for (e, o) in out.iter_mut().enumerate() {
            let (s, q) = self.scale_q(e);
            let dl = d * s as f32;
            *o = dl * q as f32;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// q4_K and q5_K.

impl BlockQ4_K {
    /// (scale, min, q) of element e.
    fn sc_m_q(&self, e: usize) -> (u8, u8, u8) {
        let sb = e / 32;
        let (sc, m) = scale_min_k4(&self.scales, sb);
        let byte = self.qs[32 * (e / 64) + e % 32];
        let q = if sb % 2 == 0 { byte & 0xF } else { byte >> 4 };
        (sc, m, q)
    }
}

impl Block for BlockQ4_K {
    const DTYPE: DType = DType::Q4_K;
    const LEN: usize = QK_K;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        check_len("q4_K block", bytes.len(), Self::BYTES);
        Self {
            d: f16_at(bytes, 0),
            dmin: f16_at(bytes, 2),
            scales: array_at(bytes, 4),
            qs: array_at(bytes, 16),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        check_len("q4_K block", out.len(), Self::BYTES);
        put_f16(out, 0, self.d);
        put_f16(out, 2, self.dmin);
        out[4..16].copy_from_slice(&self.scales);
        out[16..].copy_from_slice(&self.qs);
    }

    fn decode(&self, out: &mut [f64]) {
        decode_affine(self.d, self.dmin, out, |e| self.sc_m_q(e));
    }

    fn decode_f32(&self, out: &mut [f32]) {
        decode_affine_f32(self.d, self.dmin, out, |e| self.sc_m_q(e));
    }

    fn magnitude(&self, out: &mut [f64]) {
        magnitude_affine(self.d, self.dmin, out, |e| self.sc_m_q(e));
    }
}

impl BlockQ5_K {
    /// (scale, min, q) of element e.
    fn sc_m_q(&self, e: usize) -> (u8, u8, u8) {
        let sb = e / 32;
        let (sc, m) = scale_min_k4(&self.scales, sb);
        let byte = self.qs[32 * (e / 64) + e % 32];
        let low = if sb % 2 == 0 { byte & 0xF } else { byte >> 4 };
        let fifth = (self.qh[e % 32] >> sb) & 1;
        (sc, m, low | (fifth << 4))
    }
}

impl Block for BlockQ5_K {
    const DTYPE: DType = DType::Q5_K;
    const LEN: usize = QK_K;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        check_len("q5_K block", bytes.len(), Self::BYTES);
        Self {
            d: f16_at(bytes, 0),
            dmin: f16_at(bytes, 2),
            scales: array_at(bytes, 4),
            qh: array_at(bytes, 16),
            qs: array_at(bytes, 48),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        check_len("q5_K block", out.len(), Self::BYTES);
        put_f16(out, 0, self.d);
        put_f16(out, 2, self.dmin);
        out[4..16].copy_from_slice(&self.scales);
        out[16..48].copy_from_slice(&self.qh);
        out[48..].copy_from_slice(&self.qs);
    }

    fn decode(&self, out: &mut [f64]) {
        decode_affine(self.d, self.dmin, out, |e| self.sc_m_q(e));
    }

    /// ggml: `d1 * ((ql & 0xF) + (qh & u1 ? 16 : 0)) - m1`, as q4_K.
    fn decode_f32(&self, out: &mut [f32]) {
        decode_affine_f32(self.d, self.dmin, out, |e| self.sc_m_q(e));
    }

    fn magnitude(&self, out: &mut [f64]) {
        magnitude_affine(self.d, self.dmin, out, |e| self.sc_m_q(e));
    }
}

// ---------------------------------------------------------------------------------------------
// q6_K.

impl BlockQ6_K {
    /// (scale, q − 32) of element e.
    fn scale_q(&self, e: usize) -> (i8, i32) {
        let (n, g, l) = coords(e);
        let lo = (self.ql[64 * n + 32 * (g % 2) + l] >> (4 * (g / 2))) & 0xF;
        let hi = (self.qh[32 * n + l] >> (2 * g)) & 3;
        (self.scales[e / 16], i32::from(lo | (hi << 4)) - 32)
    }
}

impl Block for BlockQ6_K {
    const DTYPE: DType = DType::Q6_K;
    const LEN: usize = QK_K;
    const BYTES: usize = std::mem::size_of::<Self>();

    fn from_bytes(bytes: &[u8]) -> Self {
        check_len("q6_K block", bytes.len(), Self::BYTES);
        Self {
            ql: array_at(bytes, 0),
            qh: array_at(bytes, 128),
            scales: std::array::from_fn(|i| bytes[192 + i] as i8),
            d: f16_at(bytes, 208),
        }
    }

    fn to_bytes(&self, out: &mut [u8]) {
        check_len("q6_K block", out.len(), Self::BYTES);
        out[..128].copy_from_slice(&self.ql);
        out[128..192].copy_from_slice(&self.qh);
        for (o, &s) in out[192..208].iter_mut().zip(&self.scales) {
            *o = s as u8;
        }
        put_f16(out, 208, self.d);
    }

    fn decode(&self, out: &mut [f64]) {
        check_len("decoded block", out.len(), QK_K);
        let d = self.d.to_f64();
        for (e, o) in out.iter_mut().enumerate() {
            let (s, q) = self.scale_q(e);
            *o = d * f64::from(s) * f64::from(q);
        }
    }

    /// ggml: `d * sc[is] * q` evaluated left to right in f32; exact, since d has at most 11
    /// significant bits, sc ∈ [−128, 127] at most 7 and q − 32 ∈ [−32, 31] at most 5.
    fn decode_f32(&self, out: &mut [f32]) {
        check_len("decoded block", out.len(), QK_K);
        let d = self.d.to_f32();
        for (e, o) in out.iter_mut().enumerate() {
            let (s, q) = self.scale_q(e);
            *o = d * f32::from(s) * q as f32;
        }
    }
}
