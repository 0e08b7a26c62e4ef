//! Matrix-vector MUL_MAT (`mul_mat_vec.comp`, §5 of the interface notes): one workgroup computes
//! NUM_ROWS rows of dst for NUM_COLS (= ne11 ≤ 8) columns of B, or for one batch when ne11 = 1.

use vkdiff_reference::ops::mul_mat;
use vkdiff_reference::tensor::Tensor;
use vkdiff_reference::DType;

use super::{workgroups, KernelRun};
use crate::caps::DeviceCaps;
use crate::compile::{ShaderTree, ShaderVariant};
use crate::context::{Gpu, PipelineDesc};
use crate::error::{GpuError, Result};

/// The upstream variant for A type `a` and B type `b` (f32 or f16), e.g.
/// `mul_mat_vec_q4_0_f32_f32` compiled from `mul_mat_vec.comp` with `DATA_A_Q4_0=1`.
pub fn variant(a: DType, b: DType) -> ShaderVariant {
    let (bt, bv2, bv4) = match b {
        DType::F16 => ("float16_t", "f16vec2", "f16vec4"),
        _ => ("float", "vec2", "vec4"),
    };
    let data_a = format!("DATA_A_{}", a.name().to_uppercase());
    ShaderVariant::new(
        format!("mul_mat_vec_{}_{}_f32", a.name(), b.name()),
        "mul_mat_vec.comp",
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
/// non-AMD, non-Intel devices (§5.4: rm_stdq = 1, rm_kq = 2, rm_iq = 4).
pub fn spec_constants(caps: &DeviceCaps, a: DType, num_cols: u32) -> [u32; 3] {
    let sg = caps.subgroup_size;
    let (block, rows) = match a {
        DType::F32 | DType::F16 | DType::Bf16 => (sg, 2),
        DType::Q4_0 | DType::Q4_1 | DType::Q5_0 | DType::Q5_1 => (sg, 2),
        _ => (sg, 1),
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
    if !a.is_contiguous() {
        return Err("a non-contiguous A is routed to other kernels (nc/p021 or a copy)".into());
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
    let ne = mul_mat::check(a, b).map_err(|e| GpuError::Unsupported(e.to_string()))?;
    precondition(a, b).map_err(GpuError::Unsupported)?;
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
