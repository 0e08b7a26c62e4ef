//! Matrix-vector MUL_MAT (`mul_mat_vec.comp` and the per-type K-quant files
//! `mul_mat_vec_q2_k.comp` … `mul_mat_vec_q6_k.comp`, §5 of docs/interface.md): one workgroup
//! computes NUM_ROWS rows of dst for NUM_COLS (= ne11 ≤ 8) columns of B, or for one batch when
//! ne11 = 1.

use vkdiff_reference::ops::mul_mat;
use vkdiff_reference::tensor::Tensor;
use vkdiff_reference::DType;

use super::{workgroups, KernelRun};
use crate::caps::DeviceCaps;
use crate::compile::{ShaderTree, ShaderVariant};
use crate::context::{Gpu, PipelineDesc};
use crate::error::{GpuError, Result};

/// The type's name as upstream's shader generator spells it (`type_names`, §13): ggml's name in
/// lower case, e.g. `q2_k` for q2_K. Variant names and per-type file names use it; the define is
/// `DATA_A_` + its upper case.
pub fn type_name(a: DType) -> String {
    a.name().to_lowercase()
}

/// The shader file the generator compiles for A type `a` (§5): a per-type body when the type
/// name ends in `_k` or starts with `iq1_`, `iq2_`, `iq3_`, else the generic `mul_mat_vec.comp`
/// (which includes iq4_nl and iq4_xs).
pub fn shader_file(a: DType) -> String {
    let t = type_name(a);
    if t.ends_with("_k") || ["iq1_", "iq2_", "iq3_"].iter().any(|p| t.starts_with(p)) {
        format!("mul_mat_vec_{t}.comp")
    } else {
        "mul_mat_vec.comp".into()
    }
}

/// The upstream variant for A type `a` and B type `b` (f32 or f16), e.g.
/// `mul_mat_vec_q4_0_f32_f32` compiled from `mul_mat_vec.comp` with `DATA_A_Q4_0=1`, or
/// `mul_mat_vec_q2_k_f16_f32` from `mul_mat_vec_q2_k.comp` with `DATA_A_Q2_K=1`.
pub fn variant(a: DType, b: DType) -> ShaderVariant {
    let (bt, bv2, bv4) = match b {
        DType::F16 => ("float16_t", "f16vec2", "f16vec4"),
        _ => ("float", "vec2", "vec4"),
    };
    let data_a = format!("DATA_A_{}", type_name(a).to_uppercase());
    ShaderVariant::new(
        format!("mul_mat_vec_{}_{}_f32", type_name(a), b.name()),
        shader_file(a),
        &[
            (&data_a, "1"),
            ("B_TYPE", bt),
            ("B_TYPE_VEC2", bv2),
            ("B_TYPE_VEC4", bv4),
            ("D_TYPE", "float"),
            ("FLOAT_TYPE", "float"),
        ],
    )
}

/// Specialization constants {BLOCK_SIZE, NUM_ROWS, NUM_COLS} as upstream picks them for
/// non-AMD, non-Intel devices (§5.4: rm_stdq = 1, rm_kq = 2, rm_iq = 2·rm_kq = 4; the K- and
/// i-quants get sg16 = max(sg, 16) invocations, since their bodies need 16 per super-block).
pub fn spec_constants(caps: &DeviceCaps, a: DType, num_cols: u32) -> [u32; 3] {
    let sg = caps.subgroup_size;
    let sg16 = sg.max(16);
    let (rm_stdq, rm_kq) = (1, 2);
    let rm_iq = 2 * rm_kq;
    let (block, rows) = match a {
        DType::F32 | DType::F16 | DType::Bf16 => (sg, 2),
        DType::Q4_0 | DType::Q4_1 | DType::Q5_0 | DType::Q5_1 => (sg, 2 * rm_stdq),
        DType::Q8_0 => (sg, rm_stdq),
        DType::Q2_K | DType::Q3_K | DType::Q4_K | DType::Q5_K | DType::Q6_K => (sg16, rm_kq),
        DType::Iq1S
        | DType::Iq1M
        | DType::Iq2Xxs
        | DType::Iq2Xs
        | DType::Iq2S
        | DType::Iq3Xxs
        | DType::Iq3S
        | DType::Iq4Nl
        | DType::Iq4Xs
        | DType::Mxfp4 => (sg16, rm_iq),
        // q8_1 and i32 are no mat-vec A types (the cases reject them before a pipeline is
        // made); a type added to the mat-vec list later must get its row above.
        _ => (sg, 1),
    };
    let (block, rows) = match crate::env::env().matvec_shape {
        Some(shape) if a.is_quantized() => shape,
        _ => (block, rows),
    };
    [block, rows, num_cols]
}

/// Preconditions upstream's host enforces before choosing this kernel (supports_op and the
/// mat-vec routing rule of §4.3); a case that breaks one is not run.
pub fn precondition(a: &Tensor, b: &Tensor) -> std::result::Result<(), String> {
    let (na, nb) = (a.ne(), b.ne());
    if !matches!(b.dtype(), DType::F32 | DType::F16) {
        return Err(format!(
            "B must be f32 or f16 for mat-vec, not {}",
            b.dtype()
        ));
    }
    if a.dtype() == DType::Bf16 && b.dtype() == DType::F16 {
        return Err("bf16 × f16 is rejected by supports_op".into());
    }
    if na[3] != nb[3] {
        return Err(format!(
            "ne03 = {} ≠ ne13 = {}: Vulkan does not broadcast dim 3",
            na[3], nb[3]
        ));
    }
    if !(nb[1] == 1 || (nb[1] <= 8 && nb[2] * nb[3] == 1)) {
        return Err(format!(
            "dst.ne1 = {} with {} batches is routed to the matrix-matrix kernel",
            nb[1],
            nb[2] * nb[3]
        ));
    }
    Ok(())
}

/// Runs dst = mul_mat(a, b) through the mat-vec kernel. B is made contiguous first, as
/// upstream's host does with a copy shader.
pub fn run(gpu: &mut Gpu, tree: &mut ShaderTree, a: &Tensor, b: &Tensor) -> Result<KernelRun> {
    super::own_tree_decodes(a.dtype())?;
    let ne = mul_mat::check(a, b).map_err(|e| GpuError::Unsupported(e.to_string()))?;
    precondition(a, b).map_err(GpuError::Unsupported)?;
    if !a.is_contiguous() {
        // ggml's host accepts it and takes mul_mat_vec_nc / p021 (f16) or copies A first;
        // this host does not model those routes (backend mode runs them).
        return Err(GpuError::Unsupported(
            "shader mode: a non-contiguous A goes to ggml's mul_mat_vec_nc/p021 kernels (f16) \
             or is copied first, which the pinned interface leaves out and vkdiff's shaders do \
             not have; backend mode (--ggml) runs it"
                .into(),
        ));
    }
    let b = b.to_contiguous();
    let ([k, m, ne02, _], [_, n, ne12, ne13]) = (a.ne(), b.ne());
    let batch_n = n > 1;
    let variant = variant(a.dtype(), b.dtype());
    let spec = spec_constants(gpu.caps(), a.dtype(), n as u32);
    let desc = PipelineDesc {
        variant: &variant,
        spec: spec.to_vec(),
        push_size: 44,
        bindings: 3,
        disable_robustness: a.dtype().is_quantized(),
        full_subgroups: false,
        subgroup_size: None,
    };
    let pipeline = gpu.pipeline(tree, &desc)?;
    let u = |x: usize| x as u32;
    let push = [
        u(k),
        u(k),
        u(k),
        u(m),
        if batch_n { 0 } else { u(k * m) },
        if batch_n { u(k) } else { u(k * n) },
        if batch_n { u(m) } else { u(m * n) },
        u(ne02),
        u(ne12),
        u(ne12 / ne02),
        u(ne13 / a.ne()[3]),
    ];
    // §5.5: rows beyond maxComputeWorkGroupCount[0] spread over 64 z-slices.
    let (groups_x, groups_z) = if m as u32 > gpu.caps().max_workgroup_count[0] {
        (m.div_ceil(64), 64)
    } else {
        (m, 1)
    };
    let groups = workgroups([u(groups_x), u(ne12 * ne13), groups_z], [spec[1], 1, 1]);
    let dst_bytes = ne.iter().product::<usize>() * 4;
    let mut job = gpu.job();
    let (ab, bb, db) = (
        job.input(a.data()),
        job.input(b.data()),
        job.output(dst_bytes),
    );
    job.dispatch(pipeline, &[ab, bb, db], &push, groups)?;
    let out = job.submit()?;
    Ok(KernelRun {
        values: out.f32s(db),
        overrun: !out.overruns.is_empty(),
        gpu_ns: out.gpu_ns,
        variant: variant.name,
        validation: out.validation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_quants_get_their_own_file_and_iq4_the_generic_one() {
        let v = variant(DType::Q2_K, DType::F32);
        assert_eq!(v.name, "mul_mat_vec_q2_k_f32_f32");
        assert_eq!(v.file, "mul_mat_vec_q2_k.comp");
        assert_eq!(v.defines[0], ("DATA_A_Q2_K".into(), "1".into()));
        let v = variant(DType::Q6_K, DType::F16);
        assert_eq!(v.name, "mul_mat_vec_q6_k_f16_f32");
        assert_eq!(v.file, "mul_mat_vec_q6_k.comp");
        assert!(v.defines.contains(&("B_TYPE".into(), "float16_t".into())));
        let v = variant(DType::Iq4Xs, DType::F32);
        assert_eq!(v.name, "mul_mat_vec_iq4_xs_f32_f32");
        assert_eq!(v.file, "mul_mat_vec.comp");
        assert_eq!(v.defines[0], ("DATA_A_IQ4_XS".into(), "1".into()));
        let v = variant(DType::Iq4Nl, DType::F16);
        assert_eq!(v.name, "mul_mat_vec_iq4_nl_f16_f32");
        assert_eq!(v.file, "mul_mat_vec.comp");
        let v = variant(DType::Q4_0, DType::F32);
        assert_eq!(
            (v.name.as_str(), v.file.as_str()),
            ("mul_mat_vec_q4_0_f32_f32", "mul_mat_vec.comp")
        );
    }

    #[test]
    fn spec_constants_follow_the_type_rows() {
        let caps = |sg| DeviceCaps {
            subgroup_size: sg,
            ..DeviceCaps::default()
        };
        // lavapipe (sg 8): K-quants and iq4 get sg16 = 16; NVIDIA (sg 32) keeps 32.
        assert_eq!(spec_constants(&caps(8), DType::Q4_K, 1), [16, 2, 1]);
        assert_eq!(spec_constants(&caps(32), DType::Q3_K, 3), [32, 2, 3]);
        assert_eq!(spec_constants(&caps(8), DType::Iq4Nl, 1), [16, 4, 1]);
        assert_eq!(spec_constants(&caps(64), DType::Iq4Xs, 8), [64, 4, 8]);
        assert_eq!(spec_constants(&caps(8), DType::Q4_0, 1), [8, 2, 1]);
        assert_eq!(spec_constants(&caps(8), DType::Q8_0, 2), [8, 1, 2]);
        assert_eq!(spec_constants(&caps(8), DType::F16, 1), [8, 2, 1]);
    }
}
