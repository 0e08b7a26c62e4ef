//! Flash attention (`flash_attn.comp`, `flash_attn_cm1.comp`, `flash_attn_cm2.comp` +
//! `flash_attn_split_k_reduce.comp`, §9 of docs/interface.md): upstream's host logic
//! (`ggml_vk_flash_attn`) for the **three paths** — variant and defines, path fallbacks,
//! pipeline choice (small/large rows, aligned/unaligned), specialization constants, the GQA
//! rewrite, split-k and its reduce dispatch, the 128-byte push-constant struct.
//!
//! **Paths.** Upstream takes cm2 on a coopmat2 device, cm1 on a KHR-coopmat device that also
//! has full subgroups and subgroup size control reaching 32, else scalar (§9.6). vkdiff names
//! the path it wants (a variant of the kernel table); a cm1 request on a cm2 device runs as
//! upstream does with `GGML_VK_DISABLE_COOPMAT2` set. The host's own fallbacks are applied
//! exactly ([`plan`]): cm1 → scalar without the 16×16×16 shape for the accumulator or when
//! the shared-memory estimate does not fit, and for small rows; cm2 → scalar for N == 1. The
//! plan's `path` is what actually ran.
//!
//! **split_k.** Upstream splits the keys of a single query over several workgroups when the
//! device reports its shader core count (NVIDIA SM builtins or AMD core properties) and
//! KV ≥ 512. vkdiff does not probe the core count, so — as on lavapipe, which has none — the
//! natural choice never splits. [`FlashAttnRun::force_split_k`] stands in for the core-count
//! formula (`split_k = cores·2 / workgroups_y`): the rest of upstream's logic (rounding the
//! split length to Bc, the scratch layout, the reduce dispatch) is applied to the forced value,
//! for any KV and every path, so the split path and `flash_attn_split_k_reduce.comp` are
//! tested too.

use vkdiff_reference::ops::flash_attn::{check, Alibi, FlashAttnInputs};
use vkdiff_reference::DType;

use super::{workgroups, KernelRun};
use crate::caps::DeviceCaps;
use crate::compile::{ShaderTree, ShaderVariant, TargetEnv};
use crate::context::{Gpu, PipelineDesc};
use crate::error::{GpuError, Result};

/// Head sizes upstream creates pipelines for (`supports_op`).
pub const HEAD_SIZES: [usize; 6] = [64, 80, 96, 112, 128, 256];

/// Which flash-attention implementation (§9.6 step 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Path {
    /// `flash_attn.comp`: f32 arithmetic, subgroup shuffle required (upstream's).
    Scalar,
    /// `flash_attn_cm1.comp`: KHR cooperative matrices, subgroup scope, 16×16×16 f16.
    Cm1,
    /// `flash_attn_cm2.comp`: NV cooperative matrix 2, workgroup scope.
    Cm2,
}

impl Path {
    /// Variant-name suffix (`_cm1`, `_cm2`).
    pub fn suffix(self) -> &'static str {
        match self {
            Path::Scalar => "",
            Path::Cm1 => "_cm1",
            Path::Cm2 => "_cm2",
        }
    }

    /// K/V types the host creates pipelines for on this path.
    pub fn kv_types(self) -> &'static [DType] {
        match self {
            Path::Scalar | Path::Cm1 => &SCALAR_KV_TYPES,
            Path::Cm2 => &CM2_KV_TYPES,
        }
    }

    /// Largest GQA ratio the host folds into one workgroup (§9.6 step 2).
    pub fn max_gqa(self) -> usize {
        match self {
            Path::Cm2 => 32,
            _ => 8,
        }
    }
}

/// K/V types the scalar and cm1 paths have pipelines for (f16, q4_0, q8_0).
pub const SCALAR_KV_TYPES: [DType; 3] = [DType::F16, DType::Q4_0, DType::Q8_0];

/// K/V types the cm2 path has pipelines for.
pub const CM2_KV_TYPES: [DType; 7] = [
    DType::F16,
    DType::Q4_0,
    DType::Q4_1,
    DType::Q5_0,
    DType::Q5_1,
    DType::Q8_0,
    DType::Iq4Nl,
];

/// The SPIR-V variant `flash_attn_f32_f16_<kv>[_f16acc][_cm1|_cm2]` with the generator's
/// defines (§9.2). The scalar path always runs the f32-accumulator one (§12 item 8).
pub fn variant(path: Path, kv: DType, f16acc: bool) -> ShaderVariant {
    let acc = if f16acc { "float16_t" } else { "float" };
    let mut defines: Vec<(String, String)> = ["FLOAT_TYPE", "Q_TYPE", "D_TYPE"]
        .iter()
        .map(|k| (k.to_string(), "float".to_string()))
        .collect();
    defines.push(("ACC_TYPE".into(), acc.into()));
    if path == Path::Cm1 {
        let v4 = if f16acc { "f16vec4" } else { "vec4" };
        defines.push(("ACC_TYPEV4".into(), v4.into()));
        defines.push(("COOPMAT".into(), "1".into()));
    }
    if kv.is_quantized() {
        let t = kv.name().to_uppercase();
        defines.push((format!("DATA_A_{t}"), "1".to_string()));
        if path == Path::Cm2 {
            defines.push(("DEQUANTFUNC".into(), format!("dequantFunc{t}")));
        }
        defines.push(("BLOCK_SIZE".to_string(), format!("QUANT_K_{t}")));
    }
    let refs: Vec<(&str, &str)> = defines
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let file = match path {
        Path::Scalar => "flash_attn.comp",
        Path::Cm1 => "flash_attn_cm1.comp",
        Path::Cm2 => "flash_attn_cm2.comp",
    };
    let acc_suffix = if f16acc { "_f16acc" } else { "" };
    let mut v = ShaderVariant::new(
        format!(
            "flash_attn_f32_f16_{}{acc_suffix}{}",
            kv.name(),
            path.suffix()
        ),
        file,
        &refs,
    );
    // §1.1: cm2 targets vulkan1.3; cm1 is compiled without -O.
    if path == Path::Cm2 {
        v.target = TargetEnv::Vulkan13;
    }
    if path == Path::Cm1 {
        v.optimize = false;
    }
    v
}

/// The split-k reduce (`fa_split_k_reduce`).
pub fn reduce_variant() -> ShaderVariant {
    ShaderVariant::new("fa_split_k_reduce", "flash_attn_split_k_reduce.comp", &[])
}

/// One row of the tile table (§9.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tiles {
    /// WorkGroupSize.
    pub wg: u32,
    /// Query rows per workgroup.
    pub br: u32,
    /// Keys per tile.
    pub bc: u32,
}

/// The tile table of §9.5 for head size `d` and K/V type `kv`.
pub fn tiles(path: Path, small_rows: bool, d: usize, kv: DType) -> Tiles {
    let t = |wg, br, bc| Tiles { wg, br, bc };
    match (path, small_rows) {
        (Path::Scalar, true) => t(128, 1, 64),
        (Path::Scalar, false) => t(128, 8, 32),
        (Path::Cm1, true) => t(128, 1, 64),
        (Path::Cm1, false) => t(128, 16, 64),
        (Path::Cm2, true) => t(if d % 32 == 0 { 256 } else { 128 }, 32, 32),
        (Path::Cm2, false) => t(
            128,
            64,
            if kv.is_quantized() || d == 256 {
                32
            } else {
                64
            },
        ),
    }
}

/// D_split = min(min(sg, 8), lsb(D)/4): 8 for D = 64/96/128/256, 4 for 80/112 (sg ≥ 8).
pub fn d_split(caps: &DeviceCaps, d: usize) -> u32 {
    let lsb = 1u32 << (d as u32).trailing_zeros();
    caps.subgroup_size.min(8).min(lsb / 4).max(1)
}

/// Specialization constants {WorkGroupSize, Br, Bc, D, Clamp, D_split}; Clamp is 1 for the
/// unaligned pipeline.
pub fn spec_constants(caps: &DeviceCaps, d: usize, t: Tiles, aligned: bool) -> [u32; 6] {
    [
        t.wg,
        t.br,
        t.bc,
        d as u32,
        u32::from(!aligned),
        d_split(caps, d),
    ]
}

/// The device has a subgroup-scope 16×16×16 f16×f16 cooperative-matrix shape accumulating in
/// f32 (`f32acc`) or f16 (upstream's `coopmat_support_16x16x16_f32acc/f16acc`).
pub fn has_16x16x16(caps: &DeviceCaps, f32acc: bool) -> bool {
    let c = if f32acc { "f32" } else { "f16" };
    caps.coopmat_shapes
        .iter()
        .any(|s| s.subgroup_scope && (s.m, s.n, s.k) == (16, 16, 16) && s.ab == "f16" && s.c == c)
}

/// Upstream's cm1 shared-memory estimate (§9.6 step 1; it uses Br = 8 although the pipeline
/// uses Br = 16, §12 item 15), in bytes.
pub fn cm1_shmem_estimate(d: usize, f32acc: bool) -> usize {
    let (br, bc) = (8, 64);
    let acc = if f32acc { 4 } else { 2 };
    128 * 4
        + 128 * 4 * acc
        + br * (d / 4 + 2) * 8
        + bc * (if d <= 128 { br + 8 } else { br }) * acc
        + bc * (d / 4 + 2) * 8
        + br * 4
}

/// Why the device cannot run `path` at all (the variant is skipped), or None. The scalar
/// fallback is upstream's, so the coopmat paths need its subgroup shuffle too.
pub fn path_requires(path: Path, caps: &DeviceCaps) -> Option<String> {
    let shuffle = (!caps.subgroup_shuffle)
        .then(|| "subgroup shuffle in the compute stage (scalar flash attention)".to_string());
    match path {
        Path::Scalar => shuffle,
        Path::Cm1 => {
            if !caps.coopmat {
                Some(
                    "VK_KHR_cooperative_matrix with cooperativeMatrix (cm1 flash attention)".into(),
                )
            } else if !(has_16x16x16(caps, true) || has_16x16x16(caps, false)) {
                Some(
                    "a subgroup-scope 16x16x16 f16 cooperative-matrix shape (cm1 flash attention)"
                        .into(),
                )
            } else if !caps.full_subgroups {
                Some("computeFullSubgroups (cm1 flash attention)".into())
            } else if !caps
                .subgroup_size_range
                .is_some_and(|(lo, hi)| lo <= 32 && 32 <= hi)
            {
                Some("subgroup size control reaching 32 (cm1 flash attention)".into())
            } else {
                shuffle
            }
        }
        Path::Cm2 => {
            if !caps.coopmat2 {
                Some("VK_NV_cooperative_matrix2 with workgroup scope, flexible dimensions, reductions, conversions, per-element operations, tensor addressing, block loads, bufferDeviceAddress and workgroup-scope f16 flexible shapes for 128 and 256 invocations (cm2 flash attention)".into())
            } else if caps.api_version < (1, 3, 0) {
                Some("Vulkan 1.3 (cm2 variants are SPIR-V 1.6)".into())
            } else if !(caps.inf_nan_preserve_f16 && caps.inf_nan_preserve_f32) {
                // vkdiff's cm2 shader adds the mask as a matrix and relies on IEEE infinities.
                Some("shaderSignedZeroInfNanPreserveFloat16 and Float32 (vkdiff's cm2 flash attention declares SignedZeroInfNanPreserve)".into())
            } else {
                shuffle
            }
        }
    }
}

/// Upstream's preconditions for running FLASH_ATTN_EXT on `path`: `supports_op`, the host's
/// asserts, and what the interface assumes without checking. A case that breaks one is not run.
pub fn precondition(path: Path, inputs: &FlashAttnInputs) -> std::result::Result<(), String> {
    precondition_types(path, inputs)?;
    precondition_shapes(inputs)
}

/// The pinned interface's rules on the K and V types and on sinks: one type for both, one with
/// a pipeline on `path`, no sinks (the July 2025 interface has no sinks binding).
pub fn precondition_types(path: Path, inputs: &FlashAttnInputs) -> std::result::Result<(), String> {
    let FlashAttnInputs { k, v, sinks, .. } = *inputs;
    if sinks.is_some() {
        return Err(
            "attention sinks: the July 2025 interface has no sinks binding (later ggml adds one)"
                .into(),
        );
    }
    if k.dtype() != v.dtype() {
        return Err(format!(
            "K ({}) and V ({}) of different types: the July 2025 interface has one K/V type per pipeline",
            k.dtype(),
            v.dtype()
        ));
    }
    if !path.kv_types().contains(&k.dtype()) {
        return Err(format!(
            "K/V type {} has no {path:?} pipeline in the July 2025 interface",
            k.dtype()
        ));
    }
    Ok(())
}

/// [`precondition`] but for the K/V types and sinks ([`precondition_types`]): ggml's own
/// checks, the pinned host's shape rules (head sizes, batches, contiguous rows, the mask's
/// layout).
pub fn precondition_shapes(inputs: &FlashAttnInputs) -> std::result::Result<(), String> {
    let FlashAttnInputs { q, k, v, mask, .. } = *inputs;
    check(inputs).map_err(|e| format!("ggml rejects the op: {e}"))?;
    if q.dtype() != DType::F32 {
        return Err(format!("q must be f32, not {}", q.dtype()));
    }
    let d = q.ne()[0];
    if !HEAD_SIZES.contains(&d) || v.ne()[0] != d {
        return Err(format!(
            "head sizes DK = {d}, DV = {}: both must be one of {HEAD_SIZES:?}",
            v.ne()[0]
        ));
    }
    if q.ne()[3] != 1 {
        return Err(format!("q.ne3 = {} (supports_op requires 1)", q.ne()[3]));
    }
    for (name, t) in [("q", q), ("k", k), ("v", v)] {
        if t.nb()[0] != t.dtype().block_bytes() {
            return Err(format!("{name}'s rows are not contiguous"));
        }
    }
    if let Some(m) = mask {
        let ne = m.ne();
        if ne[2] != 1 || ne[3] != 1 {
            return Err(format!(
                "mask with {}×{} planes: the kernel reads plane 0 only (no mask plane strides in the push constants at this commit)",
                ne[2], ne[3]
            ));
        }
        if ne[0] != k.ne()[1] {
            return Err(format!(
                "mask rows of {} elements for KV = {}: the kernel takes the mask row stride to be KV",
                ne[0],
                k.ne()[1]
            ));
        }
    }
    Ok(())
}

/// Everything the host decides for one dispatch (§9.6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The path that runs, after upstream's fallbacks.
    pub path: Path,
    /// f32 accumulators (always on the scalar path; else GGML_PREC_F32 was asked for).
    pub f32acc: bool,
    /// Rows pushed as N: neq1, or the GQA ratio in GQA mode.
    pub n: u32,
    /// 1, or neq2/nek2 in GQA mode.
    pub gqa_ratio: u32,
    /// Workgroups along y (heads, or head groups in GQA mode).
    pub workgroups_y: u32,
    /// The small-rows pipeline.
    pub small_rows: bool,
    /// Its tiles.
    pub tiles: Tiles,
    /// The aligned pipeline (Clamp = 0).
    pub aligned: bool,
    /// Number of KV splits (1: none).
    pub split_k: u32,
    /// Keys per split (KV without a split).
    pub split_kv: u32,
    /// Workgroups of the attention dispatch.
    pub groups: [u32; 3],
}

impl Plan {
    /// The SPIR-V variant this plan runs.
    pub fn variant(&self, kv: DType) -> ShaderVariant {
        variant(self.path, kv, !self.f32acc)
    }
}

/// Upstream's choices for `inputs` when `wanted` is the device's path and `prec_f32` says
/// whether the op asks GGML_PREC_F32; `force_split_k` replaces the core-count formula (see the
/// module notes).
pub fn plan(
    wanted: Path,
    caps: &DeviceCaps,
    prec_f32: bool,
    inputs: &FlashAttnInputs,
    force_split_k: Option<u32>,
) -> Plan {
    let FlashAttnInputs { q, k, v, .. } = *inputs;
    let (nq, nk, nv) = (q.ne(), k.ne(), v.ne());
    let d = nq[0];
    let kv = nk[1] as u32;
    // Step 1: cm1 needs the 16×16×16 shape for its accumulator and the shared-memory estimate.
    let mut path = wanted;
    if path == Path::Cm1
        && (!has_16x16x16(caps, prec_f32)
            || cm1_shmem_estimate(d, prec_f32) > caps.shared_memory as usize)
    {
        path = Path::Scalar;
    }
    // Step 2: GQA mode.
    let qk_ratio = nq[2] / nk[2];
    let mut n = nq[1] as u32;
    let mut gqa_ratio = 1;
    let mut workgroups_y = nq[2] as u32;
    if n == 1
        && qk_ratio > 1
        && qk_ratio <= path.max_gqa()
        && qk_ratio * nk[2] == nq[2]
        && nk[2] == nv[2]
        && nq[3] == 1
        && nk[3] == 1
        && nv[3] == 1
    {
        gqa_ratio = qk_ratio as u32;
        n = gqa_ratio;
        workgroups_y = (nq[2] / qk_ratio) as u32;
    }
    // Step 3: small rows; cm1 never runs them, cm2 not a single row.
    let small_limit = if path == Path::Cm2 { 32 } else { 1 };
    if (path == Path::Cm1 && n <= small_limit) || (path == Path::Cm2 && n == 1) {
        path = Path::Scalar;
    }
    let small_rows = n <= if path == Path::Cm2 { 32 } else { 1 };
    // Step 4.
    let f32acc = path == Path::Scalar || prec_f32;
    let t = tiles(path, small_rows, d, k.dtype());
    // Step 5.
    let stride = |x: &vkdiff_reference::tensor::Tensor| x.nb()[1] / x.dtype().block_bytes();
    let aligned = kv % t.bc == 0 && [q, k, v].iter().all(|x| stride(x) % 8 == 0);
    // Step 6.
    let neq1 = nq[1] as u32;
    let mut split_k = 1;
    let mut split_kv = kv;
    let mut groups_x = neq1;
    if let Some(forced) = force_split_k {
        // The host considers splitting only for a single query row (workgroups_x == 1).
        if neq1 == 1 && forced > 1 {
            let per = (kv / forced).max(1);
            let kv_split = per.div_ceil(t.bc) * t.bc;
            let k_num = kv.div_ceil(kv_split);
            if k_num > 1 {
                split_k = k_num;
                split_kv = kv_split;
                groups_x = k_num * t.br;
            }
        }
    }
    Plan {
        path,
        f32acc,
        n,
        gqa_ratio,
        workgroups_y,
        small_rows,
        tiles: t,
        aligned,
        split_k,
        split_kv,
        groups: workgroups([groups_x, workgroups_y, nq[3] as u32], [t.br, 1, 1]),
    }
}

/// The 32-word push-constant struct (`vk_flash_attn_push_constants`, §9.4), with its mixed
/// units: q row stride in f32 elements, K/V row strides in elements or blocks, the rest bytes.
pub fn push_constants(inputs: &FlashAttnInputs, plan: &Plan) -> [u32; 32] {
    let FlashAttnInputs {
        q,
        k,
        v,
        mask,
        params,
        ..
    } = *inputs;
    let (nq, nk, nv) = (q.ne(), k.ne(), v.ne());
    let (qb, kb, vb) = (q.nb(), k.nb(), v.nb());
    let u = |x: usize| x as u32;
    let f = |x: f32| x.to_bits();
    let alibi = Alibi::new(params.max_bias, nq[2]);
    [
        plan.n,
        u(nk[1]),
        u(nq[2]),
        u(nq[1]),
        u(nq[3]),
        u(nq[2]),
        u(nq[3]),
        u(nk[2]),
        u(nk[3]),
        u(nv[2]),
        u(nv[3]),
        mask.map_or(0, |m| u(m.ne()[1])),
        u(qb[1] / 4),
        u(qb[2]),
        u(qb[3]),
        u(kb[1] / k.dtype().block_bytes()),
        u(kb[2]),
        u(kb[3]),
        u(vb[1] / v.dtype().block_bytes()),
        u(vb[2]),
        u(vb[3]),
        mask.map_or(0, |m| u(m.nb()[1])),
        f(params.dot_scale()),
        f(params.max_bias),
        f(params.logit_softcap),
        u32::from(mask.is_some()),
        alibi.n_head_log2,
        f(alibi.m0),
        f(alibi.m1),
        plan.gqa_ratio,
        plan.split_kv,
        plan.split_k,
    ]
}

/// How to run one FLASH_ATTN_EXT.
#[derive(Debug, Clone, Copy)]
pub struct FlashAttnRun<'a> {
    /// The op's tensors and parameters.
    pub inputs: FlashAttnInputs<'a>,
    /// Force this split count for single-query cases (None: upstream's choice, which never
    /// splits without a known core count).
    pub force_split_k: Option<u32>,
    /// The device path to take (upstream's, or cm1 with coopmat2 disabled).
    pub path: Path,
    /// The op asks GGML_PREC_F32 (f32 accumulators on the coopmat paths).
    pub prec_f32: bool,
}

/// Runs the op; dst (D, H, N, ne3) f32 comes back in ggml order, and `variant` names the
/// pipeline that ran (after upstream's fallbacks).
pub fn run(gpu: &mut Gpu, tree: &mut ShaderTree, r: &FlashAttnRun) -> Result<KernelRun> {
    let inputs = &r.inputs;
    if let Some(reason) = path_requires(r.path, gpu.caps()) {
        return Err(GpuError::Unsupported(reason));
    }
    precondition(r.path, inputs).map_err(GpuError::Unsupported)?;
    let FlashAttnInputs { q, k, v, mask, .. } = *inputs;
    let plan = plan(r.path, gpu.caps(), r.prec_f32, inputs, r.force_split_k);
    let d = q.ne()[0];
    let variant = plan.variant(k.dtype());
    let spec = spec_constants(gpu.caps(), d, plan.tiles, plan.aligned);
    // cm1 pipelines ask full subgroups of 32 (§1.4).
    let cm1 = plan.path == Path::Cm1;
    let pipeline = gpu.pipeline(
        tree,
        &PipelineDesc {
            variant: &variant,
            spec: spec.to_vec(),
            push_size: 128,
            bindings: 5,
            disable_robustness: true,
            full_subgroups: cm1,
            subgroup_size: cm1.then_some(32),
        },
    )?;
    let reduce = if plan.split_k > 1 {
        let rv = reduce_variant();
        Some(gpu.pipeline(
            tree,
            &PipelineDesc {
                variant: &rv,
                spec: Vec::new(),
                push_size: 12,
                bindings: 2,
                disable_robustness: true,
                full_subgroups: false,
                subgroup_size: None,
            },
        )?)
    } else {
        None
    };
    let [_, n, h, ne3] = q.ne();
    let dst_bytes = d * h * n * ne3 * 4;
    let push = push_constants(inputs, &plan);
    let mut job = gpu.job();
    let (qb, kb, vb) = (
        job.input(q.data()),
        job.input(k.data()),
        job.input(v.data()),
    );
    // Without a mask the host binds q's buffer as a stand-in.
    let mb = mask.map_or(qb, |m| job.input(m.data()));
    let dst = job.output(dst_bytes);
    if let Some(reduce) = reduce {
        let scratch = job.output((d * h * 4 + h * 4 * 2) * plan.split_k as usize);
        job.dispatch(pipeline, &[qb, kb, vb, mb, scratch], &push, plan.groups)?;
        job.dispatch(
            reduce,
            &[scratch, dst],
            &[d as u32, h as u32, plan.split_k],
            workgroups([h as u32, 1, 1], [1, 1, 1]),
        )?;
    } else {
        job.dispatch(pipeline, &[qb, kb, vb, mb, dst], &push, plan.groups)?;
    }
    let out = job.submit()?;
    Ok(KernelRun {
        values: out.f32s(dst),
        overrun: !out.overruns.is_empty(),
        gpu_ns: out.gpu_ns,
        variant: format!(
            "{}{} ({} rows, {})",
            variant.name,
            if plan.aligned { " aligned" } else { "" },
            if plan.small_rows { "small" } else { "large" },
            if plan.split_k > 1 {
                format!("split_k {}", plan.split_k)
            } else {
                "no split".to_string()
            }
        ),
        validation: out.validation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use vkdiff_reference::ops::flash_attn::FlashAttnParams;
    use vkdiff_reference::tensor::Tensor;

    fn t(dtype: DType, ne: [usize; 4]) -> Tensor {
        let n: usize = ne.iter().product();
        Tensor::from_f32(dtype, ne, &vec![0.5; n]).unwrap()
    }

    fn inputs<'a>(q: &'a Tensor, k: &'a Tensor, v: &'a Tensor) -> FlashAttnInputs<'a> {
        FlashAttnInputs {
            q,
            k,
            v,
            mask: None,
            sinks: None,
            params: FlashAttnParams {
                scale: 1.0,
                max_bias: 0.0,
                logit_softcap: 0.0,
            },
        }
    }

    #[test]
    fn variant_names_and_defines_follow_the_generator() {
        let v = variant(Path::Scalar, DType::Q4_0, false);
        assert_eq!(v.name, "flash_attn_f32_f16_q4_0");
        let c = variant(Path::Cm2, DType::Iq4Nl, true);
        assert_eq!(c.name, "flash_attn_f32_f16_iq4_nl_f16acc_cm2");
        assert!(c
            .defines
            .contains(&("DEQUANTFUNC".to_string(), "dequantFuncIQ4_NL".to_string())));
        assert_eq!(c.target, TargetEnv::Vulkan13);
        let c1 = variant(Path::Cm1, DType::F16, false);
        assert_eq!(c1.name, "flash_attn_f32_f16_f16_cm1");
        assert!(!c1.optimize);
        assert!(v
            .defines
            .contains(&("DATA_A_Q4_0".to_string(), "1".to_string())));
        assert!(v
            .defines
            .contains(&("BLOCK_SIZE".to_string(), "QUANT_K_Q4_0".to_string())));
        assert_eq!(variant(Path::Scalar, DType::F16, false).defines.len(), 4);
    }

    /// Every flash_attn variant of every path (both accumulators) and the reduce compile to
    /// SPIR-V with our shaderc — no device needed, so lavapipe CI catches a cm1/cm2 shader that
    /// does not compile.
    #[test]
    fn every_variant_of_every_path_compiles() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shaders");
        let mut tree = ShaderTree::with_cache(dir, None);
        let mut failures = Vec::new();
        for path in [Path::Scalar, Path::Cm1, Path::Cm2] {
            for &kv in path.kv_types() {
                for f16acc in [false, true] {
                    let v = variant(path, kv, f16acc);
                    if let Err(e) = tree.spirv(&v) {
                        failures.push(format!("{}: {e}", v.name));
                    }
                }
            }
        }
        tree.spirv(&reduce_variant()).unwrap();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn coopmat_fallbacks_follow_the_host() {
        let shape = |c: &str| crate::caps::CoopmatShape {
            m: 16,
            n: 16,
            k: 16,
            ab: "f16".into(),
            c: c.into(),
            subgroup_scope: true,
        };
        let caps = DeviceCaps {
            subgroup_size: 32,
            shared_memory: 48 * 1024,
            coopmat: true,
            coopmat_shapes: vec![shape("f16"), shape("f32")],
            ..Default::default()
        };
        let (k, v) = (
            t(DType::F16, [64, 100, 2, 1]),
            t(DType::F16, [64, 100, 2, 1]),
        );
        // cm1, several rows: stays cm1 with Br = 16; one row: scalar; GQA: cm1 with N = 4.
        let q = t(DType::F32, [64, 5, 2, 1]);
        let p = plan(Path::Cm1, &caps, false, &inputs(&q, &k, &v), None);
        assert_eq!((p.path, p.tiles.br, p.f32acc), (Path::Cm1, 16, false));
        let q1 = t(DType::F32, [64, 1, 2, 1]);
        let p = plan(Path::Cm1, &caps, true, &inputs(&q1, &k, &v), None);
        assert_eq!((p.path, p.f32acc), (Path::Scalar, true));
        let q8 = t(DType::F32, [64, 1, 8, 1]);
        let p = plan(Path::Cm1, &caps, false, &inputs(&q8, &k, &v), None);
        assert_eq!((p.path, p.n), (Path::Cm1, 4));
        // No f32-accumulator shape: GGML_PREC_F32 falls back to scalar.
        let f16_only = DeviceCaps {
            coopmat_shapes: vec![shape("f16")],
            ..caps.clone()
        };
        let p = plan(Path::Cm1, &f16_only, true, &inputs(&q, &k, &v), None);
        assert_eq!(p.path, Path::Scalar);
        // cm2: N = 1 is scalar, GQA ratio 4 small rows, 40 rows large (Bc 64 for f16, D 64).
        let p = plan(Path::Cm2, &caps, false, &inputs(&q1, &k, &v), None);
        assert_eq!(p.path, Path::Scalar);
        let p = plan(Path::Cm2, &caps, false, &inputs(&q8, &k, &v), None);
        assert_eq!(
            (p.path, p.small_rows, p.tiles),
            (
                Path::Cm2,
                true,
                Tiles {
                    wg: 256,
                    br: 32,
                    bc: 32
                }
            )
        );
        let q40 = t(DType::F32, [64, 40, 2, 1]);
        let p = plan(Path::Cm2, &caps, false, &inputs(&q40, &k, &v), None);
        assert_eq!((p.small_rows, p.tiles.bc, p.groups), (false, 64, [1, 2, 1]));
    }

    #[test]
    fn d_split_is_lowest_set_bit_over_four_capped_by_subgroup() {
        let caps = DeviceCaps {
            subgroup_size: 8,
            ..Default::default()
        };
        let got: Vec<u32> = HEAD_SIZES.iter().map(|&d| d_split(&caps, d)).collect();
        assert_eq!(got, vec![8, 4, 8, 4, 8, 8]);
    }

    #[test]
    fn gqa_rewrite_and_split() {
        // One query, 8 heads over 2 K/V heads: GQA mode with ratio 4, large rows.
        let (q, k, v) = (
            t(DType::F32, [64, 1, 8, 1]),
            t(DType::F16, [64, 100, 2, 1]),
            t(DType::F16, [64, 100, 2, 1]),
        );
        let p = plan(
            Path::Scalar,
            &DeviceCaps::default(),
            false,
            &inputs(&q, &k, &v),
            None,
        );
        assert_eq!((p.n, p.gqa_ratio, p.workgroups_y), (4, 4, 2));
        assert!(!p.small_rows && p.split_k == 1 && p.groups == [1, 2, 1]);
        // Forced split 3: split_kv = roundup(100/3 = 33, 32) = 64, so 2 splits.
        let p = plan(
            Path::Scalar,
            &DeviceCaps::default(),
            false,
            &inputs(&q, &k, &v),
            Some(3),
        );
        assert_eq!((p.split_k, p.split_kv, p.groups), (2, 64, [2, 2, 1]));
        // Several queries never split.
        let q3 = t(DType::F32, [64, 3, 8, 1]);
        let p = plan(
            Path::Scalar,
            &DeviceCaps::default(),
            false,
            &inputs(&q3, &k, &v),
            Some(3),
        );
        assert_eq!((p.split_k, p.gqa_ratio, p.groups), (1, 1, [1, 8, 1]));
    }

    #[test]
    fn push_constants_mix_units() {
        let (q, k, v) = (
            t(DType::F32, [64, 2, 2, 1]),
            t(DType::Q8_0, [64, 64, 2, 1]),
            t(DType::Q8_0, [64, 64, 2, 1]),
        );
        let i = inputs(&q, &k, &v);
        let p = plan(Path::Scalar, &DeviceCaps::default(), false, &i, None);
        let pc = push_constants(&i, &p);
        assert_eq!(pc[12], 64, "nb01 in f32 elements");
        assert_eq!(pc[13], 64 * 2 * 4, "nb02 in bytes");
        assert_eq!(pc[15], 2, "nb11 in blocks");
        assert_eq!(pc[16], 2 * 34 * 64, "nb12 in bytes");
        assert_eq!(pc[26], 2, "n_head_log2 is 2^⌊log₂ 2⌋");
        assert!(
            !p.aligned,
            "KV = 64 is a multiple of Bc = 32 but nb11 = 2 blocks is not of 8"
        );
    }
}
