//! MUL_MAT cases that upstream routes to the matrix-matrix kernel (`mul_mm.comp`): dst.ne1 > 8,
//! or 2..8 columns with batches (§4.3).
//!
//! Three paths, one row set each (the row's `mode`): the scalar fp16 path below; the KHR
//! cooperative-matrix path (cm1: `mul_mm.comp` with COOPMAT, rows `matmul_*_cm1`), whose host
//! logic, families and strategy are the scalar path's and whose products go through 16×16×16
//! coopMatMulAdd steps (error model: [`cm1_bounds`]); and the NV cooperative-matrix-2 path
//! (`mul_mm_cm2.comp`, rows `matmul_*_cm2`: f16 × f16, bf16 × bf16 and quantized × f16 with
//! either accumulator; f32 operands reach them converted to f16 by the host), with its own K
//! and N strategies ([`cm2_k_strategy`], [`cm2_n_strategy`]) and error model
//! ([`crate::model::cases::mul_mm::bounds_cm2::mul_mm_cm2_bounds`]).
//!
//! One variant row per pipeline family the host selects on a scalar fp16 device (lavapipe):
//! the SPIR-V name of the unaligned variant, e.g. `matmul_q4_0_f32_f16acc`. Each row also
//! covers its `_aligned` twin, which the host picks per dispatch from the shape (K a multiple
//! of the tile's 32/64/128, M and N > 8; which tile depends on the device's shared memory);
//! the strategy makes about half the cases aligned on a 32 KiB device. Grouping the twins
//! keeps the rows device-independent and halves the suite (31 scalar + 31 cm1 + 27 cm2 rows
//! here, 18 + 18 + 15 for MUL_MAT_ID).
//!
//! A row is reached from every input the host maps to it (§4.3, §8.4): `matmul_f16[_f16acc]`
//! also runs quantized A with an f16 B (A dequantized to f16 by the host) and any A whose B is
//! a padded f32 view (B copied to f16); `matmul_f32_f16` runs f32 A with an f16 or padded f32
//! B; `matmul_bf16` runs bf16 A with a bf16 or f32 B (B converted to bf16).
//!
//! What the strategy covers, simplest arm first: M, N and K on both sides of every tile edge
//! (32/64/128 rows and columns, BK = 16 or 32, the 32/256-element blocks), batches with
//! broadcast over dim 2, padded B rows, gaps between B's matrices (B then not contiguous:
//! recent hosts skip MMQ for it), both precision requests, a forced split_k of 2..4 (3
//! becomes 2; k_split = ⌈K/split_k⌉ is not a multiple of BK in general), long K for the f16
//! accumulators, and data from every distribution and raw block kind.
//!
//! § numbers: sections of docs/interface.md.

pub mod bounds;
pub mod bounds_cm2;

use std::fmt;

use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use vkdiff_gpu::runners;
use vkdiff_gpu::runners::mul_mm::{Mode, MulMmRun, Prec, Selection, Staging};
use vkdiff_reference::ops::mul_mat;
use vkdiff_reference::tensor::Tensor;
use vkdiff_reference::DType;

use super::data::{tensor, Blocks, Dist};
use super::{CaseModel, Outcome};
use crate::model::driver::{Ctx, GraphOp};
use crate::model::work::BenchShapes;
use crate::model::work::Work;
use crate::model::compare::compare;
use crate::model::facts::{
    bucket, host_cores, k_fact, mm_path, prec_fact, rows, B_GAPS_FACT, NO_CORES, RAGGED,
};
use crate::model::config::Family as Shaders;
use crate::model::kernels::KernelDef;
use vkdiff_gpu::DeviceCaps;
use crate::model::tolerance::{self, Fp};
use crate::model::cases::mul_mm::bounds::MulMmArith;

/// The quantized A types with a direct mul_mm pipeline (§6.1), in table order.
pub const QUANT_TYPES: &[DType] = DType::WEIGHT_QUANTS;

/// Products a·b a case may compute (M·N·K·batches): lavapipe runs the f16 arithmetic at tens
/// of millions of fmas a second, and the error model walks every product once.
pub const PRODUCTS: usize = 1 << 22;

/// The budget of the cm2 rows (which only run on cm2 hardware): enough for a full large tile
/// (128 × 256) over several 256-deep K steps, where the fast and reduced paths start.
pub const CM2_PRODUCTS: usize = 1 << 24;

/// One MUL_MAT through the matrix-matrix kernel: dst (M, N, ne02·r2, ne03) = A (K, M, ne02,
/// ne03) × B (K, N, ne02·r2, ne03).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MulMmCase {
    /// A's type.
    pub a_type: DType,
    /// B's type (f32, f16, or bf16 with a bf16 A).
    pub b_type: DType,
    /// Inner dimension.
    pub k: usize,
    /// Rows of A = dst.ne0.
    pub m: usize,
    /// Columns of B = dst.ne1.
    pub n: usize,
    /// A's dim-2 batches.
    pub ne02: usize,
    /// Broadcast factor over dim 2: ne12 = ne02·r2.
    pub r2: usize,
    /// Dim-3 batches of A and B.
    pub ne03: usize,
    /// Extra elements between B's rows (0: contiguous; else the host copies B to f16).
    pub b_row_pad: usize,
    /// Extra elements after each of B's matrices (0: none). B stays dim01-contiguous (the
    /// kernel reads it in place with its batch stride) but is no longer contiguous, so the
    /// hosts skip MMQ for it: the float matmul of a type that has MMQ runs only so.
    #[serde(default)]
    pub b_batch_pad: usize,
    /// The precision request.
    pub prec: Prec,
    /// Split K this many ways (None: upstream's choice, no split here).
    pub force_split_k: Option<u32>,
    /// A's data.
    pub a_blocks: Blocks,
    /// B's data.
    pub b_dist: Dist,
    /// Data seed.
    pub seed: u64,
    /// The cm2 path (`mul_mm_cm2.comp`) instead of the scalar fp16 one.
    #[serde(default)]
    pub cm2: bool,
    /// The cm1 path (`mul_mm.comp` with COOPMAT) instead of the scalar fp16 one.
    #[serde(default)]
    pub cm1: bool,
    /// Float A and B values are multiplied by 2^scale_log2 (bf16 rows: magnitudes that f16
    /// cannot hold, so a kernel that went through f16 would lose them).
    #[serde(default)]
    pub scale_log2: i32,
}

/// A mul_mm or mul_mm_id row: the pipeline family's kernel A and B types and accumulator on a
/// path (the row also covers the aligned twin).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    /// A's type as the kernel reads it (the experts' type for mul_mm_id).
    pub a: DType,
    /// B's type as the kernel reads it.
    pub b: DType,
    /// f16 accumulators.
    pub acc16: bool,
    /// The path: scalar fp16, cm1 (`mul_mm.comp` with COOPMAT) or cm2 (`mul_mm_cm2.comp`).
    pub mode: Mode,
}

/// The matrix-matrix kernel (registry line in `src/model/cases/mod.rs`).
pub struct MulMm;

impl KernelDef for MulMm {
    type Case = MulMmCase;
    type Params = Family;
    const NAME: &'static str = "mul_mm";
    const SHADER: &'static str = "mul_mm.comp";
    const SUMMARY: &'static str = "matrix × matrix MUL_MAT (dst.ne1 > 8, or > 1 with batches), scalar fp16 path (mul_mm.comp), KHR coopmat path (`_cm1` rows, mul_mm.comp with COOPMAT) and NV coopmat2 path (`_cm2` rows, mul_mm_cm2.comp): A in f32/f16/bf16/q4_0..q8_0/q2_K..q6_K/iq1_s..iq3_s/iq4_nl/iq4_xs/mxfp4/nvfp4/q1_0/q2_0/tq1_0/tq2_0, B f32/f16/bf16, f16 or f32 accumulators, aligned twins, forced split_k (+ mul_mat_split_k_reduce.comp)";
    const ERROR_MODEL: &'static str = "scalar: running error bound along the exact partial sums (operands rounded to f16, products and adds in ACC_TYPE); cm1: the scalar operand roundings, then the cm2 step model over TK = 16; cm2: decoder roundings per type, then a running bound over BK-deep coopMatMulAdd steps whose inner order is free (γ over BK with directed-rounding units); flushed subnormals, split-k reduce in f32; possible f16 overflow may be ±∞ (src/model/cases/mul_mm/bounds.rs, bounds_cm2.rs)";

    fn variants() -> Vec<(String, Family)> {
        all_families(false)
            .into_iter()
            .map(|(a, b, acc16, mode)| {
                let name = family_name(a, b, acc16, false, mode);
                (name, Family { a, b, acc16, mode })
            })
            .collect()
    }

    fn strategy(p: &Family) -> BoxedStrategy<Self::Case> {
        prop_oneof![
            LARGE_ODDS => strategy(p.a, p.b, p.acc16, p.mode),
            1 => large_strategy(p.a, p.b, p.acc16, p.mode),
        ]
        .boxed()
    }

    fn requires(p: &Family, caps: &DeviceCaps) -> Option<String> {
        requires(p, caps)
    }

    fn ggml_skip(p: &Family, family: Shaders) -> Option<String> {
        ggml_skip(p, family)
    }

    const BENCH_ORDER: u8 = 5;
    /// Prefill matmuls of a 7–8B model at M×N×K = 4096×512×4096, 14336×512×4096 and 4096×512×14336, scalar and cm2.
    fn bench_rows(shapes: &BenchShapes) -> Vec<(String, Self::Case)> {
        let weights = Blocks::Quantized(Dist::Normal);
        let mut rows = Vec::new();
        let mut push = |label: String, case| rows.push((label, case));
        for cm2 in [false, true] {
            for a_type in [DType::F16, DType::Q4_0, DType::Q8_0] {
                for (m, k) in [(4096, 4096), (14336, 4096), (4096, 14336)] {
                    let (m, k, n) = (shapes.dim(m), shapes.dim(k), shapes.dim(512));
                    let case = MulMmCase {
                        a_type,
                        b_type: DType::F32,
                        k,
                        m,
                        n,
                        ne02: 1,
                        r2: 1,
                        ne03: 1,
                        b_row_pad: 0,
                        b_batch_pad: 0,
                        prec: Prec::Default,
                        force_split_k: None,
                        a_blocks: weights,
                        b_dist: Dist::Normal,
                        seed: 1,
                        cm2,
                        cm1: false,
                        scale_log2: 0,
                    };
                    push(
                        format!("{m}×{n}×{k} {a_type}{}", crate::model::work::cm2_label(cm2)),
                        case,
                    );
                }
            }
        }
        rows
    }
}

/// Why `caps` does not run the row, if it does not. Scalar rows run on any shaderFloat16
/// device (on a coopmat device as upstream does with GGML_VK_DISABLE_COOPMAT /
/// GGML_VK_DISABLE_COOPMAT2 set); cm1 rows need VK_KHR_cooperative_matrix with the 16×16×16 f16
/// shape and full subgroups (on a cm2 device they run as with GGML_VK_DISABLE_COOPMAT2), and
/// their `_f16acc` rows the f16-accumulator shape (without it upstream selects the f32 ones);
/// cm2 rows need VK_NV_cooperative_matrix2; the bf16 coopmat rows bf16 cooperative matrices
/// (VK_KHR_shader_bfloat16 with shaderBFloat16Type and shaderBFloat16CooperativeMatrix).
pub fn requires(f: &Family, caps: &DeviceCaps) -> Option<String> {
    let Family { a, acc16, mode, .. } = *f;
    if mode == Mode::Fp16 {
        // Without shaderFloat16 the row runs as upstream's `_fp32` variant (see [`mode_on`]).
        return (!caps.fp16 && acc16).then(|| {
            "no shaderFloat16: upstream's `_fp32` variants have no f16 accumulators".into()
        });
    }
    if let Err(e) = runners::mul_mm::device_supports(caps, mode) {
        return Some(e);
    }
    if mode == Mode::Cm1 && acc16 && !runners::mul_mm::cm1_shape(caps, true) {
        return Some(
            "no 16x16x16 f16 → f16 cooperative-matrix shape: upstream selects the f32-accumulator cm1 variant"
                .into(),
        );
    }
    if a == DType::Bf16 && !(caps.bf16 && caps.bf16_coopmat) {
        return Some(
            "no bf16 cooperative matrices (VK_KHR_shader_bfloat16 with shaderBFloat16Type and shaderBFloat16CooperativeMatrix)"
                .into(),
        );
    }
    None
}

/// Why ggml's host running shader family `family` does not run the row: it takes one matmul
/// path per family, and no f16 accumulators without fp16.
pub fn ggml_skip(f: &Family, family: Shaders) -> Option<String> {
    let path = match family {
        Shaders::ScalarFp32 | Shaders::ScalarFp16 => Mode::Fp16,
        Shaders::Cm1 => Mode::Cm1,
        Shaders::Cm2 => Mode::Cm2,
    };
    match family {
        _ if f.mode != path => Some(format!(
            "ggml runs MUL_MAT on the {path:?} matmul here (shader family {}), not {:?}",
            family.name(),
            f.mode
        )),
        Shaders::ScalarFp32 if f.acc16 => {
            Some("shader family scalar-fp32: no f16 accumulators".into())
        }
        _ => None,
    }
}

/// The pipeline families of a scalar fp16 device, as (kernel A, kernel B, f16 accumulator).
pub fn families(id: bool) -> Vec<(DType, DType, bool)> {
    let mut v = vec![
        (DType::F32, DType::F32, false),
        (DType::F16, DType::F32, false),
        (DType::F16, DType::F32, true),
        (DType::F16, DType::F16, false),
        (DType::F16, DType::F16, true),
        (DType::Bf16, DType::Bf16, false),
    ];
    if !id {
        v.insert(1, (DType::F32, DType::F16, false));
    }
    for &q in QUANT_TYPES {
        if !id {
            v.push((q, DType::F32, false));
        }
        v.push((q, DType::F32, true));
    }
    v
}

/// The path of a case (its `cm1` / `cm2` flags).
pub fn mode_of(cm1: bool, cm2: bool) -> Mode {
    match (cm1, cm2) {
        (_, true) => Mode::Cm2,
        (true, false) => Mode::Cm1,
        (false, false) => Mode::Fp16,
    }
}

/// The path a case takes on `caps`: its row's path, except that a scalar row on a device
/// without shaderFloat16 (or ggml's scalar-fp32 configuration, GGML_VK_DISABLE_F16) runs
/// upstream's `_fp32` variant: float shared memory, no f16 staging, f32 accumulators. Its
/// error model follows from that staging ([`arith_of`]).
pub fn mode_on(cm1: bool, cm2: bool, caps: &DeviceCaps) -> Mode {
    match mode_of(cm1, cm2) {
        Mode::Fp16 if !caps.fp16 => Mode::Fp32,
        m => m,
    }
}

/// The row name of a family: its unaligned SPIR-V name on its path.
pub fn family_name(a: DType, b: DType, acc16: bool, id: bool, mode: Mode) -> String {
    Selection {
        mode,
        a,
        b,
        acc16,
        id,
    }
    .name(false)
}

/// Every row: the scalar fp16 families, the same families on cm1 (same host slots), then the
/// cm2 ones, as (a, b, acc16, path).
pub fn all_families(id: bool) -> Vec<(DType, DType, bool, Mode)> {
    let on = |mode| move |(a, b, acc)| (a, b, acc, mode);
    let scalar = families(id).into_iter().map(on(Mode::Fp16));
    let cm1 = families(id).into_iter().map(on(Mode::Cm1));
    let cm2 = runners::mul_mm::cm2_families(QUANT_TYPES, id)
        .into_iter()
        .map(on(Mode::Cm2));
    scalar.chain(cm1).chain(cm2).collect()
}

/// The precision request a family needs: f16 accumulators come with GGML_PREC_DEFAULT, the
/// f32 slots of f16 and quantized A with GGML_PREC_F32; other families take either.
pub fn prec_strategy(a: DType, acc16: bool) -> BoxedStrategy<Prec> {
    if acc16 {
        Just(Prec::Default).boxed()
    } else if a == DType::F16 || a.is_quantized() {
        Just(Prec::F32).boxed()
    } else {
        prop_oneof![Just(Prec::Default), Just(Prec::F32)].boxed()
    }
}

/// The input (A, B, padded?) combinations the host maps to the family (a, b): simplest first.
/// `pad` true means B's rows must be padded (a padded f32 B is how the host comes to convert
/// it to f16), false that they must not be (a padded B would leave the family), None either.
/// On cm2 every f32 operand is converted (f32 A to f16, f32 B to f16 or bf16), so padding
/// never changes the family there.
pub fn inputs_for(a: DType, b: DType, id: bool, cm2: bool) -> Vec<(DType, DType, Option<bool>)> {
    if cm2 {
        return match a {
            DType::F16 => vec![
                (DType::F16, DType::F16, None),
                (DType::F16, DType::F32, None),
                (DType::F32, DType::F32, None),
                (DType::F32, DType::F16, None),
            ],
            _ => vec![(a, b, None), (a, DType::F32, None)],
        };
    }
    match (a, b) {
        (DType::F16, DType::F16) => {
            let mut v = vec![
                (DType::F16, DType::F16, None),
                (DType::F16, DType::F32, Some(true)),
            ];
            if !id {
                // Quantized A with an f16 (or converted f32) B: A dequantized to f16.
                for &q in QUANT_TYPES {
                    v.push((q, DType::F16, None));
                    v.push((q, DType::F32, Some(true)));
                }
            }
            v
        }
        (DType::F32, DType::F16) => vec![
            (DType::F32, DType::F16, None),
            (DType::F32, DType::F32, Some(true)),
        ],
        (DType::Bf16, _) => vec![
            (DType::Bf16, DType::Bf16, None),
            (DType::Bf16, DType::F32, None),
        ],
        (a, b) => vec![(a, b, Some(false))],
    }
}

/// The gap after each of B's matrices (`b_batch_pad`): mostly none.
pub fn gap_strategy() -> BoxedStrategy<usize> {
    prop_oneof![3 => Just(0usize), 1 => 1usize..=40].boxed()
}

/// How a case line names B's gap: nothing without one (older case lines unchanged).
pub fn gap_words(gap: usize) -> String {
    if gap > 0 {
        format!(" batch pad {gap}")
    } else {
        String::new()
    }
}

/// B of a matrix product, regenerated from the seed: `ne[2]·ne[3]` matrices of `ne[1]` rows of
/// K = `ne[0]` values, the rows `row_pad` elements apart beyond K and the matrices `gap`
/// elements apart beyond their rows (a gapped matrix is drawn as one long row of its rows and
/// the gap; without a gap, the same values as a dense draw of the padded shape).
pub fn b_tensor(
    dtype: DType,
    ne: [usize; 4],
    row_pad: usize,
    gap: usize,
    dist: Dist,
    seed: u64,
) -> Result<Tensor, String> {
    let row = ne[0] + row_pad;
    let drawn = if gap == 0 {
        [row, ne[1], ne[2], ne[3]]
    } else {
        [row * ne[1] + gap, 1, ne[2], ne[3]]
    };
    let dense = tensor(dtype, drawn, Blocks::Quantized(dist), seed, 1);
    let (size, nb2) = (dtype.block_bytes(), dense.nb()[2]);
    Tensor::new(
        dtype,
        ne,
        [size, row * size, nb2, nb2 * ne[2]],
        dense.data().to_vec(),
    )
    .map_err(|e| e.to_string())
}

/// B row padding for a (must pad?) requirement.
pub fn pad_strategy(pad: Option<bool>) -> BoxedStrategy<usize> {
    match pad {
        Some(true) => (1usize..=5).boxed(),
        Some(false) => Just(0usize).boxed(),
        None => prop_oneof![3 => Just(0usize), 1 => 1usize..=5].boxed(),
    }
}

/// K for A type `a`: around BK (16, 32) and tile-alignment (32, 64, 128) edges, in elements
/// (whole blocks for block formats), small first; rarely long, for the f16 accumulators.
pub fn k_strategy(a: DType) -> BoxedStrategy<usize> {
    let block = a.block_len();
    if block == 256 {
        prop_oneof![4 => 1usize..=2, 2 => 3usize..=8, 1 => 9usize..=16]
            .prop_map(|n| n * 256)
            .boxed()
    } else if block > 1 {
        prop_oneof![4 => 1usize..=4, 3 => 5usize..=16, 1 => 17usize..=64]
            .prop_map(move |n| n * block)
            .boxed()
    } else {
        prop_oneof![
            4 => 1usize..=40,
            3 => (1usize..=8).prop_map(|j| 32 * j),
            2 => 41usize..=300,
            1 => (1usize..=4).prop_map(|j| 128 * j),
            1 => 1000usize..=4200,
        ]
        .boxed()
    }
}

/// Rows (M) or columns around the 32/64/128 tile edges, small first.
pub fn edge_strategy(min: usize) -> BoxedStrategy<usize> {
    prop_oneof![
        8 => min..=40,
        3 => 41usize..=72,
        2 => 120usize..=136,
        1 => 250usize..=260,
    ]
    .boxed()
}

/// K on the cm2 path: also multiples of 64 and 256 (whole BK steps and the fast path's
/// 256-aligned splits) besides ragged values for the clamped path.
pub fn cm2_k_strategy(a: DType) -> BoxedStrategy<usize> {
    let block = a.block_len();
    if block == 256 {
        prop_oneof![4 => 1usize..=2, 2 => 3usize..=8, 1 => 9usize..=16]
            .prop_map(|n| n * 256)
            .boxed()
    } else {
        // In elements, rounded up to whole blocks.
        prop_oneof![
            4 => 1usize..=40,
            3 => (1usize..=8).prop_map(|j| 64 * j),
            3 => (1usize..=8).prop_map(|j| 256 * j),
            2 => 41usize..=300,
            1 => 1000usize..=4200,
        ]
        .prop_map(move |k| k.div_ceil(block) * block)
        .boxed()
    }
}

/// Columns (N) on the cm2 path: around every tile width (32, 64, 128, 256) and just past a
/// multiple of BN by up to BN/4 or BN/2 (the reduced accumulators of the fast path).
pub fn cm2_n_strategy() -> BoxedStrategy<usize> {
    prop_oneof![
        4 => 9usize..=40,
        1 => 2usize..=8,
        2 => 60usize..=72,
        2 => 120usize..=136,
        1 => 150usize..=200,
        2 => 250usize..=330,
        1 => 380usize..=390,
    ]
    .boxed()
}

/// One case in this many (plus one) of a mul_mm or mul_mm_id row is drawn by the large
/// strategy ([`large_strategy`], `mul_mm_id::large_strategy`): about one per row in the
/// differential suite's 200 cases.
pub const LARGE_ODDS: u32 = 150;

/// Large matmuls, where the host's choices for big shapes start (§8.2, and later upstream's
/// `ggml_vk_guess_matmul_pipeline` tile selectors and `ggml_vk_guess_split_k`, 0.1.161):
/// M and N past 64 on both sides (the large 128 × 128 tile on scalar and cm1 devices), N past
/// 128 (cm2's large tile, BN 256), several large tiles in M (129–136: a ragged second one;
/// 250–260: two), N of 129–136 (past the large tile's width of 128, which a host with shader
/// cores needs before it splits K, and past cm2's medium BN), and K from 2048 (its split-k threshold; then up to 8 splits of k_split rounded
/// to 256, which a ragged K past a multiple of 256 makes uneven). One matrix, no batches;
/// forced splits as in [`strategy`]. Up to 260·136·2304 ≈ 2²⁶ products: lavapipe takes a few
/// seconds a case, the reference and bound well under that (vkdiff bench --host-only).
pub fn large_strategy(
    a: DType,
    b: DType,
    acc16: bool,
    mode: Mode,
) -> impl Strategy<Value = MulMmCase> {
    let (cm1, cm2) = (mode == Mode::Cm1, mode == Mode::Cm2);
    let typed = proptest::sample::select(inputs_for(a, b, false, cm2)).prop_flat_map(
        |(a_in, b_in, pad)| {
            let block = a_in.block_len();
            // K ≥ 2048 in whole blocks: 2048 itself, just past it (ragged against 256 for the
            // 32-element blocks and floats), or 2304 (nine 256s).
            let k = prop_oneof![
                2 => Just(2048usize),
                2 => (1usize..=40).prop_map(move |j| 2048 + j * block.min(32)),
                1 => Just(2304usize),
            ]
            .prop_map(move |k| k.div_ceil(block) * block);
            (Just(a_in), Just(b_in), pad_strategy(pad), k)
        },
    );
    let m = prop_oneof![2 => 129usize..=136, 1 => 250usize..=260];
    let n = 129usize..=136;
    let split = prop_oneof![4 => Just(None), 1 => (2u32..=4).prop_map(Some)];
    (
        Blocks::ieee_strategy(),
        Dist::ieee_strategy(),
        typed,
        (m, n, split),
        prec_strategy(a, acc16),
        any::<u64>(),
    )
        .prop_map(
            move |(a_blocks, b_dist, (a_type, b_type, b_row_pad, k), (m, n, split), prec, seed)| {
                // cm2 halves a forced split until each split is a whole number of 256s (§8.3):
                // keep K a multiple of 256 · split there.
                let k = match (cm2, split) {
                    (true, Some(s)) => {
                        let s = if s.min(4) == 3 { 2 } else { s.min(4) as usize };
                        k.div_ceil(256 * s) * 256 * s
                    }
                    _ => k,
                };
                MulMmCase {
                    a_type,
                    b_type,
                    k,
                    m,
                    n,
                    ne02: 1,
                    r2: 1,
                    ne03: 1,
                    b_row_pad,
                    b_batch_pad: 0,
                    prec,
                    force_split_k: split,
                    a_blocks,
                    b_dist,
                    seed,
                    cm2,
                    cm1,
                    scale_log2: 0,
                }
            },
        )
}

/// Cases for the family (a, b, acc16) on the path `mode` (cm1 cases are drawn as the scalar
/// ones: same host logic, same tile edges). The shape is drawn before the data and by
/// `prop_flat_map`, each size's range set by those drawn before it (nothing is rewritten
/// after drawing), so shrinking the data never moves the shape and shrinking N never moves K.
pub fn strategy(a: DType, b: DType, acc16: bool, mode: Mode) -> impl Strategy<Value = MulMmCase> {
    let (cm1, cm2) = (mode == Mode::Cm1, mode == Mode::Cm2);
    let budget = if cm2 { CM2_PRODUCTS } else { PRODUCTS };
    let n = if cm2 {
        cm2_n_strategy()
    } else {
        prop_oneof![6 => 9usize..=40, 1 => 2usize..=8, 2 => 41usize..=72, 1 => 120usize..=136]
            .boxed()
    };
    // cm2: a third of the cases are made fast-path friendly (K a multiple of 256, at least
    // one full 128-row tile, one matrix), so that N just past a multiple of BN reaches the
    // reduced BN/4 and BN/2 accumulators; without it about 1% of cases did.
    let fast = if cm2 {
        prop_oneof![2 => Just(false), 1 => Just(true)].boxed()
    } else {
        Just(false).boxed()
    };
    let split = prop_oneof![4 => Just(None), 1 => (2u32..=4).prop_map(Some)];
    // bf16 magnitudes outside f16's range, both ways (cm2 rows).
    let scale = if cm2 && a == DType::Bf16 {
        prop_oneof![3 => Just(0i32), 1 => Just(-40i32), 1 => Just(24i32)].boxed()
    } else {
        Just(0i32).boxed()
    };
    let shape = (
        proptest::sample::select(inputs_for(a, b, false, cm2)),
        fast,
        split,
        n,
    )
        .prop_flat_map(move |((a_in, b_in, pad), fast, split, n)| {
            // 2..8 columns reach this kernel only with batches; a fast-path case keeps its
            // budget for one matrix.
            let batches = match (n <= 8, fast) {
                (true, true) => (Just(1usize), 2usize..=3, Just(1usize)).boxed(),
                (true, false) => (1usize..=2, 2usize..=3, 1usize..=2).boxed(),
                (false, true) => Just((1usize, 1usize, 1usize)).boxed(),
                (false, false) => prop_oneof![
                    3 => Just((1usize, 1usize, 1usize)),
                    1 => (1usize..=2, 1usize..=3, 1usize..=2)
                ]
                .boxed(),
            };
            // A gap after each of B's matrices, where there are several.
            let batches = batches.prop_flat_map(|(ne02, r2, ne03)| {
                let pad = if ne02 * r2 * ne03 > 1 {
                    gap_strategy()
                } else {
                    Just(0usize).boxed()
                };
                (Just(ne02), Just(r2), Just(ne03), pad)
            });
            (
                Just((a_in, b_in, fast, split, n)),
                pad_strategy(pad),
                batches,
            )
        })
        .prop_flat_map(
            move |((a_in, b_in, fast, split, n), b_row_pad, (ne02, r2, ne03, b_batch_pad))| {
                let columns = n * ne02 * r2 * ne03;
                let block = a_in.block_len();
                // cm2 rounds a forced split's K to whole 256·split_k (below).
                let cm2_split = match (cm2, split) {
                    (true, Some(s)) => Some(if s.min(4) == 3 { 2 } else { s.min(4) as usize }),
                    _ => None,
                };
                let unit = match cm2_split {
                    Some(s) => 256 * s,
                    None if fast => 256,
                    None => block,
                };
                // M first, leaving room for at least one unit of K within the product budget
                // (M, not K, shrinks first: a tile mostly empty in M would cost the GPU far more
                // than the products it computes).
                // A float K of a cm2 split keeps a remainder of up to split_k − 1 (below).
                let rest = match cm2_split {
                    Some(s) if block == 1 => s - 1,
                    _ => 0,
                };
                let m_cap = (budget / (columns * (unit + rest))).max(1);
                let m = if fast {
                    prop_oneof![2 => 128usize..=136, 1 => 250usize..=260].boxed()
                } else {
                    edge_strategy(1)
                };
                (
                    Just((a_in, b_in, split, n, b_row_pad, (ne02, r2, ne03, b_batch_pad), fast)),
                    Just((columns, unit, cm2_split, rest)),
                    m.prop_map(move |m| m.min(m_cap)),
                )
            },
        )
        .prop_flat_map(move |(fixed, (columns, unit, cm2_split, rest), m)| {
            let (a_in, fast) = (fixed.0, fixed.6);
            // K within what the budget leaves, in whole units.
            let k_cap = ((budget / (m * columns)).saturating_sub(rest) / unit * unit).max(unit);
            let k = if cm2 {
                cm2_k_strategy(a_in)
            } else {
                k_strategy(a_in)
            };
            let k = match cm2_split {
                // cm2 halves a split until each split's K is a whole number of 256s (§8.3):
                // make that hold for the split asked for, and for float A leave a remainder
                // (K mod split_k, drawn) so that k_split = ⌈K/split_k⌉ is ragged.
                Some(_) => (k, 0..=rest)
                    .prop_map(move |(k, r)| k.min(4 * unit).min(k_cap).div_ceil(unit) * unit + r)
                    .boxed(),
                None if fast => k
                    .prop_map(move |k| (k.div_ceil(256) * 256).min(k_cap))
                    .boxed(),
                None => k.prop_map(move |k| k.min(k_cap)).boxed(),
            };
            (Just((fixed, m)), k)
        });
    // Order matters for shrinking (proptest shrinks a tuple's members in order): the data
    // distributions settle on their simplest arms first, the shape apart from them, the seed
    // last.
    (
        Blocks::ieee_strategy(),
        Dist::ieee_strategy(),
        shape,
        prec_strategy(a, acc16),
        any::<u64>(),
        scale,
    )
        .prop_map(
            move |(
                a_blocks,
                b_dist,
                (((a_type, b_type, force_split_k, n, b_row_pad, (ne02, r2, ne03, b_batch_pad), _), m), k),
                prec,
                seed,
                scale_log2,
            )| MulMmCase {
                a_type,
                b_type,
                k,
                m,
                n,
                ne02,
                r2,
                ne03,
                b_row_pad,
                b_batch_pad,
                prec,
                force_split_k,
                a_blocks,
                b_dist,
                seed,
                cm2,
                cm1,
                scale_log2,
            },
        )
}

impl fmt::Display for MulMmCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}×{} K={} M={} N={} batches {}·{}×{} pad {}{} prec {:?} split {} A {:?} B {:?} seed {}{}",
            match self.mode() {
                Mode::Cm2 => "cm2 ",
                Mode::Cm1 => "cm1 ",
                _ => "",
            },
            self.a_type,
            self.b_type,
            self.k,
            self.m,
            self.n,
            self.ne02,
            self.r2,
            self.ne03,
            self.b_row_pad,
            gap_words(self.b_batch_pad),
            self.prec,
            self.force_split_k.map_or("-".into(), |s| s.to_string()),
            self.a_blocks,
            self.b_dist,
            self.seed,
            if self.scale_log2 != 0 {
                format!(" scale 2^{}", self.scale_log2)
            } else {
                String::new()
            }
        )
    }
}

impl CaseModel for MulMmCase {
    /// Cooperative matrices on the cm1 and cm2 paths, bf16 ones for a bf16 A there.
    fn extensions(&self) -> vkdiff_gpu::device::Extensions {
        super::coopmat_extensions(
            self.mode() == Mode::Cm1,
            self.mode() == Mode::Cm2,
            self.a_type,
        )
    }

    fn variant(&self) -> String {
        match runners::mul_mm::choose(
            self.mode(),
            self.a_type,
            self.b_type,
            self.b_row_pad == 0,
            self.prec,
        ) {
            Ok(s) => s.selection.name(false),
            Err(_) => format!("matmul_{}_{}", self.a_type, self.b_type),
        }
    }

    fn validate(&self) -> Result<(), String> {
        let a_ok = matches!(self.a_type, DType::F32 | DType::F16 | DType::Bf16)
            || QUANT_TYPES.contains(&self.a_type);
        if !a_ok {
            return Err(format!("matmul A may not be {}", self.a_type));
        }
        match self.b_type {
            DType::F32 | DType::F16 => {}
            DType::Bf16 if self.a_type == DType::Bf16 => {}
            b => return Err(format!("matmul B may not be {b} with a {} A", self.a_type)),
        }
        if self.k % self.a_type.block_len() != 0 {
            return Err(format!(
                "K = {} is not a multiple of {}'s block size {}",
                self.k,
                self.a_type,
                self.a_type.block_len()
            ));
        }
        if self.force_split_k.is_some_and(|s| s == 0) {
            return Err("force_split_k must be at least 1".into());
        }
        super::check_sizes(
            "A",
            &[
                ("K", self.k),
                ("M", self.m),
                ("ne02", self.ne02),
                ("ne03", self.ne03),
            ],
        )?;
        super::check_sizes(
            "B",
            &[
                ("K + pad", self.k.saturating_add(self.b_row_pad)),
                ("N", self.n),
                ("batch pad", self.b_batch_pad.max(1)),
                ("ne02", self.ne02),
                ("r2", self.r2),
                ("ne03", self.ne03),
            ],
        )?;
        super::check_sizes(
            "dst",
            &[
                ("M", self.m),
                ("N", self.n),
                ("ne02", self.ne02),
                ("r2", self.r2),
                ("ne03", self.ne03),
            ],
        )
    }

    fn evaluate(&self, ctx: &mut Ctx) -> Outcome {
        if let Some(skip) = super::later_type_skip(ctx, self.a_type) {
            return skip;
        }
        let (a, b) = match self.inputs() {
            Ok(x) => x,
            Err(e) => return Outcome::Skip(format!("invalid case: {e}")),
        };
        let mode = mode_on(self.cm1, self.cm2, ctx.caps());
        let plan = match runners::mul_mm::plan(
            ctx.caps(),
            mode,
            &a,
            &b,
            self.prec,
            // A host that chooses its own split: judge with the host model's choice.
            if ctx.latitude().splits {
                None
            } else {
                self.force_split_k
            },
        ) {
            Ok(p) => p,
            Err(reason) => return Outcome::Skip(format!("precondition: {reason}")),
        };
        // The reference and the bounds of these inputs on this plan: kept across a bench
        // row's evaluations (the same inputs each round).
        let lat = ctx.latitude();
        let ctx_int_dot = (lat.later_host, ctx.caps().integer_dot);
        let key = || {
            format!("mul_mm {self} {mode:?} {lat:?} plan {plan:?} int dot {ctx_int_dot:?}")
        };
        let judged = crate::model::cases::data::kept(key, || -> Result<_, Box<Outcome>> {
            let want = match mul_mat::mul_mat(&a, &b) {
                Ok(w) => w,
                Err(e) => return Err(Box::new(Outcome::Skip(format!("ggml rejects the shapes: {e}")))),
            };
            let (a_rows, b_rows) = match (a.rows(), b.rows()) {
                (Ok(x), Ok(y)) => (x, y),
                (Err(e), _) | (_, Err(e)) => return Err(Box::new(Outcome::Error(e.to_string()))),
            };
            let columns = super::batched_columns(self.n, self.ne02, self.r2, self.ne03, self.m);
            // A host that chooses its own split: the loosest of the candidates.
            let mut splits = vec![(plan.split_k, plan.k_split)];
            if lat.splits {
                splits.extend(bounds::split_candidates(self.k));
            }
            // ggml's integer-dot matmul (MMQ), where the host may take it: B quantized to q8_1.
            let mut int_dot: Option<Vec<(f64, f64)>> = None;
            for p in self.int_dot_plans(ctx_int_dot, mode, &splits) {
                let c = match super::intdot::mat_candidate(&a, &b_rows, &columns, p) {
                    Ok(c) => c,
                    Err(e) => return Err(Box::new(Outcome::Error(e.to_string()))),
                };
                int_dot = Some(match int_dot {
                    None => c,
                    Some(prev) => prev
                        .into_iter()
                        .zip(c)
                        .map(|(x, y)| super::intdot::hull(x, y))
                        .collect(),
                });
            }
            let mut candidates = Vec::new();
            for (split_k, k_split) in splits {
                let arith = arith_of(&plan.staging, self.a_type, split_k, k_split);
                candidates.push(match mode {
                    Mode::Cm2 => {
                        let bk = plan.dispatch.spec[3] as usize;
                        match cm2_bounds(&a, &b, &plan.staging, bk, split_k, k_split, &columns) {
                            Ok(b) => b,
                            Err(e) => return Err(Box::new(Outcome::Error(e))),
                        }
                    }
                    Mode::Cm1 => {
                        let tk = plan.dispatch.spec[9] as usize;
                        cm1_bounds(&arith, tk, self.k, self.m, &a_rows, &b_rows, &columns)
                    }
                    Mode::Fp16 | Mode::Fp32 => {
                        crate::model::cases::mul_mm::bounds::mul_mm_bounds(&arith, self.k, self.m, &a_rows, &b_rows, &columns)
                    }
                });
            }
            let mut bounds = crate::model::cases::mul_mm::bounds::loosest_mm(candidates);
            // MXFP4's flushable scales (f16 accumulators' unit: the larger).
            if let Err(e) = super::mxfp4::add_mat_mat_terms(
                &mut bounds.bounds, &a, &b_rows, self.k, self.m, &columns, Fp::F16.unit(),
            ) {
                return Err(Box::new(Outcome::Error(e)));
            }
            // NaN and ±∞: IEEE propagation through the operands as staged (block formats: see
            // `dot_special`).
            let arith = arith_of(&plan.staging, self.a_type, plan.split_k, plan.k_split);
            let a_special = match mode {
                Mode::Cm2 => match cm2_special_operands(&a, &b, &plan.staging, &a_rows) {
                    Ok(v) => std::borrow::Cow::Owned(v),
                    Err(e) => return Err(Box::new(Outcome::Error(e))),
                },
                _ => std::borrow::Cow::Borrowed(&a_rows[..]),
            };
            let specials = tolerance::mul_mat_specials(
                &a_special,
                &b_rows,
                self.k,
                self.m,
                &columns,
                (arith.a_operand, arith.b_operand, arith.acc),
                !self.a_type.is_quantized(),
            );
            Ok((want, bounds, specials, int_dot))
        });
        let (want, bounds, specials, int_dot) = match judged {
            Ok(x) => x,
            Err(outcome) => return *outcome,
        };
        let op = GraphOp::MulMat {
            a: &a,
            b: &b,
            prec_f32: self.prec == Prec::F32,
        };
        let run = match ctx.run_op(want.ne, &op, |gpu, tree| {
            runners::mul_mm::run(
                gpu,
                tree,
                &MulMmRun {
                    a: &a,
                    b: &b,
                    mode,
                    prec: self.prec,
                    force_split_k: self.force_split_k,
                },
            )
        }) {
            Ok(r) => r,
            Err(outcome) => return outcome,
        };
        judge_with(&run, &want, &bounds, Some(&specials), int_dot.as_deref())
    }

    fn forced(&self, caps: &DeviceCaps) -> Vec<String> {
        let mut forced = Vec::new();
        if let Some(s) = self.force_split_k.filter(|&s| s > 1) {
            match self.split_reachable(caps) {
                Ok(true) => {}
                Ok(false) => forced.push(format!(
                    "split_k {s} forced where the host would not split this way (it splits only for K ≥ 2048 with fewer tiles than half the cores)"
                )),
                Err(e) => forced.push(format!("split_k {s} forced: {e}")),
            }
        }
        forced
    }

    fn path(&self) -> String {
        mm_path(mode_of(self.cm1, self.cm2))
    }

    fn axes(&self) -> [&'static str; 4] {
        ["rows", "columns", "batches", "batches3"]
    }

    fn triggers(&self) -> Vec<String> {
        if self.force_split_k.is_some_and(|s| s > 1) {
            vec!["split".into()]
        } else {
            Vec::new()
        }
    }

    fn facts(&self) -> Vec<String> {
        let mut f = vec![
            k_fact(self.k, self.a_type.block_len()),
            rows(self.m),
            format!("N {}", bucket(self.n)),
            prec_fact(self.prec),
        ];
        if self.ne02 * self.r2 * self.ne03 > 1 {
            f.push(
                if self.r2 > 1 {
                    "broadcast batches"
                } else {
                    "batches"
                }
                .into(),
            );
        }
        if self.b_row_pad > 0 {
            f.push("padded B rows".into());
        }
        if self.b_batch_pad > 0 {
            f.push(B_GAPS_FACT.into());
        }
        // The host's dequant (cpy) shaders run before the matmul: their bugs show here.
        if runners::mul_mm::choose(
            self.mode(),
            self.a_type,
            self.b_type,
            self.b_row_pad == 0,
            self.prec,
        )
        .is_ok_and(|s| s.a_to_f16)
        {
            f.push("A converted to f16 first".into());
        }
        if let Some((s, ragged)) = self.split() {
            f.push(format!(
                "split_k {s}{}",
                if ragged {
                    ", K/split not a multiple of 32"
                } else {
                    ""
                }
            ));
        }
        f
    }

    fn cause(&self, facts: &mut Vec<String>) {
        if let Some((_, true)) = self.split() {
            for w in facts.iter_mut().filter(|w| *w == "split") {
                *w = RAGGED.into();
            }
        }
    }

    fn dims(&self) -> Vec<(&'static str, usize)> {
        vec![("K", self.k), ("M", self.m), ("N", self.n)]
    }

    fn work(&self) -> Option<Work> {
        let batches = (self.ne02 * self.r2 * self.ne03) as f64;
        let a = (self.a_type.row_bytes(self.k).ok()? * self.m * self.ne02 * self.ne03) as f64;
        let b = (self.b_type.row_bytes(self.k).ok()? * self.n) as f64 * batches;
        Some(Work {
            bytes: a + b + (4 * self.m * self.n) as f64 * batches,
            flops: 2.0 * (self.k * self.m * self.n) as f64 * batches,
        })
    }
}

impl MulMmCase {
    /// A forced split_k (2 or 4) and whether a split is not whole 32-key steps.
    fn split(&self) -> Option<(usize, bool)> {
        let s = self.force_split_k.filter(|&s| s > 1)?;
        let s = if s >= 4 { 4 } else { 2 };
        Some((s, self.k.div_ceil(s) % 32 != 0))
    }

    /// Whether the pinned host, with this device's core count, would split K exactly as the
    /// forced split does (§8.3).
    fn split_reachable(&self, caps: &DeviceCaps) -> Result<bool, String> {
        use vkdiff_gpu::runners::mul_mm::plan;
        let Some(cores) = host_cores(caps) else {
            return Err(NO_CORES.into());
        };
        let (a, b) = self.inputs()?;
        let mode = mode_of(self.cm1, self.cm2);
        let forced = plan(caps, mode, &a, &b, self.prec, self.force_split_k)?;
        if forced.split_k <= 1 {
            return Ok(true);
        }
        let tile = plan(caps, mode, &a, &b, self.prec, None)?;
        let (bm, bn) = (
            tile.dispatch.spec[1] as usize,
            tile.dispatch.spec[2] as usize,
        );
        let tiles = self.m.div_ceil(bm) * self.n.div_ceil(bn);
        let mut natural = 1;
        if self.m >= bm && self.n >= bn && self.k >= 2048 && tiles < cores as usize / 2 {
            natural = match (cores as usize / tiles).min(4) {
                3 => 2,
                s => s,
            };
            while self.cm2 && natural > 1 && (self.k / natural) % 256 != 0 {
                natural /= 2;
            }
        }
        Ok(natural == forced.split_k)
    }
}

/// The arithmetic the kernel performs for a plan (see [`crate::model::cases::mul_mm::bounds::mul_mm_bounds`]): `a_in` is
/// A's type before staging.
pub fn arith_of(staging: &Staging, a_in: DType, split_k: usize, k_split: usize) -> MulMmArith {
    let sel = staging.selection;
    let a_operand = if sel.f16_operands() || staging.a_to_f16 {
        Fp::F16
    } else if sel.a == DType::Bf16 {
        Fp::Bf16
    } else {
        Fp::F32
    };
    let b_operand = match staging.b_to {
        Some(DType::Bf16) => Fp::Bf16,
        Some(_) => Fp::F16,
        None if sel.f16_operands() => Fp::F16,
        None if sel.b == DType::Bf16 => Fp::Bf16,
        None => Fp::F32,
    };
    MulMmArith {
        a_min_rounding: matches!(
            a_in,
            DType::Q4_1 | DType::Q5_1 | DType::Q2_K | DType::Q4_K | DType::Q5_K
        ),
        a_operand,
        b_operand,
        acc: if sel.acc16 { Fp::F16 } else { Fp::F32 },
        split_k,
        k_split,
    }
}

/// A float tensor with every value multiplied by 2^e (exact: a power of two), or unchanged.
pub fn scaled(t: Tensor, e: i32) -> Result<Tensor, String> {
    if e == 0 || t.dtype().is_quantized() {
        return Ok(t);
    }
    let f = 2f64.powi(e);
    let v: Vec<f32> = t
        .rows()
        .map_err(|e| e.to_string())?
        .iter()
        .map(|&x| (x * f) as f32)
        .collect();
    let dense = Tensor::from_f32(t.dtype(), t.ne(), &v).map_err(|e| e.to_string())?;
    // Keep the original strides (B may be a padded view): re-lay the rows.
    if dense.nb() == t.nb() {
        return Ok(dense);
    }
    let (ne, nb, es) = (t.ne(), t.nb(), t.dtype().block_bytes());
    let mut bytes = t.data().to_vec();
    let src = dense.data();
    let mut i = 0;
    for i3 in 0..ne[3] {
        for i2 in 0..ne[2] {
            for i1 in 0..ne[1] {
                let off = i3 * nb[3] + i2 * nb[2] + i1 * nb[1];
                bytes[off..off + ne[0] * es].copy_from_slice(&src[i..i + ne[0] * es]);
                i += ne[0] * es;
            }
        }
    }
    Tensor::new(t.dtype(), ne, nb, bytes).map_err(|e| e.to_string())
}

/// Per-element operand errors |operand − exact| as the cm2 kernel reads them (None: may be
/// ±∞): host-converted values exactly, quantized A by [`crate::model::cases::mul_mm::bounds_cm2::cm2_decode_error`], f16 /
/// bf16 data exact unless subnormal (may be flushed).
pub fn cm2_operand_errors(exact: &Tensor, staged: &Tensor) -> Result<Vec<Option<f64>>, String> {
    let x = exact.rows().map_err(|e| e.to_string())?;
    if staged.dtype().is_quantized() {
        let contiguous = staged.to_contiguous();
        let terms = crate::model::cases::mul_mm::bounds_cm2::cm2_decode_terms(staged.dtype(), contiguous.data())
            .ok_or_else(|| format!("no cm2 decoder model for {}", staged.dtype()))?;
        return Ok(terms
            .iter()
            .map(|t| match crate::model::cases::mul_mm::bounds_cm2::cm2_decode_error(staged.dtype(), t) {
                (e, false) => Some(e),
                _ => None,
            })
            .collect());
    }
    let fmt = if staged.dtype() == DType::Bf16 {
        Fp::Bf16
    } else {
        Fp::F16
    };
    let y = staged.rows().map_err(|e| e.to_string())?;
    Ok(x.iter()
        .zip(&y)
        .map(|(&x, &y)| {
            if !y.is_finite() && x.is_finite() {
                None
            } else {
                Some((y - x).abs() + fmt.flushing(y.abs(), y.abs()))
            }
        })
        .collect())
}

/// A's values for the NaN/±∞ judgement on the cm2 path. An exact zero that the f16 decode may
/// not reproduce (a cancellation d·sc·q − dmin·mn whose terms round: [`cm2_decode_error`] is not
/// 0 there) becomes `f64::MIN_POSITIVE`, a value that may be 0 or tiny of either sign, so that
/// `dot_special` leaves ±∞ times it undefined instead of expecting NaN. Seen on the H100: a q5_K
/// zero (d·13·4 − d·52) decoded to about −7·10⁻⁷ (d·13 rounded to f16, d·52 kept exact by an
/// fma), and −∞ times it gave +∞ (docs/mul-mm-cm2.md).
///
/// [`cm2_decode_error`]: crate::model::cases::mul_mm::bounds_cm2::cm2_decode_error
pub fn cm2_special_operands(
    a: &Tensor,
    b: &Tensor,
    staging: &Staging,
    a_rows: &[f64],
) -> Result<Vec<f64>, String> {
    let (sa, _) = runners::mul_mm::staged(a, b, staging).map_err(|e| e.to_string())?;
    Ok(uncertain_zeros(a_rows, &cm2_operand_errors(a, &sa)?))
}

/// [`cm2_special_operands`]' rule: a zero whose operand error is not 0 (or unbounded) may be
/// tiny of either sign.
pub fn uncertain_zeros(rows: &[f64], errors: &[Option<f64>]) -> Vec<f64> {
    rows.iter()
        .zip(errors)
        .map(|(&x, e)| match e {
            _ if x != 0.0 => x,
            Some(e) if *e == 0.0 => x,
            _ => f64::MIN_POSITIVE,
        })
        .collect()
}

/// The cm2 bounds of a plan (see [`crate::model::cases::mul_mm::bounds_cm2::mul_mm_cm2_bounds`]).
pub fn cm2_bounds(
    a: &Tensor,
    b: &Tensor,
    staging: &Staging,
    bk: usize,
    split_k: usize,
    k_split: usize,
    columns: &[(usize, usize)],
) -> Result<crate::model::cases::mul_mm::bounds::MulMmBounds, String> {
    let (sa, sb) = runners::mul_mm::staged(a, b, staging).map_err(|e| e.to_string())?;
    let ea = cm2_operand_errors(a, &sa)?;
    let eb = cm2_operand_errors(b, &sb)?;
    let (a_rows, b_rows) = (
        a.rows().map_err(|e| e.to_string())?,
        b.rows().map_err(|e| e.to_string())?,
    );
    let arith = crate::model::cases::mul_mm::bounds_cm2::Cm2Arith {
        acc: if staging.selection.acc16 {
            Fp::F16
        } else {
            Fp::F32
        },
        bk,
        split_k,
        k_split,
    };
    let [k, m, ..] = a.ne();
    Ok(crate::model::cases::mul_mm::bounds_cm2::mul_mm_cm2_bounds(
        &arith, k, m, &a_rows, &ea, &b_rows, &eb, columns,
    ))
}

/// The cm1 bounds of a plan: the operands as the scalar fp16 path stages them ([`arith_of`]:
/// A decoded in f32, then both rounded to FLOAT_TYPE) and the cm2 step model
/// ([`crate::model::cases::mul_mm::bounds_cm2::mul_mm_cm2_bounds`]) with one coopMatMulAdd per `tk` (= TK, 16) values of K,
/// steps from each split's start (the shader's order).
#[allow(clippy::too_many_arguments)]
pub fn cm1_bounds(
    arith: &MulMmArith,
    tk: usize,
    k: usize,
    m: usize,
    a_rows: &[f64],
    b_rows: &[f64],
    columns: &[(usize, usize)],
) -> crate::model::cases::mul_mm::bounds::MulMmBounds {
    let ea = crate::model::cases::mul_mm::bounds::staged_operand_errors(a_rows, arith.a_min_rounding, arith.a_operand);
    let eb = crate::model::cases::mul_mm::bounds::staged_operand_errors(b_rows, false, arith.b_operand);
    let steps = crate::model::cases::mul_mm::bounds_cm2::Cm2Arith {
        acc: arith.acc,
        bk: tk,
        split_k: arith.split_k,
        k_split: arith.k_split,
    };
    crate::model::cases::mul_mm::bounds_cm2::mul_mm_cm2_bounds(&steps, k, m, a_rows, &ea, b_rows, &eb, columns)
}

/// Judges a kernel's output: the reference, the bounds, overflow (see
/// [`crate::model::cases::mul_mm::bounds::MulMmBounds::judged_bounds`]), and per element the class of a NaN or ±∞
/// result ([`tolerance::Special`]; None: every non-finite expectation is undefined).
pub fn judge(
    run: &vkdiff_gpu::runners::KernelRun,
    want: &vkdiff_reference::ops::Output,
    bounds: &crate::model::cases::mul_mm::bounds::MulMmBounds,
    specials: Option<&[tolerance::Special]>,
) -> Outcome {
    judge_with(run, want, bounds, specials, None)
}

/// [`judge`], with an integer-dot candidate (centre, bound) per element joined to the float
/// path's ([`super::intdot::join_candidate`]).
pub fn judge_with(
    run: &vkdiff_gpu::runners::KernelRun,
    want: &vkdiff_reference::ops::Output,
    bounds: &crate::model::cases::mul_mm::bounds::MulMmBounds,
    specials: Option<&[tolerance::Special]>,
    int_dot: Option<&[(f64, f64)]>,
) -> Outcome {
    let mut judged = bounds.judged_bounds(&run.values);
    let mut expected = want.values.clone();
    match specials {
        Some(s) => tolerance::apply_specials(s, &mut expected, &mut judged),
        None => {
            crate::model::compare::undefined_where_non_finite(&expected, &mut judged);
        }
    }
    let float = int_dot.map(|_| (expected.clone(), judged.clone()));
    if let Some(c) = int_dot {
        super::intdot::join_candidate(&mut expected, &mut judged, c);
    }
    let mut verdict = match compare(
        &run.values,
        &expected,
        &judged,
        |i| want.index_of(i),
        |_| "",
    ) {
        Ok(v) => v,
        Err(e) => return Outcome::Error(e),
    };
    verdict.overrun = run.overrun;
    if let (Some(c), Some((e, b))) = (int_dot, float) {
        if verdict.passed() {
            verdict.fits = super::intdot::fit_of(&run.values, &e, &b, c);
        }
    }
    Outcome::from_verdict(verdict, run.gpu_ns)
}

impl MulMmCase {
    /// The case's path.
    pub fn mode(&self) -> Mode {
        mode_of(self.cm1, self.cm2)
    }

    /// The integer-dot candidate of this case, where a ggml host may take MMQ (`mul_mmq.comp`):
    /// a real host on a device with integer-dot acceleration (`(later_host, integer_dot)`), a
    /// scalar family (cm1's integer-dot matmul, `mul_mmq_cm1.comp`, is not modelled: a cm1
    /// case it ran would fail, not pass unjudged), an A type with an MMQ body, and B f32 and
    /// contiguous (ggml's conditions for quantizing B). The depth takes every split in `splits`.
    /// One plan per accumulator precision a host may use.
    fn int_dot_plans(
        &self,
        (later_host, integer_dot): (bool, bool),
        mode: Mode,
        splits: &[(usize, usize)],
    ) -> Vec<super::intdot::IntDotPlan> {
        use super::intdot::{int_dot_types, IntDotPath, IntDotPlan};
        let usable = later_host
            && integer_dot
            && matches!(mode, Mode::Fp32 | Mode::Fp16)
            && self.b_type == DType::F32
            // MMQ needs a contiguous B (ggml_is_contiguous): no padded rows, no gaps.
            && self.b_row_pad == 0
            && self.b_batch_pad == 0
            && int_dot_types(IntDotPath::Mmq).contains(&self.a_type);
        if !usable {
            return Vec::new();
        }
        let fp16 = mode == Mode::Fp16;
        let mut plans = vec![IntDotPlan::mmq(self.a_type, splits, fp16, false)];
        // The July 2025 tree's MMQ (legacy types) accumulates in f16 at GGML_PREC_DEFAULT on
        // fp16 devices; 0.1.161's has f32 accumulators only.
        let legacy = matches!(
            self.a_type,
            DType::Q4_0 | DType::Q4_1 | DType::Q5_0 | DType::Q5_1 | DType::Q8_0
        );
        if fp16 && legacy && self.prec == Prec::Default {
            plans.push(IntDotPlan::mmq(self.a_type, splits, fp16, true));
        }
        plans
    }



    /// A and B, regenerated from the seed. B's rows are `b_row_pad` elements apart beyond K,
    /// its matrices `b_batch_pad` elements apart beyond their rows.
    pub fn inputs(&self) -> Result<(Tensor, Tensor), String> {
        let ne12 = self.ne02 * self.r2;
        let a = tensor(
            self.a_type,
            [self.k, self.m, self.ne02, self.ne03],
            self.a_blocks,
            self.seed,
            0,
        );
        let b = b_tensor(
            self.b_type,
            [self.k, self.n, ne12, self.ne03],
            self.b_row_pad,
            self.b_batch_pad,
            self.b_dist,
            self.seed,
        )?;
        Ok((scaled(a, self.scale_log2)?, scaled(b, self.scale_log2)?))
    }

}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    use crate::model::cases::model_devices::{h100, lavapipe};

    /// The H100 case of docs/mul-mm-cm2.md, judged on the CPU: dst[29,117] (row 29 of A has a
    /// cancelled q5_K zero at k = 184, column 117 of B −∞ there) was expected NaN, the device's
    /// cm2 decode gave +∞; with the cm2 operands it is unjudged, and no other element's class
    /// changes.
    #[test]
    fn the_h100_q5_k_cancelled_zero_is_not_expected_nan() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/h100_q5k_cm2_cancelled_zero.json");
        // A reproducer file; only its case is needed here.
        let file: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let case: crate::model::cases::Case = serde_json::from_value(file["case"].clone()).unwrap();
        let crate::model::cases::Case::MulMm(c) = case else {
            panic!("not a mul_mm case")
        };
        let (a, b) = c.inputs().unwrap();
        let plan = runners::mul_mm::plan(&h100(), c.mode(), &a, &b, c.prec, None).unwrap();
        let (a_rows, b_rows) = (a.rows().unwrap(), b.rows().unwrap());
        let columns = crate::model::cases::batched_columns(c.n, c.ne02, c.r2, c.ne03, c.m);
        let arith = arith_of(&plan.staging, c.a_type, plan.split_k, plan.k_split);
        let formats = (arith.a_operand, arith.b_operand, arith.acc);
        let specials = |rows: &[f64]| {
            tolerance::mul_mat_specials(rows, &b_rows, c.k, c.m, &columns, formats, false)
        };
        let exact = specials(&a_rows);
        let cm2 = specials(&cm2_special_operands(&a, &b, &plan.staging, &a_rows).unwrap());
        let at = 117 * c.m + 29;
        assert_eq!(exact[at], tolerance::Special::Nan);
        assert_eq!(cm2[at], tolerance::Special::Undefined);
        let changed = exact.iter().zip(&cm2).filter(|(x, y)| x != y).count();
        assert!(changed >= 1 && changed < exact.len() / 100, "{changed} elements changed class");
    }

    #[test]
    fn large_cases_run_their_row_on_the_large_tile_past_the_split_threshold() {
        use runners::mul_mm::Tile;
        for (a, b, acc16, mode) in all_families(false) {
            let mut runner = TestRunner::deterministic();
            let name = family_name(a, b, acc16, false, mode);
            for _ in 0..4 {
                let c = large_strategy(a, b, acc16, mode)
                    .new_tree(&mut runner)
                    .unwrap()
                    .current();
                assert_eq!(c.validate(), Ok(()), "{c}");
                assert_eq!(c.variant(), name, "{c}");
                assert!(c.k >= 2048 && c.n > 128 && c.m > 128, "{c}");
                assert!(c.m * c.n * c.k <= 3 << 25, "{c}");
                let (ta, tb) = c.inputs().unwrap();
                let p = runners::mul_mm::plan(&h100(), mode, &ta, &tb, c.prec, c.force_split_k)
                    .unwrap_or_else(|e| panic!("{c}: {e}"));
                assert_eq!(p.staging.selection.name(false), name, "{c}");
                assert_eq!(p.dispatch.tile, Tile::L, "{c}");
            }
        }
    }

    #[test]
    fn every_case_of_a_row_runs_that_row() {
        let (mut ragged, mut reduced) = (0, [0usize; 2]);
        for (a, b, acc16, mode) in all_families(false) {
            // A stream per family: adding a family (cm1, the i-quants) shifts no other's cases.
            let mut runner = TestRunner::deterministic();
            let cm2 = mode == Mode::Cm2;
            let caps = if mode == Mode::Fp16 {
                lavapipe()
            } else {
                h100()
            };
            let name = family_name(a, b, acc16, false, mode);
            let (mut aligned, mut split) = (0, 0);
            for _ in 0..40 {
                let c = strategy(a, b, acc16, mode)
                    .new_tree(&mut runner)
                    .unwrap()
                    .current();
                assert_eq!(c.validate(), Ok(()), "{c}");
                assert_eq!(c.variant(), name, "{c}");
                let (ta, tb) = c.inputs().unwrap();
                let p = runners::mul_mm::plan(&caps, mode, &ta, &tb, c.prec, c.force_split_k)
                    .unwrap_or_else(|e| panic!("{c}: {e}"));
                assert_eq!(p.staging.selection.name(false), name, "{c}");
                let budget = if cm2 { CM2_PRODUCTS } else { PRODUCTS };
                assert!(
                    c.m * c.n * c.k * c.ne02 * c.r2 * c.ne03 <= budget.max(c.k * c.n * 4),
                    "{c}"
                );
                if cm2 {
                    // The fast path's reduced accumulators: a last column tile whose valid
                    // columns fit in BN/4 or BN/2 (spec constant 4 set, B staged).
                    let (bn, small) = (p.dispatch.spec[2] as usize, p.dispatch.spec[4] == 1);
                    let tail = c.n - (c.n - 1) / bn * bn;
                    if small && p.staging.b_to.is_some() && c.m >= p.dispatch.spec[1] as usize {
                        if tail <= bn / 4 {
                            reduced[0] += 1;
                        } else if tail <= bn / 2 {
                            reduced[1] += 1;
                        }
                    }
                }
                aligned += usize::from(p.dispatch.aligned);
                split += usize::from(p.split_k > 1);
                // §12 later-changed 6: an aligned split whose k_split is not a multiple of BK.
                ragged += usize::from(
                    p.dispatch.aligned
                        && p.split_k > 1
                        && p.k_split % p.dispatch.spec[3] as usize != 0,
                );
            }
            assert!(aligned >= 2, "{name}: {aligned} aligned cases of 40");
            assert!(split >= 2, "{name}: {split} split cases of 40");
        }
        assert!(ragged >= 1, "no aligned split with k_split % BK != 0");
        assert!(
            reduced[0] >= 20 && reduced[1] >= 20,
            "cm2 reduced-accumulator tiles (BN/4, BN/2): {reduced:?}"
        );
    }
}
