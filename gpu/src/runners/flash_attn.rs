//! Flash attention (`flash_attn.comp` + `flash_attn_split_k_reduce.comp`, §9 of the interface
//! notes): upstream's host logic (`ggml_vk_flash_attn`) for the **scalar path** — variant and
//! defines, pipeline choice (small/large rows, aligned/unaligned), specialization constants,
//! the GQA rewrite, split-k and its reduce dispatch, the 128-byte push-constant struct.
//!
//! The path is a parameter ([`Path`]) so the coopmat paths can be added beside it: their
//! variants, tile table rows and dispatch differ, the push constants and bindings do not.
//!
//! **split_k.** Upstream splits the keys of a single query over several workgroups when the
//! device reports its shader core count (NVIDIA SM builtins or AMD core properties) and
//! KV ≥ 512. vkdiff does not probe the core count, so — as on lavapipe, which has none — the
//! natural choice never splits. [`FlashAttnRun::force_split_k`] stands in for the core-count
//! formula (`split_k = cores·2 / workgroups_y`): the rest of upstream's logic (rounding the
//! split length to Bc, the scratch layout, the reduce dispatch) is applied to the forced value,
//! for any KV, so the split path and `flash_attn_split_k_reduce.comp` are tested too.

use vkdiff_reference::ops::flash_attn::{check, Alibi, FlashAttnInputs};
use vkdiff_reference::DType;

use super::{workgroups, KernelRun};
use crate::caps::DeviceCaps;
use crate::compile::{ShaderTree, ShaderVariant};
use crate::context::{Gpu, PipelineDesc};
use crate::error::{GpuError, Result};

/// Head sizes upstream creates pipelines for (`supports_op`).
pub const HEAD_SIZES: [usize; 6] = [64, 80, 96, 112, 128, 256];

/// Which flash-attention implementation (§9.6 step 1). Only the scalar path is implemented
/// here; cm1 (`flash_attn_cm1.comp`) and cm2 (`flash_attn_cm2.comp`) add their own tile rows,
/// variants and requirements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// `flash_attn.comp`: f32 arithmetic, subgroup shuffle required.
    Scalar,
}

/// K/V types the scalar path has pipelines for (f16, q4_0, q8_0; the others are cm2-only).
pub const SCALAR_KV_TYPES: [DType; 3] = [DType::F16, DType::Q4_0, DType::Q8_0];

/// The variant the host selects on the scalar path for K/V type `kv`: always the f32
/// accumulator one (`flash_attn_f32_f16_<kv>`; the `_f16acc` SPIR-V is compiled but never used
/// there, §12.8).
pub fn variant(kv: DType) -> ShaderVariant {
    let mut defines: Vec<(String, String)> = ["FLOAT_TYPE", "Q_TYPE", "D_TYPE", "ACC_TYPE"]
        .iter()
        .map(|k| (k.to_string(), "float".to_string()))
        .collect();
    if kv.is_quantized() {
        let t = kv.name().to_uppercase();
        defines.push((format!("DATA_A_{t}"), "1".to_string()));
        defines.push(("BLOCK_SIZE".to_string(), format!("QUANT_K_{t}")));
    }
    let refs: Vec<(&str, &str)> = defines
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    ShaderVariant::new(
        format!("flash_attn_f32_f16_{}", kv.name()),
        "flash_attn.comp",
        &refs,
    )
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

/// The scalar path's tiles: small rows (N ≤ 1) 128 × Br 1 × Bc 64, else 128 × 8 × 32.
pub fn tiles(path: Path, small_rows: bool) -> Tiles {
    match (path, small_rows) {
        (Path::Scalar, true) => Tiles {
            wg: 128,
            br: 1,
            bc: 64,
        },
        (Path::Scalar, false) => Tiles {
            wg: 128,
            br: 8,
            bc: 32,
        },
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

/// Upstream's preconditions for running FLASH_ATTN_EXT on the scalar path: `supports_op`, the
/// host's asserts, and what the interface assumes without checking. A case that breaks one is
/// not run.
pub fn precondition(inputs: &FlashAttnInputs) -> std::result::Result<(), String> {
    let FlashAttnInputs { q, k, v, mask, .. } = *inputs;
    check(inputs).map_err(|e| format!("ggml rejects the op: {e}"))?;
    if q.dtype() != DType::F32 {
        return Err(format!("q must be f32, not {}", q.dtype()));
    }
    if k.dtype() != v.dtype() {
        return Err(format!(
            "K ({}) and V ({}) must have the same type",
            k.dtype(),
            v.dtype()
        ));
    }
    if !SCALAR_KV_TYPES.contains(&k.dtype()) {
        return Err(format!(
            "K/V type {} has no scalar pipeline (cm2 only)",
            k.dtype()
        ));
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
    /// The path.
    pub path: Path,
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

/// Upstream's choices for `inputs` on `path`; `force_split_k` replaces the core-count formula
/// (see the module notes).
pub fn plan(path: Path, inputs: &FlashAttnInputs, force_split_k: Option<u32>) -> Plan {
    let FlashAttnInputs { q, k, v, .. } = *inputs;
    let (nq, nk, nv) = (q.ne(), k.ne(), v.ne());
    let kv = nk[1] as u32;
    let max_gqa = 8;
    let qk_ratio = nq[2] / nk[2];
    let mut n = nq[1] as u32;
    let mut gqa_ratio = 1;
    let mut workgroups_y = nq[2] as u32;
    if n == 1
        && qk_ratio > 1
        && qk_ratio <= max_gqa
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
    let small_rows = n <= 1;
    let t = tiles(path, small_rows);
    let stride = |x: &vkdiff_reference::tensor::Tensor| x.nb()[1] / x.dtype().block_bytes();
    let aligned = kv % t.bc == 0 && [q, k, v].iter().all(|x| stride(x) % 8 == 0);
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
}

/// Runs the op on the scalar path; dst (D, H, N, ne3) f32 comes back in ggml order.
pub fn run(gpu: &mut Gpu, tree: &mut ShaderTree, r: &FlashAttnRun) -> Result<KernelRun> {
    let inputs = &r.inputs;
    precondition(inputs).map_err(GpuError::Unsupported)?;
    let FlashAttnInputs { q, k, v, mask, .. } = *inputs;
    let plan = plan(Path::Scalar, inputs, r.force_split_k);
    let d = q.ne()[0];
    let variant = variant(k.dtype());
    let spec = spec_constants(gpu.caps(), d, plan.tiles, plan.aligned);
    let pipeline = gpu.pipeline(
        tree,
        &PipelineDesc {
            variant: &variant,
            spec: spec.to_vec(),
            push_size: 128,
            bindings: 5,
            disable_robustness: true,
            full_subgroups: false,
            subgroup_size: None,
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
        variant: variant.name,
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
            params: FlashAttnParams {
                scale: 1.0,
                max_bias: 0.0,
                logit_softcap: 0.0,
            },
        }
    }

    #[test]
    fn variant_names_and_defines_follow_the_generator() {
        let v = variant(DType::Q4_0);
        assert_eq!(v.name, "flash_attn_f32_f16_q4_0");
        assert!(v
            .defines
            .contains(&("DATA_A_Q4_0".to_string(), "1".to_string())));
        assert!(v
            .defines
            .contains(&("BLOCK_SIZE".to_string(), "QUANT_K_Q4_0".to_string())));
        assert_eq!(variant(DType::F16).defines.len(), 4);
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
        let p = plan(Path::Scalar, &inputs(&q, &k, &v), None);
        assert_eq!((p.n, p.gqa_ratio, p.workgroups_y), (4, 4, 2));
        assert!(!p.small_rows && p.split_k == 1 && p.groups == [1, 2, 1]);
        // Forced split 3: split_kv = roundup(100/3 = 33, 32) = 64, so 2 splits.
        let p = plan(Path::Scalar, &inputs(&q, &k, &v), Some(3));
        assert_eq!((p.split_k, p.split_kv, p.groups), (2, 64, [2, 2, 1]));
        // Several queries never split.
        let q3 = t(DType::F32, [64, 3, 8, 1]);
        let p = plan(Path::Scalar, &inputs(&q3, &k, &v), Some(3));
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
        let p = plan(Path::Scalar, &i, None);
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
