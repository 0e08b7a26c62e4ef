//! Deterministic input data: value distributions and raw quant blocks, regenerated bit for bit
//! from (seed, stream) so a case needs no stored data.

use half::f16;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use vkdiff_reference::tensor::Tensor;
use vkdiff_reference::DType;

/// How float inputs are drawn. Every distribution yields at least one non-zero value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dist {
    /// Standard normal: mixed signs, mostly |x| < 3.
    Normal,
    /// Uniform on [−1, 1).
    Uniform,
    /// Uniform on [0, 1): no sign cancellation.
    Positive,
    /// Normal × 1000: large magnitudes (still inside f16 range).
    Large,
    /// Three quarters exact zeros, the rest normal.
    SparseZeros,
    /// Every value an exact zero (a zero-filled cache slice). Not in [`Dist::strategy`]: a
    /// kernel's strategy draws it where an all-zero operand means something (flash_attn's V).
    Zeros,
    /// Normal, with each value NaN, +∞ or −∞ with probability 1/256 each. Only in
    /// [`Dist::ieee_strategy`], for kernels whose model says which NaN and ±∞ results every
    /// order of their arithmetic shares (`tolerance::dot_special`).
    Specials,
    /// Subnormal magnitudes, random signs: half f32 subnormals (2⁻¹⁴⁹…2⁻¹²⁶), a quarter f16
    /// subnormals (2⁻²⁴…2⁻¹⁴, normal in f32), a quarter normal. Only in
    /// [`Dist::ieee_strategy`] (models that charge a flushed operand in full).
    Subnormal,
    /// Normal × 2^e with e uniform in [10, 60]: magnitudes up to f32's range for products,
    /// past f16's (an f16 tensor holds ±∞ there) and past what an f16 staging can hold. Only
    /// in [`Dist::ieee_strategy`] (models that flag possible overflow).
    Huge,
}

impl Dist {
    /// Simplest first, so shrinking moves toward `Normal`.
    pub fn strategy() -> impl Strategy<Value = Dist> {
        prop_oneof![
            Just(Dist::Normal),
            Just(Dist::Uniform),
            Just(Dist::Positive),
            Just(Dist::Large),
            Just(Dist::SparseZeros)
        ]
    }

    /// [`Dist::strategy`] and the distributions with NaN, ±∞ and subnormals, for kernels
    /// whose error model covers them (mat-vec and mul_mm).
    pub fn ieee_strategy() -> impl Strategy<Value = Dist> {
        prop_oneof![
            10 => Dist::strategy(),
            1 => Just(Dist::Specials),
            1 => Just(Dist::Subnormal),
            1 => Just(Dist::Huge)
        ]
    }

    fn draw(self, rng: &mut ChaCha8Rng) -> f32 {
        match self {
            Dist::Normal => normal(rng),
            Dist::Uniform => rng.gen_range(-1.0..1.0),
            Dist::Positive => rng.gen_range(0.0..1.0),
            Dist::Large => 1000.0 * normal(rng),
            Dist::SparseZeros => {
                if rng.gen_bool(0.75) {
                    0.0
                } else {
                    normal(rng)
                }
            }
            Dist::Zeros => 0.0,
            Dist::Specials => match rng.gen_range(0..256) {
                0 => f32::NAN,
                1 => f32::INFINITY,
                2 => f32::NEG_INFINITY,
                _ => normal(rng),
            },
            Dist::Huge => normal(rng) * rng.gen_range(10.0f32..60.0).exp2(),
            Dist::Subnormal => {
                let sign = if rng.gen_bool(0.5) { -1.0 } else { 1.0 };
                let e: f64 = match rng.gen_range(0..4) {
                    0 | 1 => rng.gen_range(-149.0..-126.0),
                    2 => rng.gen_range(-24.0..-14.0),
                    _ => return normal(rng),
                };
                (sign * e.exp2()) as f32
            }
        }
    }
}

/// The generator for one input tensor of a case: `stream` tells tensors of one case apart.
pub fn rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(stream);
    r
}

fn normal(rng: &mut ChaCha8Rng) -> f32 {
    // Box–Muller; 1 − u keeps the logarithm finite.
    let (u, v): (f64, f64) = (rng.gen(), rng.gen());
    ((-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
}

/// `n` values from `dist`, never all zero.
pub fn values(dist: Dist, seed: u64, stream: u64, n: usize) -> Vec<f32> {
    let mut r = rng(seed, stream);
    let mut v: Vec<f32> = (0..n).map(|_| dist.draw(&mut r)).collect();
    if v.iter().all(|&x| x == 0.0) {
        v[n / 2] = 1.0;
    }
    v
}

/// How the scale fields of raw quant blocks are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scales {
    /// |d| uniform in [2⁻¹⁰, 1), random sign.
    Random,
    /// A quarter of the blocks have d = 0 (and m = 0), the rest Random.
    SomeZero,
    /// Extremes of f16: the largest finite value, the smallest normal, and values near them.
    Extreme,
    /// f16 subnormals (exponent field 0).
    Subnormal,
    /// Each block picks one of the above.
    Mixed,
    /// Any 16 bits, NaN and ±∞ included: what a fuzzer or a corrupt file can hold. Outputs that
    /// become NaN or ±∞ are then not judged (compare.rs), every other element still is.
    AnyBits,
}

/// Where a quantized tensor's blocks come from.
///
/// For block formats without a specified reference quantizer (the K-quants, iq4_nl, iq4_xs:
/// `DType::has_quantizer` is false), `Quantized(_)` means `Raw(Scales::Random)`, so strategies
/// need not know which formats have one; shrinking still ends on the first arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Blocks {
    /// Float values from a distribution, quantized with ggml's reference quantizer.
    Quantized(Dist),
    /// Every bit random except the f16 scale fields (MXFP4: its E8M0 scale byte; NVFP4: its UE4M3 bytes), which follow
    /// [`Scales`]: blocks no quantizer would produce, e.g. all 4-bit codes used with a
    /// subnormal scale.
    Raw(Scales),
}

impl Blocks {
    /// [`Blocks::strategy`] with [`Dist::ieee_strategy`]'s values for float types (block
    /// formats quantize them as they are).
    pub fn ieee_strategy() -> impl Strategy<Value = Blocks> {
        prop_oneof![
            10 => Blocks::strategy(),
            1 => Just(Blocks::Quantized(Dist::Specials)),
            1 => Just(Blocks::Quantized(Dist::Subnormal)),
            1 => Just(Blocks::Quantized(Dist::Huge))
        ]
    }

    /// Quantized blocks first (simplest), then raw blocks.
    pub fn strategy() -> impl Strategy<Value = Blocks> {
        prop_oneof![
            Dist::strategy().prop_map(Blocks::Quantized),
            prop_oneof![
                Just(Scales::Random),
                Just(Scales::SomeZero),
                Just(Scales::Extreme),
                Just(Scales::Subnormal),
                Just(Scales::Mixed),
                Just(Scales::AnyBits)
            ]
            .prop_map(Blocks::Raw),
        ]
    }
}

impl Scales {
    /// The mode a [`Scales::Mixed`] block takes: one of the four plain ones, uniformly.
    fn mixed_pick(rng: &mut ChaCha8Rng) -> Scales {
        let modes = [
            Scales::Random,
            Scales::SomeZero,
            Scales::Extreme,
            Scales::Subnormal,
        ];
        modes[rng.gen_range(0..modes.len())]
    }
}

fn scale(mode: Scales, rng: &mut ChaCha8Rng) -> f16 {
    let sign = if rng.gen_bool(0.5) { -1.0f32 } else { 1.0 };
    match mode {
        Scales::Random => f16::from_f32(sign * rng.gen_range(1.0 / 1024.0..1.0)),
        Scales::SomeZero => {
            if rng.gen_bool(0.25) {
                f16::ZERO
            } else {
                scale(Scales::Random, rng)
            }
        }
        Scales::Extreme => {
            let choices = [
                f16::MAX,
                f16::MIN_POSITIVE,
                f16::from_f32(30000.0),
                f16::from_bits(0x0401),
            ];
            f16::from_f32(sign * choices[rng.gen_range(0..choices.len())].to_f32())
        }
        Scales::Subnormal => {
            f16::from_bits(rng.gen_range(1u16..0x400) | if sign < 0.0 { 0x8000 } else { 0 })
        }
        Scales::AnyBits => f16::from_bits(rng.gen()),
        Scales::Mixed => scale(Scales::mixed_pick(rng), rng),
    }
}

thread_local! {
    /// The tensors generated while [`keep_tensors`] is on, by their arguments.
    static KEPT: std::cell::RefCell<Option<Vec<(TensorKey, Tensor)>>> = const { std::cell::RefCell::new(None) };
    /// What [`kept`] computed while [`keep_tensors`] is on, by its key.
    static KEPT_VALUES: std::cell::RefCell<Option<Vec<(String, KeptValue)>>> = const { std::cell::RefCell::new(None) };
}

/// While [`keep_tensors`] is on, the value `compute` gave for `key` the first time; otherwise
/// `compute()`. For the host-side work a case repeats on every evaluation of the same inputs
/// (the reference result and the error bounds): `vkdiff bench` evaluates each row once per
/// round and tree, and a 14336×512×4096 reference takes longer than everything else in its row.
/// The key must name everything the value depends on (the case and the plan it was judged by);
/// it is only built while keeping is on, so a campaign's cases pay nothing for it.
/// `VKDIFF_PROFILE` lists the time spent here as "reference and bounds" (the host's share of a
/// flash-attention or matrix-matrix case).
pub fn kept<T: Clone + 'static>(key: impl FnOnce() -> String, compute: impl FnOnce() -> T) -> T {
    let _span = vkdiff_gpu::profile::span("reference and bounds");
    if KEPT_VALUES.with(|k| k.borrow().is_none()) {
        return compute();
    }
    let key = key();
    let hit = KEPT_VALUES.with(|k| {
        k.borrow().as_ref().and_then(|v| {
            v.iter()
                .find(|(x, _)| *x == key)
                .and_then(|(_, value)| value.downcast_ref::<T>().cloned())
        })
    });
    if let Some(v) = hit {
        return v;
    }
    let value = compute();
    KEPT_VALUES.with(|k| {
        if let Some(v) = k.borrow_mut().as_mut() {
            // One bench row at a time keeps a few values.
            if v.len() >= 8 {
                v.remove(0);
            }
            v.push((key, std::rc::Rc::new(value.clone())));
        }
    });
    value
}

type TensorKey = (DType, [usize; 4], Blocks, u64, u64);

/// A value [`kept`] holds, of whatever type its caller computed.
type KeptValue = std::rc::Rc<dyn std::any::Any>;

/// While `on`, [`tensor`] (and [`kept`]) keeps what it generates and hands out copies on a repeat: `vkdiff
/// bench` evaluates each case once per round and tree, and generating (and quantizing) a
/// 14336×4096 weight matrix costs more host time than the rest of a row. Turning it off
/// drops the kept tensors.
pub fn keep_tensors(on: bool) {
    KEPT.with(|k| {
        let mut k = k.borrow_mut();
        match (on, k.is_some()) {
            (true, false) => *k = Some(Vec::new()),
            (false, _) => *k = None,
            _ => {}
        }
    });
    KEPT_VALUES.with(|k| {
        let mut k = k.borrow_mut();
        match (on, k.is_some()) {
            (true, false) => *k = Some(Vec::new()),
            (false, _) => *k = None,
            _ => {}
        }
    });
}

/// A densely packed tensor of type `dtype` and shape `ne`. Float types take their values from
/// `blocks`' distribution (raw blocks fall back to Normal); block formats are quantized or raw.
pub fn tensor(dtype: DType, ne: [usize; 4], blocks: Blocks, seed: u64, stream: u64) -> Tensor {
    let key = (dtype, ne, blocks, seed, stream);
    let kept = KEPT.with(|k| {
        k.borrow()
            .as_ref()
            .and_then(|v| v.iter().find(|(x, _)| *x == key).map(|(_, t)| t.clone()))
    });
    if let Some(t) = kept {
        return t;
    }
    let t = generate(dtype, ne, blocks, seed, stream);
    KEPT.with(|k| {
        if let Some(v) = k.borrow_mut().as_mut() {
            // A case's operands: a few tensors; older ones are of cases already done.
            if v.len() >= 8 {
                v.remove(0);
            }
            v.push((key, t.clone()));
        }
    });
    t
}

fn generate(dtype: DType, ne: [usize; 4], blocks: Blocks, seed: u64, stream: u64) -> Tensor {
    let n: usize = ne.iter().product();
    let blocks = match blocks {
        Blocks::Quantized(_)
            if dtype.is_quantized() && !dtype.has_quantizer() && dtype != DType::Mxfp4 =>
        {
            Blocks::Raw(Scales::Random)
        }
        b => b,
    };
    match (blocks, dtype.is_quantized()) {
        // MXFP4 values go through the MX specification's conversion (ggml's quantizer is not
        // reproduced: `DType::has_quantizer`).
        (Blocks::Quantized(dist), true) if dtype == DType::Mxfp4 => {
            let bytes = vkdiff_reference::formats::mxfp4::encode(&values(dist, seed, stream, n));
            Tensor::from_bytes(dtype, ne, bytes).expect("whole blocks")
        }
        (Blocks::Raw(mode), true) => {
            let mut r = rng(seed, stream);
            let nblocks = n / dtype.block_len();
            let mut bytes = vec![0u8; nblocks * dtype.block_bytes()];
            r.fill(&mut bytes[..]);
            for block in bytes.chunks_exact_mut(dtype.block_bytes()) {
                for i in 0..dtype.f16_scales() {
                    dtype.set_f16_scale(block, i, scale(mode, &mut r));
                }
                if dtype == DType::Mxfp4 {
                    let (e, zero) = scale_byte(mode, &mut r);
                    block[0] = e;
                    if zero {
                        block[1..].fill(0);
                    }
                }
                if dtype == DType::Nvfp4 {
                    for s in 0..4 {
                        let (d, zero) = ue4m3_scale_byte(mode, &mut r);
                        block[s] = d;
                        if zero {
                            block[4 + 8 * s..12 + 8 * s].fill(0);
                        }
                    }
                }
            }
            if bytes.iter().all(|&b| b == 0) {
                if dtype == DType::Mxfp4 {
                    bytes[0] = 127;
                } else if dtype == DType::Nvfp4 {
                    bytes[0] = 0x38;
                } else {
                    dtype.set_f16_scale(&mut bytes[..dtype.block_bytes()], 0, f16::ONE);
                }
                bytes[dtype.block_bytes() - 1] = 0x11;
            }
            Tensor::from_bytes(dtype, ne, bytes).expect("whole blocks")
        }
        (Blocks::Quantized(dist), _) => {
            Tensor::from_f32(dtype, ne, &values(dist, seed, stream, n)).expect("whole blocks")
        }
        (Blocks::Raw(_), false) => {
            Tensor::from_f32(dtype, ne, &values(Dist::Normal, seed, stream, n)).expect("float type")
        }
    }
}

/// The E8M0 scale byte of one raw MXFP4 block, by the same [`Scales`] modes as the f16 scales
/// of the other formats. `zero_block` is set for blocks [`Scales::SomeZero`] makes zero
/// (E8M0 has no zero: their codes are cleared instead).
///
/// * Random: 2^(e − 127) in [2⁻¹¹, 2⁰) (element values up to 6, like an f16 d in [2⁻¹⁰, 1)).
/// * Extreme: the ends of E8M0's finite range and their neighbours: e ∈ {0, 1, 2, 252, 253,
///   254} (2⁻¹²⁷ … 2¹²⁷).
/// * Subnormal: e ∈ {0, 1, 2}, where the decoded values or the scale are f32 subnormals.
/// * Mixed: one of the above per block; AnyBits: any byte, NaN (0xFF) included.
pub fn scale_byte(mode: Scales, rng: &mut ChaCha8Rng) -> (u8, bool) {
    match mode {
        Scales::Random => (rng.gen_range(116u8..127), false),
        Scales::SomeZero => {
            if rng.gen_bool(0.25) {
                (127, true)
            } else {
                scale_byte(Scales::Random, rng)
            }
        }
        Scales::Extreme => {
            let choices = [0u8, 1, 2, 252, 253, 254];
            (choices[rng.gen_range(0..choices.len())], false)
        }
        Scales::Subnormal => (rng.gen_range(0u8..=2), false),
        Scales::AnyBits => (rng.gen(), false),
        Scales::Mixed => scale_byte(Scales::mixed_pick(rng), rng),
    }
}

/// One UE4M3 scale byte of a raw NVFP4 block (`vkdiff_reference::formats::nvfp4`), by the
/// [`Scales`] modes; `zero_sub_block` asks for that sub-block's codes to be cleared.
///
/// * Random: exponents 4 … 7, scales 2⁻³ … 1.875 (element values up to 11.25).
/// * SomeZero: a quarter of the sub-blocks with scale 0 or their codes cleared.
/// * Extreme: the ends of the format: the smallest subnormal and normal codes and their
///   neighbours, the largest (448) and its neighbour, and 0x7F (E4M3's NaN, zero in ggml).
/// * Subnormal: exponent 0 (man·2⁻⁹). Mixed: one of the above; AnyBits: any 7-bit code (bit 7
///   is outside the format: ggml's quantizer never sets it and its Vulkan table has 128 rows).
pub fn ue4m3_scale_byte(mode: Scales, rng: &mut ChaCha8Rng) -> (u8, bool) {
    match mode {
        Scales::Random => (rng.gen_range(0x20u8..0x40), false),
        Scales::SomeZero => match rng.gen_range(0..8) {
            0 => (0, false),
            1 => (0x38, true),
            _ => ue4m3_scale_byte(Scales::Random, rng),
        },
        Scales::Extreme => {
            let choices = [0x01u8, 0x07, 0x08, 0x09, 0x7D, 0x7E, 0x7F];
            (choices[rng.gen_range(0..choices.len())], false)
        }
        Scales::Subnormal => (rng.gen_range(0u8..=7), false),
        Scales::AnyBits => (rng.gen_range(0u8..=0x7F), false),
        Scales::Mixed => ue4m3_scale_byte(Scales::mixed_pick(rng), rng),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regenerates_bit_for_bit_and_never_all_zero() {
        assert_eq!(
            values(Dist::Normal, 7, 1, 100),
            values(Dist::Normal, 7, 1, 100)
        );
        assert_ne!(
            values(Dist::Normal, 7, 1, 100),
            values(Dist::Normal, 7, 2, 100)
        );
        assert!(values(Dist::SparseZeros, 3, 0, 1).iter().any(|&x| x != 0.0));
        let t = tensor(
            DType::Q4_1,
            [32, 2, 1, 1],
            Blocks::Raw(Scales::Subnormal),
            1,
            0,
        );
        let d = f16::from_le_bytes([t.data()[0], t.data()[1]]);
        assert!(!d.is_normal() && d != f16::ZERO, "{d}");
    }

    #[test]
    fn formats_without_a_quantizer_fall_back_to_random_raw_blocks() {
        for dtype in [
            DType::Q2_K,
            DType::Q6_K,
            DType::Iq1M,
            DType::Iq2Xxs,
            DType::Iq4Nl,
            DType::Iq4Xs,
        ] {
            let ne = [dtype.block_len(), 3, 1, 1];
            let q = tensor(dtype, ne, Blocks::Quantized(Dist::Large), 9, 0);
            let raw = tensor(dtype, ne, Blocks::Raw(Scales::Random), 9, 0);
            assert_eq!(q, raw, "{dtype}");
            // Every scale field is a finite f16 of the Random range.
            for block in q.data().chunks_exact(dtype.block_bytes()) {
                for i in 0..dtype.f16_scales() {
                    let v = dtype.f16_scale(block, i).to_f32().abs();
                    assert!((1.0 / 1024.0..=1.0).contains(&v), "{dtype}: {v}");
                }
            }
        }
    }
}
