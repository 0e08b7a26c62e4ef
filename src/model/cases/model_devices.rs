//! Device descriptions the case models plan against without opening a device: the unit tests,
//! and `vkdiff bench --host-only`, which times the host's work for an H100-like device.

use vkdiff_gpu::DeviceCaps;

/// A lavapipe-like device (subgroup 8, 32 KiB shared memory, fp16).
pub fn lavapipe() -> DeviceCaps {
    DeviceCaps {
        subgroup_size: 8,
        shared_memory: 32768,
        fp16: true,
        storage16: true,
        max_workgroup_count: [65535; 3],
        ..DeviceCaps::default()
    }
}

/// An H100-like cm2 device (the facts the plan reads); it runs the cm1 rows too (as with
/// GGML_VK_DISABLE_COOPMAT2).
pub fn h100() -> DeviceCaps {
    let shape = |c: &str| vkdiff_gpu::caps::CoopmatShape {
        m: 16,
        n: 16,
        k: 16,
        ab: "f16".into(),
        c: c.into(),
        subgroup_scope: true,
    };
    DeviceCaps {
        coopmat_shapes: vec![shape("f16"), shape("f32")],
        full_subgroups: true,
        subgroup_size: 32,
        shared_memory: 49152,
        fp16: true,
        storage16: true,
        coopmat: true,
        coopmat2: true,
        bf16: true,
        bf16_coopmat: true,
        max_workgroup_count: [65535; 3],
        ..DeviceCaps::default()
    }
}
