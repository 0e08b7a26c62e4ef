//! RWKV_WKV7 (`wkv7.comp`, variant `rwkv_wkv7_f32`): bindings r, w, k, v, a, b, state, dst;
//! push constants {B, T, C, H}; one workgroup per (sequence, head).

use vkdiff_reference::ops::wkv7::{Wkv7Dims, Wkv7Inputs};

use super::{workgroups, KernelRun};
use crate::compile::{ShaderTree, ShaderVariant};
use crate::context::{Gpu, PipelineDesc};
use crate::error::{GpuError, Result};

/// The one variant upstream compiles.
pub fn variant() -> ShaderVariant {
    ShaderVariant::new(
        "rwkv_wkv7_f32",
        "wkv7.comp",
        &[("A_TYPE", "float"), ("FLOAT_TYPE", "float")],
    )
}

/// Runs the kernel on `inputs`; dst is (C, T + S·B) f32.
pub fn run(gpu: &mut Gpu, tree: &mut ShaderTree, inputs: &Wkv7Inputs) -> Result<KernelRun> {
    let Wkv7Dims { s, h, t, seqs } = inputs
        .dims()
        .map_err(|e| GpuError::Unsupported(e.to_string()))?;
    let variant = variant();
    // Upstream passes {subgroup_size} although the shader declares no constant (interface.md
    // §10.5).
    let desc = PipelineDesc {
        variant: &variant,
        spec: vec![gpu.caps().subgroup_size],
        push_size: 16,
        bindings: 8,
        disable_robustness: false,
        full_subgroups: false,
        subgroup_size: None,
    };
    let pipeline = gpu.pipeline(tree, &desc)?;
    let c = s * h;
    let dst_bytes = c * (t + s * seqs) * 4;
    let mut job = gpu.job();
    let bufs: Vec<_> = [
        inputs.r,
        inputs.w,
        inputs.k,
        inputs.v,
        inputs.a,
        inputs.b,
        inputs.state,
    ]
    .iter()
    .map(|x| job.input(x.data()))
    .collect();
    let dst = job.output(dst_bytes);
    let bindings: Vec<_> = bufs.into_iter().chain([dst]).collect();
    let push = [seqs as u32, t as u32, c as u32, h as u32];
    job.dispatch(
        pipeline,
        &bindings,
        &push,
        workgroups([(seqs * h) as u32, 1, 1], [1, 1, 1]),
    )?;
    let out = job.submit()?;
    Ok(KernelRun {
        values: out.f32s(dst),
        overrun: !out.overruns.is_empty(),
        gpu_ns: out.gpu_ns,
        variant: variant.name,
        validation: out.validation,
    })
}
