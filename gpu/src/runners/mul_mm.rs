//! Matrix-matrix MUL_MAT and MUL_MAT_ID (`mul_mm.comp` + `mul_mat_split_k_reduce.comp`, §6 and
//! §8 of docs/interface.md): upstream's host logic on **scalar devices** (no cooperative
//! matrices) — the mode (fp16 or fp32 arithmetic), the pipeline slot and its accumulator (§8.4),
//! the host's staging copies (§4.3), the shared-memory check that disables tiles (§8.1), the
//! tile and aligned choice (§8.2), split_k and its reduce (§8.3), and MUL_MAT_ID's token
//! chunking (§4.3, §8.5).
//!
//! **Staging copies.** The host makes B contiguous (and converts it to f16, or bf16 for a bf16
//! A) when it is not dim01-contiguous or when A is bf16 and B is not; it dequantizes a
//! quantized A to f16 when no pipeline takes (A type, B type) — on scalar devices that is every
//! quantized A with an f16 B. Upstream does both with its cpy and dequant shaders; they are not
//! the kernel under test, so here they are done on the host in Rust: B with round-to-nearest-even
//! conversions (ggml's `f32_to_f16` / `f32_to_bf16`), A with ggml's own f32 dequantization
//! followed by a round-to-nearest-even f16 conversion. (The `dequant_q2_k` … `dequant_q6_k`
//! shaders at the pinned commit convert only the first matrix of a batched A, §12 later-changed
//! 4; that bug is theirs and is not reproduced.)
//!
//! **split_k.** Upstream splits K only when it knows the shader core count (NVIDIA SM builtins,
//! AMD core properties); vkdiff probes neither, so — as on lavapipe — the natural choice never
//! splits. [`MulMmRun::force_split_k`] stands in for the core-count formula
//! (`cores / (m_tiles · n_tiles)`), for any shape: the rest of upstream's rule (at most 4, 3
//! becomes 2, k_split = ⌈K/split_k⌉ not rounded to BK) is applied to it.
//!
//! **MUL_MAT_ID chunks.** The host runs one dispatch per chunk of min(n_tokens, 4096/n_used)
//! tokens, on views of B, ids and dst that start at the chunk. Our jobs bind whole buffers, so
//! each chunk gets its own copies (one job per chunk). At the pinned commit those views keep
//! their parent's nb3, which `ggml_vk_dim01_contiguous` counts as non-contiguous whenever there
//! are several chunks, so B is copied to f16 and, for f32 and quantized experts, the host's
//! pipeline lookup then asserts (§12 item 17 with later-changed 5, fixed by llama.cpp PR
//! 14683). Contiguous per-chunk copies are what the host does after that fix, so every expert
//! type is tested on several chunks; this is a deliberate divergence from the pinned host.
//!
//! **Gaps between B's matrices.** A B whose rows are dense but whose matrices are not packed
//! back to back is dim01-contiguous, so the host binds it in place; the pinned host then passes
//! ne10·ne11 as its batch stride and reads every matrix after the first from the wrong place
//! (fixed upstream by llama.cpp PR 28956; docs/upstream-findings.md, F32). Our jobs bind a
//! packed copy instead: shader mode judges the kernels, and backend mode meets that host bug.
//!
//! **cm2 devices** (§7, §8): the kernel is `mul_mm_cm2.comp` ([`Mode::Cm2`]). The host converts
//! f32 A and f32 B to f16 first (§4.3: `qx_needs_dequant` / `y_non_contig` on cm2), so the
//! kernel only sees f16, bf16 or quantized A with an f16 (bf16) B; the tile table is §7.4's
//! (five spec constants, no shared-memory check), the size class is chosen by N alone (§8.2),
//! a forced split is halved while ⌊K/split_k⌋ mod 256 ≠ 0 (§8.3), and the pushed padded_N is
//! N rounded up to BN when B was staged — the staged buffer then has padded_N − N more rows,
//! filled with NaN here (upstream's scratch holds stale data there) so that a kernel reading
//! them into a stored column is caught. Quantized MUL_MAT_ID always runs the f32-accumulator
//! SPIR-V (§12 item 13).
//!
//! **cm1 devices** (§6, §8; KHR cooperative matrix without NV coopmat2, or an NVIDIA device
//! with GGML_VK_DISABLE_COOPMAT2): the kernel is `mul_mm.comp` with COOPMAT ([`Mode::Cm1`]),
//! compiled without -O, pipelines with full subgroups. The host logic is the scalar path's
//! (staging, split_k, MUL_MAT_ID chunks), with three differences: the tile table has
//! TM/TN/TK = 16/16/16 (the coopmat shape) for every size ([`cm1_spec_constants`]); the
//! shared-memory check counts rows of BK + 8 and the coopmat staging term
//! ([`available_tiles`]); f16 accumulators need the device's f16-accumulator shape, without it
//! the host falls back to the f32 ones (`coopmat_acc_f16_support`, §8.4). bf16 runs the cm1
//! SPIR-V only with bf16 cooperative matrices (otherwise upstream takes the scalar `_fp32`
//! one: not modelled, refused).
//!
//! **Which path.** The mode is the caller's choice ([`MulMmRun::mode`]): a device runs the
//! scalar fp16 path as upstream does with GGML_VK_DISABLE_COOPMAT(2) set, the cm1 path when it
//! has KHR cooperative matrices (on a cm2 device as with GGML_VK_DISABLE_COOPMAT2), or the cm2
//! path when it has NV cooperative matrix 2 ([`device_supports`]). Vendor tweaks (AMD/Intel
//! disabling the large tile, Apple keeping only the medium one, AMD GCN's medium quant tile)
//! are not modelled: the tables are those of every other vendor.

use serde::{Deserialize, Serialize};
use vkdiff_reference::formats::{dequantize_f32, float};
use vkdiff_reference::ops::{mul_mat, mul_mat_id};
use vkdiff_reference::tensor::Tensor;
use vkdiff_reference::DType;

use super::{mul_mat_vec::type_name, workgroups, KernelRun};
use crate::caps::DeviceCaps;
use crate::compile::{ShaderTree, ShaderVariant};
use crate::context::{Gpu, PipelineDesc};
use crate::error::{GpuError, Result};

/// Entries of the shaders' row_ids array: the most (slot, token) pairs one MUL_MAT_ID dispatch
/// may hold, and the most expert slots (`supports_op`).
pub const ROW_IDS: usize = 4096;

/// ggml's precision request for the op (`dst->op_params[0]`, §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Prec {
    /// `GGML_PREC_DEFAULT`: f16 accumulators where a pipeline has them.
    Default,
    /// `GGML_PREC_F32`: f32 accumulators.
    F32,
}

/// The matrix-matrix path and its arithmetic mode (§6.1, §7.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Scalar `mul_mm.comp` without shaderFloat16: `_fp32` variants, float everywhere.
    Fp32,
    /// Scalar `mul_mm.comp` with shaderFloat16: operands staged as float16_t, optional f16
    /// accumulators.
    Fp16,
    /// `mul_mm.comp` with COOPMAT (KHR cooperative matrix, subgroup scope): `_cm1` variants,
    /// operands staged as float16_t (bfloat16_t for bf16), optional f16 accumulators.
    Cm1,
    /// `mul_mm_cm2.comp` (NV cooperative matrix 2): `_cm2` variants.
    Cm2,
}

impl Mode {
    /// The scalar mode upstream uses on `caps` with cooperative matrices disabled
    /// (`device->fp16`).
    pub fn of(caps: &DeviceCaps) -> Mode {
        if caps.fp16 {
            Mode::Fp16
        } else {
            Mode::Fp32
        }
    }
}

/// The cm1 coopmat shape (TM, TN, TK): upstream takes the first f16 shape the driver reports;
/// vkdiff requires (and uses) 16×16×16, which every KHR-coopmat GPU upstream enables has.
pub const CM1_SHAPE: u32 = 16;

/// Whether the device has the subgroup-scope 16×16×16 f16×f16 shape accumulating in f16
/// (`f16acc`) or f32 (upstream's `coopmat_acc_f16_support` / `coopmat_acc_f32_support`).
pub fn cm1_shape(caps: &DeviceCaps, f16acc: bool) -> bool {
    super::flash_attn::has_16x16x16(caps, !f16acc)
}

/// Why `caps` cannot run the path `mode`, if it cannot: cm2 needs VK_NV_cooperative_matrix2
/// (with the features of §1.5); cm1 VK_KHR_cooperative_matrix with the 16×16×16 f16 → f32
/// shape, shaderFloat16 and computeFullSubgroups (its pipelines require full subgroups, and
/// the shader takes a warp to be a subgroup); the scalar fp16 path shaderFloat16 (a device
/// runs the scalar path as upstream does with cooperative matrices disabled).
pub fn device_supports(caps: &DeviceCaps, mode: Mode) -> std::result::Result<(), String> {
    match mode {
        Mode::Cm1 if !caps.coopmat => Err(format!(
            "{} device: no VK_KHR_cooperative_matrix with cooperativeMatrix",
            caps.class()
        )),
        Mode::Cm1 if !cm1_shape(caps, false) => Err(
            "no subgroup-scope 16x16x16 f16×f16 → f32 cooperative-matrix shape (cm1 matmul)".into(),
        ),
        Mode::Cm1 if !caps.fp16 => Err("no shaderFloat16 (cm1 matmul is an fp16 mode)".into()),
        Mode::Cm1 if !caps.full_subgroups => Err(
            "no computeFullSubgroups (subgroup size control: cm1 matmul pipelines require full subgroups)"
                .into(),
        ),
        Mode::Cm2 if !caps.coopmat2 => Err(format!(
            "{} device: no VK_NV_cooperative_matrix2 (with the seven features and bufferDeviceAddress)",
            caps.class()
        )),
        Mode::Fp16 if !caps.fp16 => Err("no shaderFloat16 for the scalar fp16 path".into()),
        Mode::Fp32 if caps.fp16 => Err(
            "the device has shaderFloat16: upstream runs the fp16 variants, not `_fp32`".into(),
        ),
        _ => Ok(()),
    }
}

/// Tile size classes (§6.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tile {
    /// Small: 32 × 32.
    S,
    /// Medium: 64 × 64.
    M,
    /// Large: 128 × 128.
    L,
}

/// cm2 specialization constants {BLOCK_SIZE, BM, BN, BK, enable_smaller_matrices} of §7.4 for
/// kernel A type `a` (f16/bf16: `warptile`; quantized MUL_MAT: `warptile_mmq`, or
/// `warptile_mmq_k` for q2_K … q6_K; quantized MUL_MAT_ID: `warptile_mmqid`). The wg_denoms
/// are (BM, BN, 1).
pub fn cm2_spec_constants(a: DType, id: bool, tile: Tile) -> [u32; 5] {
    let k_quant = matches!(
        a,
        DType::Q2_K | DType::Q3_K | DType::Q4_K | DType::Q5_K | DType::Q6_K
    );
    match (a.is_quantized(), id, k_quant, tile) {
        (false, _, _, Tile::L) => [256, 128, 256, 64, 1],
        (false, _, _, Tile::M) => [256, 128, 128, 64, 0],
        (false, _, _, Tile::S) => [128, 64, 64, 64, 0],
        (true, true, _, _) => [256, 128, 64, 16, 0],
        (true, false, false, Tile::L) => [256, 128, 256, 64, 1],
        (true, false, false, Tile::M) => [256, 128, 128, 64, 1],
        (true, false, false, Tile::S) => [256, 32, 64, 128, 0],
        (true, false, true, Tile::L) => [256, 64, 128, 64, 1],
        (true, false, true, Tile::M) => [256, 32, 64, 64, 0],
        (true, false, true, Tile::S) => [256, 32, 32, 128, 0],
    }
}

/// `ggml_vk_guess_matmul_pipeline` on cm2 (§8.2), every tile available: large when n exceeds
/// the medium tile's BN, medium when it exceeds the small one's, else small (M plays no part).
pub fn cm2_choose_tile(a: DType, id: bool, n: usize) -> Tile {
    let bn = |t| cm2_spec_constants(a, id, t)[2] as usize;
    if n > bn(Tile::M) {
        Tile::L
    } else if n > bn(Tile::S) {
        Tile::M
    } else {
        Tile::S
    }
}

impl Tile {
    /// The K alignment of the size class's aligned pipeline (§8.2).
    pub fn align(self) -> usize {
        match self {
            Tile::S => 32,
            Tile::M => 64,
            Tile::L => 128,
        }
    }
}

/// The SPIR-V family the host selects: the types the kernel reads (after staging), the mode,
/// the accumulator, and whether it is the ID kernel. The aligned twin is chosen per dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Selection {
    /// Arithmetic mode.
    pub mode: Mode,
    /// A's type as the kernel reads it.
    pub a: DType,
    /// B's type as the kernel reads it (f32, f16, or bf16 with a bf16 A).
    pub b: DType,
    /// f16 accumulators (the `_f16acc` variants).
    pub acc16: bool,
    /// MUL_MAT_ID.
    pub id: bool,
}

impl Selection {
    /// Base name of §6.1's table: `f32_f32`, `f32_f16`, `f16`, `f16_f32`, `bf16`, `<q>_f32`,
    /// `<q>_f16`.
    pub fn base_name(&self) -> String {
        match (self.a, self.b) {
            (DType::F16, DType::F16) => "f16".into(),
            (DType::Bf16, _) => "bf16".into(),
            (a, b) => format!("{}_{}", type_name(a), b.name()),
        }
    }

    /// The SPIR-V name (§1.1's suffix rule), e.g. `matmul_q4_0_f32_aligned_f16acc`,
    /// `matmul_id_f16_f32`, `matmul_f16_fp32`.
    pub fn name(&self, aligned: bool) -> String {
        format!(
            "matmul{}_{}{}{}{}",
            if self.id { "_id" } else { "" },
            self.base_name(),
            if aligned { "_aligned" } else { "" },
            if self.acc16 { "_f16acc" } else { "" },
            match self.mode {
                Mode::Fp32 => "_fp32",
                Mode::Fp16 => "",
                Mode::Cm1 => "_cm1",
                Mode::Cm2 => "_cm2",
            }
        )
    }

    /// Whether the kernel stages A and B as float16_t (fp16 and coopmat modes, except bf16
    /// which stays in float, resp. bfloat16_t).
    pub fn f16_operands(&self) -> bool {
        self.mode != Mode::Fp32 && self.a != DType::Bf16
    }

    /// The variant with its defines (§6.1, §7.1).
    pub fn variant(&self, aligned: bool) -> ShaderVariant {
        if self.mode == Mode::Cm2 {
            return self.cm2_variant(aligned);
        }
        // cm1 takes the fp16 mode's defines, plus COOPMAT and bfloat16_t staging for bf16.
        let cm1 = self.mode == Mode::Cm1;
        let fp16 = self.mode != Mode::Fp32;
        // The mode's aligned load width.
        let l = if fp16 { "8" } else { "4" };
        let mut d: Vec<(String, String)> = Vec::new();
        let mut push = |k: &str, v: &str| d.push((k.to_string(), v.to_string()));
        if fp16 {
            push("FLOAT16", "1");
        }
        if cm1 {
            push("COOPMAT", "1");
        }
        push("ACC_TYPE", if self.acc16 { "float16_t" } else { "float" });
        let bf16 = self.a == DType::Bf16;
        push(
            "FLOAT_TYPE",
            match (cm1, fp16 && !bf16) {
                (true, false) => "bfloat16_t",
                (_, true) => "float16_t",
                (false, false) => "float",
            },
        );
        push(
            "FLOAT_TYPE_VEC2",
            if cm1 || (fp16 && !bf16) {
                "f16vec2"
            } else {
                "vec2"
            },
        );
        if self.id {
            push("MUL_MAT_ID", "1");
        }
        push(&format!("DATA_A_{}", type_name(self.a).to_uppercase()), "1");
        let b_type = match (self.b, aligned, fp16) {
            (DType::Bf16, false, _) => "uint16_t",
            (DType::Bf16, true, _) => "u16vec4",
            (DType::F16, false, _) => "float16_t",
            (DType::F16, true, true) => "f16mat2x4",
            (DType::F16, true, false) => "f16vec4",
            (_, false, _) => "float",
            (_, true, true) => "mat2x4",
            (_, true, false) => "vec4",
        };
        push("B_TYPE", b_type);
        push("D_TYPE", "float");
        if bf16 {
            push("LOAD_VEC_A", if aligned { "4" } else { "1" });
            if aligned {
                push("LOAD_VEC_B", "4");
            }
            push("B_IS_FLOAT", "1");
            push(
                "TO_FLOAT_TYPE",
                if cm1 {
                    "uintBitsToBFloat16EXT"
                } else {
                    "bf16_to_fp32"
                },
            );
        } else if self.a.is_quantized() {
            push("LOAD_VEC_A", &quant_load_vec(self.a).to_string());
            if aligned {
                push("LOAD_VEC_B", l);
            }
        } else if aligned {
            push("LOAD_VEC_A", l);
            push("LOAD_VEC_B", l);
        } else if self.b == DType::F32 {
            // f32_f32 and f16_f32 name LOAD_VEC_A = 1; f32_f16 and f16 leave it undefined.
            push("LOAD_VEC_A", "1");
        }
        if aligned {
            push("ALIGNED", "1");
        }
        let refs: Vec<(&str, &str)> = d.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let mut v = ShaderVariant::new(self.name(aligned), "mul_mm.comp", &refs);
        // §1.1: the coopmat1 variants are compiled without -O.
        v.optimize = !cm1;
        v
    }

    /// A `mul_mm_cm2.comp` variant (§7.1): vulkan1.3, LOAD_VEC 1, B float16_t (bfloat16_t
    /// for bf16).
    fn cm2_variant(&self, aligned: bool) -> ShaderVariant {
        let bf16 = self.a == DType::Bf16;
        let mut d: Vec<(String, String)> = Vec::new();
        let mut push = |k: &str, v: &str| d.push((k.to_string(), v.to_string()));
        push("FLOAT16", "1");
        push("ACC_TYPE", if self.acc16 { "float16_t" } else { "float" });
        push("FLOAT_TYPE", if bf16 { "bfloat16_t" } else { "float16_t" });
        push("FLOAT_TYPE_VEC2", "f16vec2");
        if self.id {
            push("MUL_MAT_ID", "1");
        }
        push(&format!("DATA_A_{}", type_name(self.a).to_uppercase()), "1");
        push("B_TYPE", if bf16 { "bfloat16_t" } else { "float16_t" });
        push("D_TYPE", "float");
        if bf16 {
            push("LOAD_VEC_A", "1");
            if aligned {
                push("LOAD_VEC_B", "4");
            }
            push("B_IS_FLOAT", "1");
            push("TO_FLOAT_TYPE", "uintBitsToBFloat16EXT");
        } else if aligned {
            push("LOAD_VEC_A", "1");
            push("LOAD_VEC_B", "1");
        } else if self.a.is_quantized() {
            push("LOAD_VEC_A", "1");
        }
        if aligned {
            push("ALIGNED", "1");
        }
        let refs: Vec<(&str, &str)> = d.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let mut v = ShaderVariant::new(self.name(aligned), "mul_mm_cm2.comp", &refs);
        v.target = crate::compile::TargetEnv::Vulkan13;
        v
    }
}

/// The pipeline families a cm2 device selects (§8.4), as (kernel A, kernel B, f16
/// accumulator), for the quantized types `quants`: f16 × f16 with either accumulator
/// (f32 A and f32 B arrive here converted), quantized × f16 with either accumulator (MUL_MAT)
/// or the f32 one (MUL_MAT_ID, §12 item 13), and bf16 × bf16 (f32 accumulator).
pub fn cm2_families(quants: &[DType], id: bool) -> Vec<(DType, DType, bool)> {
    let mut v = vec![
        (DType::F16, DType::F16, false),
        (DType::F16, DType::F16, true),
        (DType::Bf16, DType::Bf16, false),
    ];
    for &q in quants {
        v.push((q, DType::F16, false));
        if !id {
            v.push((q, DType::F16, true));
        }
    }
    v
}

/// LOAD_VEC_A of the quantized variants (§6.1).
pub fn quant_load_vec(a: DType) -> u32 {
    match a {
        DType::Q4_0 | DType::Q4_1 => 8,
        DType::Q5_0 | DType::Q5_1 | DType::Q8_0 | DType::Iq4Nl => 4,
        _ => 2,
    }
}

/// The split-k reduce (`split_k_reduce`).
pub fn reduce_variant() -> ShaderVariant {
    ShaderVariant::new("split_k_reduce", "mul_mat_split_k_reduce.comp", &[])
}

/// Specialization constants {BLOCK_SIZE, BM, BN, BK, WM, WN, WMITER, TM, TN, TK, WARP} of a
/// scalar device (§6.4): `warptile` for float A, `warptile_mmq` (BK 32, small tile with sg32
/// invocations) for quantized A, with sg8/sg16/sg32 = max(subgroup size, 8/16/32).
pub fn spec_constants(caps: &DeviceCaps, quant: bool, tile: Tile) -> [u32; 11] {
    let sg = caps.subgroup_size.max(1);
    let (sg8, sg16, sg32) = (sg.max(8), sg.max(16), sg.max(32));
    let bk = if quant { 32 } else { 16 };
    match tile {
        Tile::L => [128, 128, 128, bk, 2 * sg8, 64, 2, 4, 4, 1, sg8],
        Tile::M => [128, 64, 64, bk, sg8, 32, 2, 4, 2, 1, sg8],
        Tile::S => [
            if quant { sg32 } else { sg16 },
            32,
            32,
            bk,
            32,
            32,
            2,
            2,
            2,
            1,
            sg8,
        ],
    }
}

/// Specialization constants of a cm1 device (§6.4): the scalar table with TM/TN/TK = the
/// coopmat shape (16/16/16) for every size.
pub fn cm1_spec_constants(caps: &DeviceCaps, quant: bool, tile: Tile) -> [u32; 11] {
    let mut s = spec_constants(caps, quant, tile);
    s[7..10].copy_from_slice(&[CM1_SHAPE; 3]);
    s
}

/// Bytes of upstream's per-type lookup table in shared memory (§8.1's LUT term).
fn lut_bytes(a: DType) -> u32 {
    match a {
        DType::Iq1S | DType::Iq1M | DType::Iq2Xs => 4096,
        DType::Iq2Xxs | DType::Iq3S => 2048,
        DType::Iq2S => 8192,
        DType::Iq3Xxs => 1024,
        DType::Iq4Nl | DType::Iq4Xs | DType::Mxfp4 => 64,
        _ => 0,
    }
}

/// `ggml_vk_matmul_shmem_support` (§8.1) for a scalar or cm1 device (`coopmat`): which of the
/// (s, m, l) tiles fit in shared memory for kernel A type `a`, computed with the device's
/// quantized tile table for every type, rows of BK + 1 values (BK + 8 with coopmat), 2 bytes per
/// staged value in fp16 mode (4 otherwise), 4096·4 bytes of row ids for MUL_MAT_ID, with
/// coopmat TM·TN/(BLOCK_SIZE/WARP)·4 bytes of staging (upstream's term, §12 item 15), and the
/// type's lookup table. `Err` when even the small MUL_MAT tile does not fit (upstream's device
/// initialisation throws).
pub fn available_tiles(
    caps: &DeviceCaps,
    coopmat: bool,
    a: DType,
    id: bool,
) -> std::result::Result<[bool; 3], String> {
    let value = if caps.fp16 { 2 } else { 4 };
    let need = |tile: Tile| {
        let [wg, bm, bn, bk, _, _, _, tm, tn, _, warp] = if coopmat {
            cm1_spec_constants(caps, true, tile)
        } else {
            spec_constants(caps, true, tile)
        };
        let (pad, stage) = if coopmat {
            (8, tm * tn / (wg / warp).max(1) * 4)
        } else {
            (1, 0)
        };
        (bm + bn) * (bk + pad) * value
            + if id { (ROW_IDS * 4) as u32 } else { 0 }
            + stage
            + lut_bytes(a)
    };
    let fits = |t: Tile| need(t) <= caps.shared_memory;
    let s = fits(Tile::S);
    if !s && !id {
        return Err(format!(
            "the small matmul tile needs {} bytes of shared memory, the device has {} (upstream's device init fails)",
            need(Tile::S),
            caps.shared_memory
        ));
    }
    let m = s && fits(Tile::M);
    let l = m && fits(Tile::L);
    Ok([s, m, l])
}

/// `ggml_vk_guess_matmul_pipeline` on non-cm2 devices (§8.2): the size class for an M × n
/// product (n = N, or the chunk's tokens for MUL_MAT_ID) given the available tiles.
pub fn choose_tile(avail: [bool; 3], m: usize, n: usize) -> Option<Tile> {
    let [s, md, l] = avail;
    let tile = if (s && (m <= 32 || n <= 32)) || (!md && !l) {
        Tile::S
    } else if (md && (m <= 64 || n <= 64)) || !l {
        Tile::M
    } else {
        Tile::L
    };
    let ok = match tile {
        Tile::S => s,
        Tile::M => md,
        Tile::L => l,
    };
    ok.then_some(tile)
}

/// `ggml_vk_dim01_contiguous` (§4.1): nb0 = type size, rows dense, nb3 = nb2·ne2 (nb2 is not
/// checked).
pub fn dim01_contiguous(t: &Tensor) -> bool {
    let (ne, nb, dt) = (t.ne(), t.nb(), t.dtype());
    nb[0] == dt.block_bytes() && nb[1] == nb[0] * ne[0] / dt.block_len() && nb[3] == nb[2] * ne[2]
}

/// What upstream's host decides before the kernel runs: the staging copies and the pipeline
/// family (§4.3, §8.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Staging {
    /// B is copied to a contiguous buffer of this type first.
    pub b_to: Option<DType>,
    /// A is dequantized to f16 first.
    pub a_to_f16: bool,
    /// The pipeline family the kernel runs.
    pub selection: Selection,
}

/// `ggml_vk_get_mul_mat_mat_pipeline` (§8.4): the (A, B, f16 accumulator) of the slot for
/// kernel types `a` × `b`, None when there is no pipeline. cm1 slots are the scalar fp16 ones
/// (assuming the f16-accumulator shape: see [`device_staging`]).
fn mat_pipeline(mode: Mode, a: DType, b: DType, prec: Prec) -> Option<bool> {
    let f16acc = mode != Mode::Fp32 && prec == Prec::Default;
    if mode == Mode::Cm2 {
        // §8.4 on cm2: only f16 (and bf16) B reaches the kernel; f32 A is converted first.
        return match (a, b) {
            (DType::Bf16, DType::Bf16) => Some(false),
            (DType::F16, DType::F16) => Some(f16acc),
            (q, DType::F16) if q.is_quantized() => Some(f16acc),
            _ => None,
        };
    }
    match (a, b) {
        (DType::F32, DType::F32) | (DType::F32, DType::F16) | (DType::Bf16, DType::Bf16) => {
            Some(false)
        }
        (DType::F16, DType::F32) | (DType::F16, DType::F16) => Some(f16acc),
        (q, DType::F32) if q.is_quantized() => Some(f16acc),
        _ => None,
    }
}

/// `ggml_vk_get_mul_mat_mat_id_pipeline` (§8.4): as the MUL_MAT lookup,
/// except that quantized experts ignore the precision request, and that anything but f16
/// experts with a B that is not f32 trips the host's assert (§12 item 17).
fn id_pipeline(
    mode: Mode,
    a: DType,
    b: DType,
    prec: Prec,
) -> std::result::Result<Option<bool>, String> {
    let f16acc = mode != Mode::Fp32 && prec == Prec::Default;
    if mode == Mode::Cm2 {
        // The quantized `.f16acc` slot holds the f32-accumulator SPIR-V (§12 item 13); no
        // B-type assert on cm2 multi-token calls (§12 item 17).
        return Ok(match (a, b) {
            (DType::Bf16, DType::Bf16) => Some(false),
            (DType::F16, DType::F16) => Some(f16acc),
            (q, DType::F16) if q.is_quantized() => Some(false),
            _ => None,
        });
    }
    match (a, b) {
        (DType::F32, DType::F32) | (DType::Bf16, DType::Bf16) => Ok(Some(false)),
        (DType::F16, DType::F32) | (DType::F16, DType::F16) => Ok(Some(f16acc)),
        (_, b) if b != DType::F32 => Err(format!(
            "{a} experts with a {b} B: upstream's MUL_MAT_ID pipeline lookup asserts that B is f32 (§12 item 17)"
        )),
        (q, _) if q.is_quantized() => Ok(Some(mode != Mode::Fp32)),
        _ => Ok(None),
    }
}

fn check_types(a: DType, b: DType) -> std::result::Result<(), String> {
    if matches!(a, DType::I32 | DType::Q8_1) {
        return Err(format!("A of type {a} is not a MUL_MAT type"));
    }
    match b {
        DType::F32 | DType::F16 => {}
        DType::Bf16 if a == DType::Bf16 => {}
        _ => {
            return Err(format!(
                "B of type {b} (supports_op: f32, f16, or bf16 with a bf16 A)"
            ))
        }
    }
    if a == DType::Bf16 && b == DType::F16 {
        return Err("bf16 × f16 is rejected by supports_op".into());
    }
    Ok(())
}

/// The device-level part of the choice, on top of the type-level [`choose`] /
/// [`choose_id`]: on cm1 an f16-accumulator slot holds the f32-accumulator SPIR-V when the
/// device has no f16-accumulator shape (`coopmat_acc_f16_support`, §8.4), and bf16 runs the
/// cm1 SPIR-V only with bf16 cooperative matrices.
fn device_staging(
    caps: &DeviceCaps,
    a: DType,
    mut staging: Staging,
) -> std::result::Result<Staging, String> {
    let sel = &mut staging.selection;
    if sel.mode == Mode::Cm1 {
        if a == DType::Bf16 && !caps.bf16_coopmat {
            return Err("bf16 without bf16 cooperative matrices: upstream runs the scalar `matmul_bf16_fp32` SPIR-V in the cm1 slot (not modelled)".into());
        }
        sel.acc16 &= cm1_shape(caps, true);
    }
    Ok(staging)
}

/// The staging and pipeline family for MUL_MAT of `a` × `b` with `prec`, or why upstream does
/// not run this kernel on `caps` (supports_op, the mat-vec routing of §4.3).
pub fn select(
    caps: &DeviceCaps,
    mode: Mode,
    a: &Tensor,
    b: &Tensor,
    prec: Prec,
) -> std::result::Result<Staging, String> {
    device_supports(caps, mode)?;
    mul_mat::check(a, b).map_err(|e| format!("ggml rejects the op: {e}"))?;
    let (at, bt) = (a.dtype(), b.dtype());
    check_types(at, bt)?;
    let (na, nb) = (a.ne(), b.ne());
    if na[3] != nb[3] {
        return Err(format!(
            "ne03 = {} ≠ ne13 = {}: Vulkan does not broadcast dim 3",
            na[3], nb[3]
        ));
    }
    if !a.is_contiguous() {
        return Err("a non-contiguous A is copied or routed elsewhere first (not modelled)".into());
    }
    let n = nb[1];
    if n == 1 || (n <= 8 && nb[2] * nb[3] == 1) {
        return Err(format!(
            "dst.ne1 = {n} with {} batches is routed to the matrix-vector kernel",
            nb[2] * nb[3]
        ));
    }
    device_staging(caps, at, choose(mode, at, bt, dim01_contiguous(b), prec)?)
}

/// Whether the host copies B into a contiguous f16 (bf16) scratch buffer (`y_non_contig`,
/// §4.3): B not dim01-contiguous, a bf16 A with another B, or an f32 B on cm2.
fn b_staged(mode: Mode, at: DType, bt: DType, b_dim01: bool) -> bool {
    !b_dim01 || (at == DType::Bf16 && bt != DType::Bf16) || (mode == Mode::Cm2 && bt == DType::F32)
}

/// The type-level part of [`select`]: the staging copies and pipeline family for A type `at`
/// and B type `bt` (dim01-contiguous or not) on a scalar device in `mode`.
pub fn choose(
    mode: Mode,
    at: DType,
    bt: DType,
    b_dim01: bool,
    prec: Prec,
) -> std::result::Result<Staging, String> {
    check_types(at, bt)?;
    let f16_type = if at == DType::Bf16 {
        DType::Bf16
    } else {
        DType::F16
    };
    let y_non_contig = b_staged(mode, at, bt, b_dim01);
    let b_kernel = if y_non_contig { f16_type } else { bt };
    // cm2: an f32 A is converted to f16 whatever B is (§4.3).
    let direct = if mode == Mode::Cm2 && at == DType::F32 {
        None
    } else {
        mat_pipeline(mode, at, b_kernel, prec)
    };
    let (a_kernel, acc16, a_to_f16) = match direct {
        Some(acc16) => (at, acc16, false),
        None => match mat_pipeline(mode, DType::F16, b_kernel, prec) {
            // qx_needs_dequant: A to f16, and the f16 slot with B as the kernel gets it.
            Some(acc16) if at.is_quantized() || at == DType::F32 => (DType::F16, acc16, true),
            _ => return Err(format!("no matmul pipeline for {at} × {b_kernel}")),
        },
    };
    Ok(Staging {
        b_to: y_non_contig.then_some(f16_type),
        a_to_f16,
        selection: Selection {
            mode,
            a: a_kernel,
            b: b_kernel,
            acc16,
            id: false,
        },
    })
}

/// The type-level part of [`select_id`] (as [`choose`]).
pub fn choose_id(
    mode: Mode,
    at: DType,
    bt: DType,
    b_dim01: bool,
    prec: Prec,
) -> std::result::Result<Staging, String> {
    check_types(at, bt)?;
    let f16_type = if at == DType::Bf16 {
        DType::Bf16
    } else {
        DType::F16
    };
    let y_non_contig = b_staged(mode, at, bt, b_dim01);
    let b_kernel = if y_non_contig { f16_type } else { bt };
    // cm2: f32 experts are converted to f16 first (§4.3).
    let a_to_f16 = mode == Mode::Cm2 && at == DType::F32;
    let a_kernel = if a_to_f16 { DType::F16 } else { at };
    let acc16 = match id_pipeline(mode, a_kernel, b_kernel, prec)? {
        Some(acc16) => acc16,
        None => return Err(format!("no matmul_id pipeline for {at} × {b_kernel}")),
    };
    Ok(Staging {
        b_to: y_non_contig.then_some(f16_type),
        a_to_f16,
        selection: Selection {
            mode,
            a: a_kernel,
            b: b_kernel,
            acc16,
            id: true,
        },
    })
}

/// The staging and pipeline family for MUL_MAT_ID of experts `a`, `b` and `ids`, or why
/// upstream does not run this kernel (supports_op, the single-token routing, host asserts).
pub fn select_id(
    caps: &DeviceCaps,
    mode: Mode,
    a: &Tensor,
    b: &Tensor,
    ids: &Tensor,
    prec: Prec,
) -> std::result::Result<Staging, String> {
    device_supports(caps, mode)?;
    mul_mat_id::check(a, b, ids).map_err(|e| format!("ggml rejects the op: {e}"))?;
    let (at, bt) = (a.dtype(), b.dtype());
    check_types(at, bt)?;
    let [n_used, n_tokens, ..] = ids.ne();
    if n_tokens == 1 && at != DType::Bf16 {
        return Err(
            "one token is routed to the matrix-vector ID kernel (bf16 experts excepted)".into(),
        );
    }
    if n_used > ROW_IDS {
        return Err(format!(
            "ids.ne0 = {n_used} expert slots exceed Vulkan's {ROW_IDS} (supports_op)"
        ));
    }
    if ids.nb()[0] != 4 {
        return Err(format!(
            "ids must be densely packed along ne0 (nb0 = {})",
            ids.nb()[0]
        ));
    }
    if !a.is_contiguous() {
        return Err("non-contiguous experts are first copied by the host (not modelled)".into());
    }
    let staging = device_staging(
        caps,
        at,
        choose_id(mode, at, bt, dim01_contiguous(b), prec)?,
    )?;
    if mode != Mode::Cm2 && available_tiles(caps, mode == Mode::Cm1, at, true)? == [false; 3] {
        return Err(
            "no MUL_MAT_ID tile fits in shared memory (mul_mat_id_s/m/l all disabled: supports_op)"
                .into(),
        );
    }
    Ok(staging)
}

/// One dispatch of the main kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatch {
    /// Size class.
    pub tile: Tile,
    /// The aligned variant.
    pub aligned: bool,
    /// Its specialization constants.
    pub spec: Vec<u32>,
    /// Workgroups.
    pub groups: [u32; 3],
}

impl Dispatch {
    fn new(caps: &DeviceCaps, sel: &Selection, tile: Tile, k: usize, m: usize, n: usize) -> Self {
        let quant = sel.a.is_quantized();
        let spec = match sel.mode {
            Mode::Cm2 => cm2_spec_constants(sel.a, sel.id, tile).to_vec(),
            Mode::Cm1 => cm1_spec_constants(caps, quant, tile).to_vec(),
            Mode::Fp16 | Mode::Fp32 => spec_constants(caps, quant, tile).to_vec(),
        };
        Dispatch {
            tile,
            aligned: k % tile.align() == 0 && m > 8 && n > 8,
            spec,
            groups: [0; 3],
        }
    }
}

/// Everything the host decides for one MUL_MAT (§8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Staging copies and pipeline family.
    pub staging: Staging,
    /// The main dispatch.
    pub dispatch: Dispatch,
    /// K splits (1: none).
    pub split_k: usize,
    /// K range of each split (K without a split).
    pub k_split: usize,
}

/// Upstream's choices for MUL_MAT of `a` × `b`; `force_split_k` replaces the core-count
/// formula (see the module notes).
pub fn plan(
    caps: &DeviceCaps,
    mode: Mode,
    a: &Tensor,
    b: &Tensor,
    prec: Prec,
    force_split_k: Option<u32>,
) -> std::result::Result<Plan, String> {
    let staging = select(caps, mode, a, b, prec)?;
    let sel = staging.selection;
    let ([k, m, ..], [_, n, ne12, ne13]) = (a.ne(), b.ne());
    let tile = if sel.mode == Mode::Cm2 {
        cm2_choose_tile(sel.a, false, n)
    } else {
        let avail = available_tiles(caps, sel.mode == Mode::Cm1, sel.a, false)?;
        choose_tile(avail, m, n).ok_or("no matmul tile available")?
    };
    let mut dispatch = Dispatch::new(caps, &sel, tile, k, m, n);
    let mut split_k = match force_split_k {
        Some(f) if f > 1 => match f.min(4) {
            3 => 2,
            s => s as usize,
        },
        _ => 1,
    };
    // cm2 halves the split while a split's K is not a whole number of 256s (§8.3).
    while sel.mode == Mode::Cm2 && split_k > 1 && (k / split_k) % 256 != 0 {
        split_k /= 2;
    }
    let k_split = if split_k > 1 { k.div_ceil(split_k) } else { k };
    let (bm, bn) = (dispatch.spec[1], dispatch.spec[2]);
    let u = |x: usize| x as u32;
    dispatch.groups = workgroups(
        [
            u(m.div_ceil(bm as usize) * bm as usize * split_k),
            u(n),
            u(ne12 * ne13),
        ],
        [bm, bn, 1],
    );
    Ok(Plan {
        staging,
        dispatch,
        split_k,
        k_split,
    })
}

/// One token chunk of a MUL_MAT_ID (§4.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// First token.
    pub token_start: usize,
    /// Tokens in the chunk (nei1).
    pub tokens: usize,
    /// Its dispatch.
    pub dispatch: Dispatch,
}

/// Everything the host decides for one MUL_MAT_ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdPlan {
    /// Staging copies and pipeline family.
    pub staging: Staging,
    /// The token chunks, in order.
    pub chunks: Vec<Chunk>,
}

/// Upstream's choices for MUL_MAT_ID.
pub fn plan_id(
    caps: &DeviceCaps,
    mode: Mode,
    a: &Tensor,
    b: &Tensor,
    ids: &Tensor,
    prec: Prec,
) -> std::result::Result<IdPlan, String> {
    let staging = select_id(caps, mode, a, b, ids, prec)?;
    let sel = staging.selection;
    let [k, m, n_as, _] = a.ne();
    let [n_used, n_tokens, ..] = ids.ne();
    let avail = if sel.mode == Mode::Cm2 {
        [true; 3]
    } else {
        available_tiles(caps, sel.mode == Mode::Cm1, sel.a, true)?
    };
    let split_size = n_tokens.min(ROW_IDS / n_used);
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < n_tokens {
        let tokens = split_size.min(n_tokens - start);
        let tile = if sel.mode == Mode::Cm2 {
            cm2_choose_tile(sel.a, true, tokens)
        } else {
            choose_tile(avail, m, tokens).ok_or("no matmul_id tile available")?
        };
        let mut dispatch = Dispatch::new(caps, &sel, tile, k, m, tokens);
        let (bm, bn) = (dispatch.spec[1], dispatch.spec[2]);
        dispatch.groups = workgroups([m as u32, tokens as u32, n_as as u32], [bm, bn, 1]);
        chunks.push(Chunk {
            token_start: start,
            tokens,
            dispatch,
        });
        start += tokens;
    }
    Ok(IdPlan { staging, chunks })
}

/// A (already checked) contiguous copy of `b` converted to `to` (f16 or bf16), rounding to
/// nearest even: what the host's cpy shaders produce.
fn convert_b(b: &Tensor, to: DType) -> Result<Tensor> {
    let values = b.rows().map_err(|e| GpuError::Unsupported(e.to_string()))?;
    let bytes: Vec<u8> = values
        .iter()
        .flat_map(|&v| {
            let v = v as f32; // f32/f16/bf16 values are exact in f32
            match to {
                DType::Bf16 => float::f32_to_bf16(v).to_le_bytes(),
                _ => float::f32_to_f16(v).to_le_bytes(),
            }
        })
        .collect();
    Tensor::from_bytes(to, b.ne(), bytes).map_err(|e| GpuError::Unsupported(e.to_string()))
}

/// A quantized A dequantized to f16: ggml's f32 values, rounded to nearest even.
fn dequantize_a(a: &Tensor) -> Result<Tensor> {
    let values = dequantize_f32(a.dtype(), a.data(), a.nelements())
        .map_err(|e| GpuError::Unsupported(e.to_string()))?;
    let bytes: Vec<u8> = values
        .iter()
        .flat_map(|&v| float::f32_to_f16(v).to_le_bytes())
        .collect();
    Tensor::from_bytes(DType::F16, a.ne(), bytes).map_err(|e| GpuError::Unsupported(e.to_string()))
}

/// The bytes of the staged B buffer: B's, then `pad_rows` rows of NaN (stale scratch data, see
/// the module notes) when the kernel may read up to padded_N rows.
fn b_buffer(b: &Tensor, pad_rows: usize) -> Vec<u8> {
    let nan: [u8; 2] = match b.dtype() {
        DType::Bf16 => 0x7fc0u16.to_le_bytes(),
        _ => 0x7e00u16.to_le_bytes(),
    };
    let mut bytes = b.data().to_vec();
    for _ in 0..pad_rows * b.ne()[0] {
        bytes.extend_from_slice(&nan);
    }
    bytes
}

/// A and B as the kernel receives them after the host's staging copies (§4.3).
pub fn staged(a: &Tensor, b: &Tensor, s: &Staging) -> Result<(Tensor, Tensor)> {
    let a = if s.a_to_f16 {
        dequantize_a(a)?
    } else {
        a.clone()
    };
    let b = match s.b_to {
        Some(to) => convert_b(b, to)?,
        None => b.to_contiguous(),
    };
    Ok((a, b))
}

fn main_pipeline(
    gpu: &mut Gpu,
    tree: &mut ShaderTree,
    sel: &Selection,
    d: &Dispatch,
) -> Result<(crate::context::Pipeline, String)> {
    let variant = sel.variant(d.aligned);
    // vk_mat_mat_push_constants is 60 bytes, vk_mat_mat_id_push_constants 56; the f32/f16
    // matmul_id pipelines are created with the 60-byte range anyway (§6.3).
    let push_size = if sel.mode == Mode::Cm2 {
        // mul_mm_cm2.comp declares the host structs exactly (§7.3).
        if sel.id {
            56
        } else {
            60
        }
    } else if !sel.id || matches!(sel.a, DType::F32 | DType::F16) {
        60
    } else {
        56
    };
    let p = gpu.pipeline(
        tree,
        &PipelineDesc {
            variant: &variant,
            spec: d.spec.to_vec(),
            push_size,
            bindings: if sel.id { 4 } else { 3 },
            disable_robustness: false,
            // §1.4: coopmat1 pipelines require full subgroups (no explicit size).
            full_subgroups: sel.mode == Mode::Cm1,
            subgroup_size: None,
        },
    )?;
    Ok((p, variant.name))
}

/// How to run one MUL_MAT.
#[derive(Debug, Clone, Copy)]
pub struct MulMmRun<'a> {
    /// src0.
    pub a: &'a Tensor,
    /// src1.
    pub b: &'a Tensor,
    /// The path (scalar fp16/fp32 or cm2), see [`device_supports`].
    pub mode: Mode,
    /// The precision request.
    pub prec: Prec,
    /// Force this split count (None: upstream's choice, which never splits without a known
    /// core count).
    pub force_split_k: Option<u32>,
}

/// Runs MUL_MAT through the matrix-matrix kernel; dst (M, N, ne12, ne13) f32 comes back in
/// ggml order.
pub fn run(gpu: &mut Gpu, tree: &mut ShaderTree, r: &MulMmRun) -> Result<KernelRun> {
    super::own_tree_decodes(r.a.dtype())?;
    let plan = plan(gpu.caps(), r.mode, r.a, r.b, r.prec, r.force_split_k)
        .map_err(GpuError::Unsupported)?;
    let (a, b) = staged(r.a, r.b, &plan.staging)?;
    let sel = plan.staging.selection;
    let d = &plan.dispatch;
    let ([k, m, ne02, ne03], [_, n, ne12, ne13]) = (a.ne(), b.ne());
    let (pipeline, name) = main_pipeline(gpu, tree, &sel, d)?;
    let reduce = if plan.split_k > 1 {
        let rv = reduce_variant();
        Some(gpu.pipeline(
            tree,
            &PipelineDesc {
                variant: &rv,
                spec: Vec::new(),
                push_size: 8,
                bindings: 2,
                disable_robustness: false,
                full_subgroups: false,
                subgroup_size: None,
            },
        )?)
    } else {
        None
    };
    let u = |x: usize| x as u32;
    let bn = d.spec[2] as usize;
    let padded_n = if plan.staging.b_to.is_some() {
        n.div_ceil(bn) * bn
    } else {
        n
    };
    // vk_mat_mat_push_constants (§6.3): strides in elements, batch strides from ne.
    let push = [
        u(m),
        u(n),
        u(k),
        u(k),
        u(k),
        u(m),
        u(k * m),
        u(k * n),
        u(m * n),
        u(plan.k_split),
        u(ne02),
        u(ne12),
        u(ne12 / ne02),
        u(ne13 / ne03),
        u(padded_n),
    ];
    let outputs = m * n * ne12 * ne13;
    let mut job = gpu.job();
    let (ab, bb) = (job.input(a.data()), job.input(&b_buffer(&b, padded_n - n)));
    let dst = job.output(outputs * 4);
    if let Some(reduce) = reduce {
        let scratch = job.output(outputs * plan.split_k * 4);
        job.dispatch(pipeline, &[ab, bb, scratch], &push, d.groups)?;
        job.dispatch(
            reduce,
            &[scratch, dst],
            &[u(outputs), u(plan.split_k)],
            workgroups([u(outputs), 1, 1], [1024, 1, 1]),
        )?;
    } else {
        job.dispatch(pipeline, &[ab, bb, dst], &push, d.groups)?;
    }
    let out = job.submit()?;
    Ok(KernelRun {
        values: out.f32s(dst),
        overrun: !out.overruns.is_empty(),
        gpu_ns: out.gpu_ns,
        variant: name,
        validation: out.validation,
    })
}

/// How to run one MUL_MAT_ID.
#[derive(Debug, Clone, Copy)]
pub struct MulMmIdRun<'a> {
    /// The experts (src0).
    pub a: &'a Tensor,
    /// src1.
    pub b: &'a Tensor,
    /// The i32 expert ids (src2).
    pub ids: &'a Tensor,
    /// The path, see [`MulMmRun::mode`].
    pub mode: Mode,
    /// The precision request (quantized experts ignore it).
    pub prec: Prec,
}

/// Runs MUL_MAT_ID through the matrix-matrix ID kernel, one job per token chunk; dst
/// (M, n_used, n_tokens, 1) f32 comes back in ggml order.
pub fn run_id(gpu: &mut Gpu, tree: &mut ShaderTree, r: &MulMmIdRun) -> Result<KernelRun> {
    super::own_tree_decodes(r.a.dtype())?;
    let plan =
        plan_id(gpu.caps(), r.mode, r.a, r.b, r.ids, r.prec).map_err(GpuError::Unsupported)?;
    let (a, b) = staged(r.a, r.b, &plan.staging)?;
    let ids = r.ids;
    let sel = plan.staging.selection;
    let [k, m, ..] = a.ne();
    let [_, ne11, ..] = b.ne();
    let [n_used, ..] = ids.ne();
    let (b_token, ids_token, d_token) = (b.nb()[2], ids.nb()[1], m * n_used * 4);
    let mut values = Vec::with_capacity(m * n_used * ids.ne()[1]);
    let (mut overrun, mut gpu_ns, mut validation) = (false, None::<f64>, Vec::new());
    let mut names: Vec<String> = Vec::new();
    let u = |x: usize| x as u32;
    for chunk in &plan.chunks {
        let d = &chunk.dispatch;
        let (pipeline, name) = main_pipeline(gpu, tree, &sel, d)?;
        if !names.contains(&name) {
            names.push(name);
        }
        let bn = d.spec[2] as usize;
        let padded_n = if plan.staging.b_to.is_some() {
            chunk.tokens.div_ceil(bn) * bn
        } else {
            chunk.tokens
        };
        // vk_mat_mat_id_push_constants (§6.3) for the chunk's views.
        let push = [
            u(m),
            u(n_used),
            u(k),
            u(k),
            u(k),
            u(m),
            u(k * m),
            u(k * ne11),
            u(m * n_used),
            u(n_used),
            u(chunk.tokens),
            u(ids_token / 4),
            u(ne11),
            u(padded_n),
        ];
        let (t0, t1) = (chunk.token_start, chunk.token_start + chunk.tokens);
        let b_bytes = &b.data()[t0 * b_token..t1 * b_token];
        let ids_end = ((t1 - 1) * ids_token + n_used * 4).min(ids.data().len());
        let ids_bytes = &ids.data()[t0 * ids_token..ids_end];
        let mut job = gpu.job();
        let (ab, bb) = (job.input(a.data()), job.input(b_bytes));
        let dst = job.output(chunk.tokens * d_token);
        let ib = job.input(ids_bytes);
        job.dispatch(pipeline, &[ab, bb, dst, ib], &push, d.groups)?;
        let out = job.submit()?;
        values.extend(out.f32s(dst));
        overrun |= !out.overruns.is_empty();
        gpu_ns = match (gpu_ns, out.gpu_ns) {
            (Some(x), Some(y)) => Some(x + y),
            (x, y) => x.or(y),
        };
        validation.extend(out.validation);
    }
    Ok(KernelRun {
        values,
        overrun,
        gpu_ns,
        variant: names.join(" + "),
        validation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lavapipe() -> DeviceCaps {
        DeviceCaps {
            subgroup_size: 8,
            shared_memory: 32768,
            fp16: true,
            storage16: true,
            max_workgroup_count: [65535; 3],
            ..DeviceCaps::default()
        }
    }

    fn t(dtype: DType, ne: [usize; 4]) -> Tensor {
        Tensor::from_f32(dtype, ne, &vec![0.5; ne.iter().product()]).unwrap()
    }

    fn ids(n_used: usize, n_tokens: usize) -> Tensor {
        Tensor::from_bytes(
            DType::I32,
            [n_used, n_tokens, 1, 1],
            vec![0; 4 * n_used * n_tokens],
        )
        .unwrap()
    }

    /// Every cm2 variant the families use (and its aligned twin) compiles to SPIR-V: no device
    /// needed, so this runs on lavapipe CI too.
    #[test]
    fn every_cm2_variant_compiles() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../shaders");
        let mut tree = ShaderTree::with_cache(dir, None);
        // The own tree's types (mxfp4 has no decoder there: its rows skip by name).
        let quants: Vec<DType> = DType::WEIGHT_QUANTS
            .iter()
            .copied()
            .filter(|q| !crate::runners::NOT_IN_OWN_TREE.contains(q))
            .collect();
        let quants = &quants[..];
        let only = crate::env::env().cm2_only.clone();
        let mut failures = Vec::new();
        for id in [false, true] {
            for (a, b, acc16) in cm2_families(quants, id) {
                let sel = Selection {
                    mode: Mode::Cm2,
                    a,
                    b,
                    acc16,
                    id,
                };
                for aligned in [false, true] {
                    let v = sel.variant(aligned);
                    if only.as_deref().is_some_and(|o| !v.name.contains(o)) {
                        continue;
                    }
                    if let Err(e) = tree.spirv(&v) {
                        failures.push(format!("{}: {e}", v.name));
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// Every cm1 (`mul_mm.comp` + COOPMAT) variant the generator compiles for the quantized
    /// types vkdiff models — §6.1's base names (f32_f16, f16, bf16, f32_f32, f16_f32, <q>_f32,
    /// <q>_f16) × f32/f16 accumulators (bf16: f32 only) × aligned twin × MUL_MAT/MUL_MAT_ID —
    /// compiles to SPIR-V without -O, as upstream's generator does: no device needed, so
    /// lavapipe CI catches a cm1 shader that does not compile. VKDIFF_CM1_ONLY=substring
    /// narrows it.
    #[test]
    fn every_cm1_variant_compiles() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../shaders");
        let mut tree = ShaderTree::with_cache(dir, None);
        let only = crate::env::env().cm1_only.clone();
        let mut pairs = vec![
            (DType::F32, DType::F16),
            (DType::F16, DType::F16),
            (DType::Bf16, DType::Bf16),
            (DType::F32, DType::F32),
            (DType::F16, DType::F32),
        ];
        for &q in DType::WEIGHT_QUANTS {
            if crate::runners::NOT_IN_OWN_TREE.contains(&q) {
                continue; // no decoder in the own tree: its rows skip by name
            }
            pairs.push((q, DType::F32));
            pairs.push((q, DType::F16));
        }
        let (mut failures, mut compiled) = (Vec::new(), 0);
        for id in [false, true] {
            for &(a, b) in &pairs {
                for acc16 in [false, true] {
                    if acc16 && a == DType::Bf16 {
                        continue;
                    }
                    let sel = Selection {
                        mode: Mode::Cm1,
                        a,
                        b,
                        acc16,
                        id,
                    };
                    for aligned in [false, true] {
                        let v = sel.variant(aligned);
                        if only.as_deref().is_some_and(|o| !v.name.contains(o)) {
                            continue;
                        }
                        assert!(!v.optimize && v.name.ends_with("_cm1"), "{}", v.name);
                        compiled += 1;
                        if let Err(e) = tree.spirv(&v) {
                            failures.push(format!("{}: {e}", v.name));
                        }
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(only.is_some() || compiled >= 200, "{compiled} variants");
    }

    /// The cm1 path on an NVIDIA-like device with coopmat2 disabled (subgroup 32, 48 KiB).
    fn cm1_device() -> DeviceCaps {
        let shape = |c: &str| crate::caps::CoopmatShape {
            m: 16,
            n: 16,
            k: 16,
            ab: "f16".into(),
            c: c.into(),
            subgroup_scope: true,
        };
        DeviceCaps {
            coopmat2: false,
            full_subgroups: true,
            subgroup_size_range: Some((32, 32)),
            coopmat_shapes: vec![shape("f16"), shape("f32")],
            bf16: true,
            bf16_coopmat: true,
            ..h100()
        }
    }

    #[test]
    fn cm1_plans_follow_sections_6_and_8() {
        let caps = cm1_device();
        let cm1 = Mode::Cm1;
        assert_eq!(device_supports(&caps, cm1), Ok(()));
        // Tiles: the scalar table with TM/TN/TK = 16 (sg 32: sg8 = sg16 = sg32 = 32).
        assert_eq!(
            cm1_spec_constants(&caps, false, Tile::L),
            [128, 128, 128, 16, 64, 64, 2, 16, 16, 16, 32]
        );
        assert_eq!(
            cm1_spec_constants(&caps, true, Tile::S),
            [32, 32, 32, 32, 32, 32, 2, 16, 16, 16, 32]
        );
        // Shared memory: large quant tile (128 + 128)·(32 + 8)·2 + 16·16/4·4 = 20736 bytes,
        // + 16384 for MUL_MAT_ID = 37120: everything fits in 48 KiB, not in 32 KiB (ID).
        assert_eq!(
            available_tiles(&caps, true, DType::Q4_0, true),
            Ok([true; 3])
        );
        let small = DeviceCaps {
            shared_memory: 32768,
            ..cm1_device()
        };
        assert_eq!(
            available_tiles(&small, true, DType::Q4_0, true),
            Ok([true, true, false])
        );
        // Large tile: M, N > 64; K = 256 is aligned; f16acc by default.
        let p = plan(
            &caps,
            cm1,
            &t(DType::F16, [256, 200, 1, 1]),
            &t(DType::F32, [256, 100, 1, 1]),
            Prec::Default,
            None,
        )
        .unwrap();
        let v = p.staging.selection.variant(p.dispatch.aligned);
        assert_eq!(v.name, "matmul_f16_f32_aligned_f16acc_cm1");
        assert!(v.defines.contains(&("COOPMAT".into(), "1".into())) && !v.optimize);
        assert_eq!((p.dispatch.tile, p.dispatch.groups), (Tile::L, [2, 1, 1]));
        // Quantized experts: `.f16acc` with the f16-accumulator shape, f32 without it.
        let (a, b) = (t(DType::Q4_0, [32, 4, 3, 1]), t(DType::F32, [32, 1, 20, 1]));
        let p = plan_id(&caps, cm1, &a, &b, &ids(1, 20), Prec::F32).unwrap();
        assert_eq!(
            p.staging.selection.name(false),
            "matmul_id_q4_0_f32_f16acc_cm1"
        );
        let f32_only = DeviceCaps {
            coopmat_shapes: vec![cm1_device().coopmat_shapes[1].clone()],
            ..cm1_device()
        };
        let p = plan_id(&f32_only, cm1, &a, &b, &ids(1, 20), Prec::F32).unwrap();
        assert_eq!(p.staging.selection.name(false), "matmul_id_q4_0_f32_cm1");
        // bf16 needs bf16 cooperative matrices; lavapipe has no coopmat at all.
        let no_bf16 = DeviceCaps {
            bf16_coopmat: false,
            ..cm1_device()
        };
        let bf = t(DType::Bf16, [32, 16, 1, 1]);
        assert!(plan(
            &no_bf16,
            cm1,
            &bf,
            &t(DType::F32, [32, 16, 1, 1]),
            Prec::F32,
            None
        )
        .unwrap_err()
        .contains("bf16"));
        assert!(device_supports(&lavapipe(), cm1)
            .unwrap_err()
            .contains("VK_KHR_cooperative_matrix"));
        // A split as on the scalar path (no halving to 256s).
        let (a, b) = (
            t(DType::F16, [1000, 64, 1, 1]),
            t(DType::F16, [1000, 64, 1, 1]),
        );
        let p = plan(&caps, cm1, &a, &b, Prec::F32, Some(4)).unwrap();
        assert_eq!((p.split_k, p.k_split), (4, 250));
    }

    fn h100() -> DeviceCaps {
        DeviceCaps {
            subgroup_size: 32,
            shared_memory: 49152,
            fp16: true,
            storage16: true,
            coopmat: true,
            coopmat2: true,
            max_workgroup_count: [65535; 3],
            ..DeviceCaps::default()
        }
    }

    #[test]
    fn cm2_plans_follow_sections_7_and_8() {
        let caps = h100();
        let cm2 = Mode::Cm2;
        // f32 × f32: both converted to f16, the f16 slot; N = 300 > 128: large tile.
        let p = plan(
            &caps,
            cm2,
            &t(DType::F32, [512, 200, 1, 1]),
            &t(DType::F32, [512, 300, 1, 1]),
            Prec::Default,
            None,
        )
        .unwrap();
        assert!(p.staging.a_to_f16 && p.staging.b_to == Some(DType::F16));
        assert_eq!(
            p.staging.selection.variant(p.dispatch.aligned).name,
            "matmul_f16_aligned_f16acc_cm2"
        );
        assert_eq!(p.dispatch.spec, vec![256, 128, 256, 64, 1]);
        assert_eq!(p.dispatch.groups, [2, 2, 1]);
        // K-quants: warptile_mmq_k; N = 40 > 32: medium.
        let p = plan(
            &caps,
            cm2,
            &Tensor::from_bytes(DType::Q4_K, [256, 70, 1, 1], vec![0; 70 * 144]).unwrap(),
            &t(DType::F16, [256, 40, 1, 1]),
            Prec::F32,
            None,
        )
        .unwrap();
        assert_eq!(p.staging.selection.name(false), "matmul_q4_k_f16_cm2");
        assert_eq!(p.dispatch.spec, vec![256, 32, 64, 64, 0]);
        assert!(!p.staging.a_to_f16 && p.staging.b_to.is_none());
        // Split halving: K = 1536 asks 4 → 384 % 256 ≠ 0 → 2 → 768 = 3·256.
        let (a, b) = (
            t(DType::F16, [1536, 64, 1, 1]),
            t(DType::F16, [1536, 64, 1, 1]),
        );
        let p = plan(&caps, cm2, &a, &b, Prec::F32, Some(4)).unwrap();
        assert_eq!((p.split_k, p.k_split), (2, 768));
        // K = 1000: no split survives.
        let (a, b) = (
            t(DType::F16, [1000, 64, 1, 1]),
            t(DType::F16, [1000, 64, 1, 1]),
        );
        assert_eq!(
            plan(&caps, cm2, &a, &b, Prec::F32, Some(4))
                .unwrap()
                .split_k,
            1
        );
        // Quantized MUL_MAT_ID: the f32 accumulator whatever the request, warptile_mmqid.
        let p = plan_id(
            &caps,
            cm2,
            &t(DType::Q4_0, [32, 4, 3, 1]),
            &t(DType::F32, [32, 1, 20, 1]),
            &ids(1, 20),
            Prec::Default,
        )
        .unwrap();
        assert_eq!(p.staging.selection.name(false), "matmul_id_q4_0_f16_cm2");
        assert_eq!(p.chunks[0].dispatch.spec, vec![256, 128, 64, 16, 0]);
        // A device without coopmat2 refuses the path with the reason.
        assert!(device_supports(&lavapipe(), cm2)
            .unwrap_err()
            .contains("cooperative_matrix2"));
    }

    #[test]
    fn names_follow_the_suffix_rule() {
        let s = |a, b, acc16, id, mode| Selection {
            mode,
            a,
            b,
            acc16,
            id,
        };
        let f = Mode::Fp16;
        assert_eq!(
            s(DType::Q4_0, DType::F32, true, false, f).name(true),
            "matmul_q4_0_f32_aligned_f16acc"
        );
        assert_eq!(
            s(DType::F16, DType::F16, true, false, f).name(false),
            "matmul_f16_f16acc"
        );
        assert_eq!(
            s(DType::F16, DType::F32, false, true, f).name(false),
            "matmul_id_f16_f32"
        );
        assert_eq!(
            s(DType::Bf16, DType::Bf16, false, false, f).name(true),
            "matmul_bf16_aligned"
        );
        assert_eq!(
            s(DType::Q2_K, DType::F32, false, true, Mode::Fp32).name(false),
            "matmul_id_q2_k_f32_fp32"
        );
        assert_eq!(
            s(DType::F32, DType::F16, false, false, f).name(false),
            "matmul_f32_f16"
        );
    }

    #[test]
    fn defines_follow_the_generator_table() {
        let sel = Selection {
            mode: Mode::Fp16,
            a: DType::Q4_1,
            b: DType::F32,
            acc16: true,
            id: true,
        };
        let v = sel.variant(true);
        let has = |k: &str, val: &str| v.defines.contains(&(k.into(), val.into()));
        assert!(has("DATA_A_Q4_1", "1") && has("MUL_MAT_ID", "1") && has("ALIGNED", "1"));
        assert!(has("B_TYPE", "mat2x4") && has("LOAD_VEC_A", "8") && has("LOAD_VEC_B", "8"));
        assert!(
            has("ACC_TYPE", "float16_t") && has("FLOAT_TYPE", "float16_t") && has("FLOAT16", "1")
        );
        let bf = Selection {
            mode: Mode::Fp16,
            a: DType::Bf16,
            b: DType::Bf16,
            acc16: false,
            id: false,
        }
        .variant(false);
        assert!(bf.defines.contains(&("B_TYPE".into(), "uint16_t".into())));
        assert!(bf.defines.contains(&("FLOAT_TYPE".into(), "float".into())));
        assert!(bf
            .defines
            .contains(&("TO_FLOAT_TYPE".into(), "bf16_to_fp32".into())));
    }

    #[test]
    fn lavapipe_tables_and_shared_memory() {
        let caps = lavapipe();
        assert_eq!(
            spec_constants(&caps, false, Tile::L),
            [128, 128, 128, 16, 16, 64, 2, 4, 4, 1, 8]
        );
        assert_eq!(
            spec_constants(&caps, true, Tile::S),
            [32, 32, 32, 32, 32, 32, 2, 2, 2, 1, 8]
        );
        assert_eq!(spec_constants(&caps, false, Tile::S)[0], 16);
        // 32 KiB: every MUL_MAT tile fits; MUL_MAT_ID loses the large one (33280 bytes).
        assert_eq!(
            available_tiles(&caps, false, DType::F16, false),
            Ok([true; 3])
        );
        assert_eq!(
            available_tiles(&caps, false, DType::Q4_0, true),
            Ok([true, true, false])
        );
        let tiny = DeviceCaps {
            shared_memory: 4096,
            ..lavapipe()
        };
        assert!(available_tiles(&tiny, false, DType::F16, false).is_err());
        assert_eq!(
            available_tiles(&tiny, false, DType::F16, true),
            Ok([false; 3])
        );
    }

    #[test]
    fn tile_choice_and_alignment() {
        let all = [true; 3];
        assert_eq!(choose_tile(all, 100, 20), Some(Tile::S));
        assert_eq!(choose_tile(all, 100, 64), Some(Tile::M));
        assert_eq!(choose_tile(all, 65, 65), Some(Tile::L));
        assert_eq!(choose_tile([true, true, false], 500, 500), Some(Tile::M));
        let caps = lavapipe();
        let p = plan(
            &caps,
            Mode::Fp16,
            &t(DType::F16, [128, 65, 1, 1]),
            &t(DType::F32, [128, 70, 1, 1]),
            Prec::Default,
            None,
        )
        .unwrap();
        assert_eq!(p.dispatch.tile, Tile::L);
        assert!(p.dispatch.aligned);
        assert_eq!(p.dispatch.groups, [1, 1, 1]);
        assert_eq!(
            p.staging.selection.variant(p.dispatch.aligned).name,
            "matmul_f16_f32_aligned_f16acc"
        );
        let p = plan(
            &caps,
            Mode::Fp16,
            &t(DType::F16, [96, 65, 1, 1]),
            &t(DType::F32, [96, 70, 1, 1]),
            Prec::F32,
            None,
        )
        .unwrap();
        assert!(!p.dispatch.aligned, "96 is not a multiple of 128");
        assert!(!p.staging.selection.acc16);
    }

    #[test]
    fn staging_follows_the_host() {
        let caps = lavapipe();
        // quant × f16: A to f16, the f16 slot.
        let s = select(
            &caps,
            Mode::Fp16,
            &t(DType::Q4_0, [32, 4, 1, 1]),
            &t(DType::F16, [32, 9, 1, 1]),
            Prec::Default,
        )
        .unwrap();
        assert!(s.a_to_f16 && s.b_to.is_none());
        assert_eq!(s.selection.name(false), "matmul_f16_f16acc");
        // bf16 × f32: B to bf16.
        let s = select(
            &caps,
            Mode::Fp16,
            &t(DType::Bf16, [4, 4, 1, 1]),
            &t(DType::F32, [4, 9, 1, 1]),
            Prec::Default,
        )
        .unwrap();
        assert_eq!(
            (s.b_to, s.selection.name(false).as_str()),
            (Some(DType::Bf16), "matmul_bf16")
        );
        // A padded f32 B becomes f16: f32 × f16.
        let dense = t(DType::F32, [6, 9, 1, 1]);
        let padded =
            Tensor::new(DType::F32, [5, 9, 1, 1], dense.nb(), dense.data().to_vec()).unwrap();
        let s = select(
            &caps,
            Mode::Fp16,
            &t(DType::F32, [5, 4, 1, 1]),
            &padded,
            Prec::Default,
        )
        .unwrap();
        assert_eq!(s.selection.name(false), "matmul_f32_f16");
        // Few columns without batches go to mat-vec; with batches they stay.
        assert!(select(
            &caps,
            Mode::Fp16,
            &t(DType::F32, [4, 4, 1, 1]),
            &t(DType::F32, [4, 8, 1, 1]),
            Prec::Default
        )
        .is_err());
        assert!(select(
            &caps,
            Mode::Fp16,
            &t(DType::F32, [4, 4, 1, 1]),
            &t(DType::F32, [4, 2, 2, 1]),
            Prec::Default
        )
        .is_ok());
    }

    #[test]
    fn id_selection_chunks_and_asserts() {
        let caps = lavapipe();
        let a = t(DType::Q4_0, [32, 4, 3, 1]);
        // Quantized experts: f16acc whatever the precision request.
        let p = plan_id(
            &caps,
            Mode::Fp16,
            &a,
            &t(DType::F32, [32, 1, 2, 1]),
            &ids(1, 2),
            Prec::F32,
        )
        .unwrap();
        assert_eq!(p.staging.selection.name(false), "matmul_id_q4_0_f32_f16acc");
        // f16 B with quantized experts: the host asserts.
        assert!(select_id(
            &caps,
            Mode::Fp16,
            &a,
            &t(DType::F16, [32, 1, 2, 1]),
            &ids(1, 2),
            Prec::F32
        )
        .unwrap_err()
        .contains("asserts"));
        // One token: mat-vec ID.
        assert!(select_id(
            &caps,
            Mode::Fp16,
            &a,
            &t(DType::F32, [32, 1, 1, 1]),
            &ids(1, 1),
            Prec::F32
        )
        .is_err());
        // 3 slots × 3000 tokens: chunks of 4096 / 3 = 1365 tokens.
        let p = plan_id(
            &caps,
            Mode::Fp16,
            &a,
            &t(DType::F32, [32, 1, 3000, 1]),
            &ids(3, 3000),
            Prec::F32,
        )
        .unwrap();
        let sizes: Vec<usize> = p.chunks.iter().map(|c| c.tokens).collect();
        assert_eq!(sizes, vec![1365, 1365, 270]);
        assert_eq!(p.chunks[0].dispatch.tile, Tile::S, "M = 4");
    }

    #[test]
    fn forced_split_follows_the_rule() {
        let caps = lavapipe();
        let (a, b) = (
            t(DType::F32, [100, 40, 1, 1]),
            t(DType::F32, [100, 40, 1, 1]),
        );
        let p = plan(&caps, Mode::Fp16, &a, &b, Prec::F32, Some(3)).unwrap();
        assert_eq!((p.split_k, p.k_split), (2, 50));
        assert_eq!(
            p.dispatch.groups,
            [2, 1, 1],
            "one medium row tile × 2 splits"
        );
        let p = plan(&caps, Mode::Fp16, &a, &b, Prec::F32, Some(9)).unwrap();
        assert_eq!((p.split_k, p.k_split), (4, 25));
    }
}
