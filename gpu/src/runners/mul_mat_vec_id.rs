//! Matrix-vector MUL_MAT_ID (`mul_mat_vec.comp` with `MUL_MAT_ID=1`, §5 of docs/interface.md):
//! upstream's path for a single token (ids.ne1 = 1, §4.3). Dispatch row y is expert slot s: the
//! workgroup multiplies expert ids[s]'s rows by b row s mod ne11 into dst row s. Only the first
//! token's ids are read.

use vkdiff_reference::ops::mul_mat_id;
use vkdiff_reference::tensor::Tensor;
use vkdiff_reference::DType;

use super::{mul_mat_vec, workgroups, KernelRun};
use crate::caps::DeviceCaps;
use crate::compile::{ShaderTree, ShaderVariant};
use crate::context::{Gpu, PipelineDesc};
use crate::error::{GpuError, Result};

/// The most expert slots Vulkan supports for MUL_MAT_ID (`supports_op`, §4.2).
pub const MAX_EXPERT_SLOTS: usize = 4096;

/// The upstream variant for experts of type `a`, e.g. `mul_mat_vec_id_q4_0_f32`: the f32-B
/// mat-vec variant of the same A type (same file and defines) plus `MUL_MAT_ID=1` (§5.1; there
/// is no f16-B ID variant).
pub fn variant(a: DType) -> ShaderVariant {
    let mut v = mul_mat_vec::variant(a, DType::F32);
    v.name = format!("mul_mat_vec_id_{}_f32", mul_mat_vec::type_name(a));
    v.defines.push(("MUL_MAT_ID".into(), "1".into()));
    v
}

/// Specialization constants {BLOCK_SIZE, NUM_ROWS}: the non-ID pipeline's, without NUM_COLS
/// (§5.4: the ID pipelines do not pass it, so the shader keeps its default of 1).
pub fn spec_constants(caps: &DeviceCaps, a: DType) -> Vec<u32> {
    mul_mat_vec::spec_constants(caps, a, 1)[..2].to_vec()
}

/// Preconditions upstream's host enforces before this kernel runs (supports_op, the
/// single-token routing rule of §4.3 and the host's asserts, §12 item 17); a case that breaks
/// one is not run.
pub fn precondition(a: &Tensor, b: &Tensor, ids: &Tensor) -> std::result::Result<(), String> {
    if a.dtype() == DType::Bf16 {
        return Err(
            "bf16 experts are routed to the matrix-matrix ID kernel (not in the mat-vec ID list)"
                .into(),
        );
    }
    if b.dtype() != DType::F32 {
        return Err(format!(
            "B must be f32 for the mat-vec ID kernel (upstream asserts), not {}",
            b.dtype()
        ));
    }
    let [n_used, n_tokens, ..] = ids.ne();
    if n_tokens != 1 {
        return Err(format!(
            "{n_tokens} tokens are routed to the matrix-matrix ID kernel (mat-vec ID takes one)"
        ));
    }
    if n_used > MAX_EXPERT_SLOTS {
        return Err(format!(
            "ids.ne0 = {n_used} expert slots exceed Vulkan's {MAX_EXPERT_SLOTS} (supports_op)"
        ));
    }
    if ids.ne()[3] != b.ne()[3] {
        return Err(format!(
            "ids.ne3 = {} ≠ b.ne3 = {} (supports_op)",
            ids.ne()[3],
            b.ne()[3]
        ));
    }
    if !a.is_contiguous() {
        return Err("non-contiguous experts are first copied by the host (not modelled)".into());
    }
    if ids.nb()[0] != 4 {
        return Err(format!(
            "ids must be densely packed along ne0 (nb0 = {})",
            ids.nb()[0]
        ));
    }
    Ok(())
}

/// Runs dst = mul_mat_id(as, b, ids) for one token through the mat-vec ID kernel. B is made
/// contiguous first, as upstream's host does with a copy shader.
pub fn run(
    gpu: &mut Gpu,
    tree: &mut ShaderTree,
    a: &Tensor,
    b: &Tensor,
    ids: &Tensor,
) -> Result<KernelRun> {
    super::own_tree_decodes(a.dtype())?;
    let ne = mul_mat_id::check(a, b, ids).map_err(|e| GpuError::Unsupported(e.to_string()))?;
    precondition(a, b, ids).map_err(GpuError::Unsupported)?;
    let b = b.to_contiguous();
    let [k, m, ..] = a.ne();
    let ne11 = b.ne()[1];
    let n_used = ids.ne()[0];
    let variant = variant(a.dtype());
    let spec = spec_constants(gpu.caps(), a.dtype());
    let desc = PipelineDesc {
        variant: &variant,
        spec: spec.clone(),
        push_size: 36,
        bindings: 4,
        disable_robustness: a.dtype().is_quantized(),
        full_subgroups: false,
        subgroup_size: None,
    };
    let pipeline = gpu.pipeline(tree, &desc)?;
    let u = |x: usize| x as u32;
    // vk_mat_vec_id_push_constants (§5.3 ID); strides count elements.
    let push = [
        u(k),          // ncols
        u(k),          // stride_a (unused)
        u(k),          // stride_b: between b rows
        u(m),          // stride_d: rows, and between dst rows (slots)
        u(k * m),      // batch_stride_a: elements per expert
        u(k * ne11),   // batch_stride_b
        u(m * n_used), // batch_stride_d
        u(n_used),     // nei0
        u(ne11),       // ne11
    ];
    // §5.5: (groups_x, nei0, groups_z); rows beyond maxComputeWorkGroupCount[0] spread over
    // 64 z-slices.
    let (groups_x, groups_z) = if m as u32 > gpu.caps().max_workgroup_count[0] {
        (m.div_ceil(64), 64)
    } else {
        (m, 1)
    };
    let groups = workgroups([u(groups_x), u(n_used), groups_z], [spec[1], 1, 1]);
    let dst_bytes = ne.iter().product::<usize>() * 4;
    let mut job = gpu.job();
    let (ab, bb, db, ib) = (
        job.input(a.data()),
        job.input(b.data()),
        job.output(dst_bytes),
        job.input(ids.data()),
    );
    job.dispatch(pipeline, &[ab, bb, db, ib], &push, groups)?;
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

    fn f32s(ne: [usize; 4]) -> Tensor {
        Tensor::from_f32(DType::F32, ne, &vec![0.0; ne.iter().product()]).unwrap()
    }

    fn ids(n_used: usize, n_tokens: usize) -> Tensor {
        Tensor::from_bytes(
            DType::I32,
            [n_used, n_tokens, 1, 1],
            vec![0; 4 * n_used * n_tokens],
        )
        .unwrap()
    }

    #[test]
    fn id_variant_is_the_f32_variant_plus_mul_mat_id() {
        let plain = mul_mat_vec::variant(DType::Q4_1, DType::F32);
        let id = variant(DType::Q4_1);
        assert_eq!(id.name, "mul_mat_vec_id_q4_1_f32");
        assert_eq!(id.file, plain.file);
        assert_eq!(id.defines[..plain.defines.len()], plain.defines[..]);
        assert_eq!(
            id.defines.last().unwrap(),
            &("MUL_MAT_ID".into(), "1".into())
        );
    }

    #[test]
    fn preconditions_name_upstreams_rules() {
        let a = f32s([4, 2, 3, 1]);
        let b = f32s([4, 1, 1, 1]);
        assert_eq!(precondition(&a, &b, &ids(2, 1)), Ok(()));
        let b16 = Tensor::from_f32(DType::F16, [4, 1, 1, 1], &[0.0; 4]).unwrap();
        assert!(precondition(&a, &b16, &ids(2, 1))
            .unwrap_err()
            .contains("B must be f32"));
        let a16 = Tensor::from_f32(DType::Bf16, [4, 2, 3, 1], &[0.0; 24]).unwrap();
        assert!(precondition(&a16, &b, &ids(2, 1))
            .unwrap_err()
            .contains("bf16"));
        let b2 = f32s([4, 1, 2, 1]);
        assert!(precondition(&a, &b2, &ids(2, 2))
            .unwrap_err()
            .contains("2 tokens"));
        assert!(precondition(&a, &b, &ids(4097, 1))
            .unwrap_err()
            .contains("4096"));
    }
}
