//! What a device can do, probed once: the facts that decide which kernel variants run on it
//! (upstream's device classification, §1.5 of docs/interface.md) and which are skipped.

use std::fmt;

/// One cooperative-matrix shape the driver reports (VK_KHR_cooperative_matrix).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CoopmatShape {
    /// Rows of A and C.
    pub m: u32,
    /// Columns of B and C.
    pub n: u32,
    /// Inner dimension.
    pub k: u32,
    /// Type of A and B ("f16", "bf16", "i8", ...).
    pub ab: String,
    /// Type of C and the result.
    pub c: String,
    /// Subgroup scope (the only scope upstream uses).
    pub subgroup_scope: bool,
}

/// One workgroup-scope flexible-dimension shape of VK_NV_cooperative_matrix2.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CoopmatFlexShape {
    /// M must be a multiple of this.
    pub m_granularity: u32,
    /// N must be a multiple of this.
    pub n_granularity: u32,
    /// K must be a multiple of this.
    pub k_granularity: u32,
    /// Type of A and B.
    pub ab: String,
    /// Type of C.
    pub c: String,
    /// Type of the result.
    pub result: String,
    /// Workgroup scope.
    pub workgroup_scope: bool,
    /// Workgroup size the shape is for.
    pub invocations: u32,
}

/// Upstream's cm2 shape check (§1.5): workgroup-scope f16×f16 shapes with f16 and with f32
/// accumulators for 128 invocations (granularity M ≤ 32, N ≤ 16, K ≤ 16) and for 256
/// (M ≤ 32, N ≤ 32, K ≤ 16), and a flexible maximum dimension of at least 512.
pub fn coopmat2_flexible_ok(shapes: &[CoopmatFlexShape], max_dimension: u32) -> bool {
    let has = |inv: u32, acc: &str, (m, n, k): (u32, u32, u32)| {
        shapes.iter().any(|s| {
            s.workgroup_scope
                && s.invocations == inv
                && s.ab == "f16"
                && s.c == acc
                && s.result == acc
                && s.m_granularity <= m
                && s.n_granularity <= n
                && s.k_granularity <= k
        })
    };
    ["f16", "f32"]
        .iter()
        .all(|acc| has(128, acc, (32, 16, 16)) && has(256, acc, (32, 32, 16)))
        && max_dimension >= 512
}

/// The device facts vkdiff needs, printed by `vkdiff devices`.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct DeviceCaps {
    /// Device name as the driver reports it.
    pub name: String,
    /// Driver name and info.
    pub driver: String,
    /// "discrete", "integrated", "virtual", "cpu" or "other".
    pub kind: String,
    /// Vulkan API version (major, minor, patch).
    pub api_version: (u32, u32, u32),
    /// Default subgroup size (upstream's `sg`).
    pub subgroup_size: u32,
    /// Range selectable with subgroup size control (min, max), when supported.
    pub subgroup_size_range: Option<(u32, u32)>,
    /// computeFullSubgroups.
    pub full_subgroups: bool,
    /// Subgroup shuffle in the compute stage (scalar flash attention needs it).
    pub subgroup_shuffle: bool,
    /// Subgroup arithmetic in the compute stage.
    pub subgroup_arithmetic: bool,
    /// Clustered subgroup operations in the compute stage (ggml's integer-dot flash attention
    /// needs them).
    pub subgroup_clustered: bool,
    /// maxComputeSharedMemorySize in bytes.
    pub shared_memory: u32,
    /// maxComputeWorkGroupCount.
    pub max_workgroup_count: [u32; 3],
    /// maxComputeWorkGroupInvocations.
    pub max_workgroup_invocations: u32,
    /// maxStorageBufferRange.
    pub max_storage_buffer_range: u32,
    /// shaderFloat16 (upstream's `fp16`).
    pub fp16: bool,
    /// shaderInt8.
    pub int8: bool,
    /// shaderInt16.
    pub int16: bool,
    /// shaderInt64.
    pub int64: bool,
    /// storageBuffer8BitAccess.
    pub storage8: bool,
    /// storageBuffer16BitAccess (mandatory for upstream).
    pub storage16: bool,
    /// Integer dot product extension with 4x8-bit packed signed acceleration.
    pub integer_dot: bool,
    /// VK_KHR_cooperative_matrix with the cooperativeMatrix feature.
    pub coopmat: bool,
    /// Shapes reported for VK_KHR_cooperative_matrix.
    pub coopmat_shapes: Vec<CoopmatShape>,
    /// VK_NV_cooperative_matrix2 with all seven features upstream requires, bufferDeviceAddress
    /// and the flexible-dimension shapes of [`coopmat2_flexible_ok`].
    pub coopmat2: bool,
    /// VK_NV_cooperative_matrix2's flexible-dimension shapes (empty without the extension).
    #[serde(default)]
    pub coopmat2_flexible: Vec<CoopmatFlexShape>,
    /// cooperativeMatrixFlexibleDimensionsMaxDimension (0 without the extension).
    #[serde(default)]
    pub coopmat2_max_dimension: u32,
    /// VK_KHR_shader_bfloat16 with shaderBFloat16Type.
    pub bf16: bool,
    /// bf16 cooperative matrices (shaderBFloat16CooperativeMatrix).
    pub bf16_coopmat: bool,
    /// VK_EXT_pipeline_robustness (lets pipelines turn robust buffer access off, as upstream does).
    pub pipeline_robustness: bool,
    /// VK_KHR_pipeline_executable_properties with pipelineExecutableInfo: the driver reports
    /// each pipeline's compiler statistics (registers, spills, ...), which bench prints.
    #[serde(default)]
    pub pipeline_statistics: bool,
    /// timestampComputeAndGraphics and the period in ns.
    pub timestamp_period_ns: Option<f32>,
    /// shaderSignedZeroInfNanPreserveFloat16 (Vulkan 1.2 float controls): a shader may declare
    /// that f16 arithmetic on ±∞ and NaN follows IEEE 754. Without the declaration Vulkan leaves
    /// such results undefined, which is why our flash attention tests a −∞ mask by its bits
    /// instead of adding it (found on the H100 on 2026-11-28).
    #[serde(default)]
    pub inf_nan_preserve_f16: bool,
    /// The same for f32 (shaderSignedZeroInfNanPreserveFloat32).
    #[serde(default)]
    pub inf_nan_preserve_f32: bool,
}

impl DeviceCaps {
    /// Upstream's device class: "cm2", "cm1" or "scalar" (with fp16 or fp32 arithmetic).
    pub fn class(&self) -> &'static str {
        match (self.coopmat2, self.coopmat, self.fp16) {
            (true, _, _) => "cm2",
            (false, true, _) => "cm1",
            (false, false, true) => "scalar-fp16",
            (false, false, false) => "scalar-fp32",
        }
    }
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

impl fmt::Display for DeviceCaps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (ma, mi, pa) = self.api_version;
        writeln!(f, "{} ({}, {})", self.name, self.kind, self.driver)?;
        writeln!(f, "  Vulkan {ma}.{mi}.{pa}, class {}", self.class())?;
        let range = self
            .subgroup_size_range
            .map(|(a, b)| format!(", control {a}..{b}"))
            .unwrap_or_default();
        writeln!(
            f,
            "  subgroup size {}{range}, full subgroups {}, shuffle {}, arithmetic {}, clustered {}",
            self.subgroup_size,
            yes(self.full_subgroups),
            yes(self.subgroup_shuffle),
            yes(self.subgroup_arithmetic),
            yes(self.subgroup_clustered)
        )?;
        writeln!(
            f,
            "  shared memory {} KiB, workgroup ≤ {} invocations, counts {:?}",
            self.shared_memory / 1024,
            self.max_workgroup_invocations,
            self.max_workgroup_count
        )?;
        writeln!(
            f,
            "  fp16 arithmetic {}, int8 {}, int16 {}, int64 {}, 8-bit storage {}, 16-bit storage {}, integer dot {}",
            yes(self.fp16),
            yes(self.int8),
            yes(self.int16),
            yes(self.int64),
            yes(self.storage8),
            yes(self.storage16),
            yes(self.integer_dot)
        )?;
        writeln!(f, "  KHR cooperative matrix: {}", yes(self.coopmat))?;
        for s in &self.coopmat_shapes {
            let scope = if s.subgroup_scope {
                "subgroup"
            } else {
                "other scope"
            };
            writeln!(
                f,
                "    {}x{}x{} {}×{} → {} ({scope})",
                s.m, s.n, s.k, s.ab, s.ab, s.c
            )?;
        }
        writeln!(
            f,
            "  NV cooperative matrix 2: {} (flexible max dimension {})",
            yes(self.coopmat2),
            self.coopmat2_max_dimension
        )?;
        for s in &self.coopmat2_flexible {
            writeln!(
                f,
                "    granularity {}x{}x{} {}×{} + {} → {} ({} invocations{})",
                s.m_granularity,
                s.n_granularity,
                s.k_granularity,
                s.ab,
                s.ab,
                s.c,
                s.result,
                s.invocations,
                if s.workgroup_scope { ", workgroup" } else { "" }
            )?;
        }
        writeln!(
            f,
            "  bf16: {} (cooperative matrix {})",
            yes(self.bf16),
            yes(self.bf16_coopmat)
        )?;
        writeln!(
            f,
            "  pipeline robustness control: {}",
            yes(self.pipeline_robustness)
        )?;
        writeln!(
            f,
            "  pipeline statistics (executable properties): {}",
            yes(self.pipeline_statistics)
        )?;
        writeln!(
            f,
            "  float controls: signed zero, Inf and NaN preserved in f16 {}, f32 {}",
            yes(self.inf_nan_preserve_f16),
            yes(self.inf_nan_preserve_f32)
        )?;
        match self.timestamp_period_ns {
            Some(p) => write!(f, "  timestamps: {p} ns/tick"),
            None => write!(f, "  timestamps: no"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flex(inv: u32, acc: &str, m: u32, n: u32) -> CoopmatFlexShape {
        CoopmatFlexShape {
            m_granularity: m,
            n_granularity: n,
            k_granularity: 16,
            ab: "f16".into(),
            c: acc.into(),
            result: acc.into(),
            workgroup_scope: true,
            invocations: inv,
        }
    }

    #[test]
    fn coopmat2_needs_both_accumulators_at_both_workgroup_sizes() {
        let mut shapes = vec![
            flex(128, "f16", 16, 16),
            flex(128, "f32", 16, 16),
            flex(256, "f16", 32, 32),
            flex(256, "f32", 32, 32),
        ];
        assert!(coopmat2_flexible_ok(&shapes, 512));
        assert!(!coopmat2_flexible_ok(&shapes, 256), "max dimension");
        shapes[1] = flex(128, "f32", 32, 32);
        assert!(
            !coopmat2_flexible_ok(&shapes, 512),
            "N granularity 32 at 128 invocations"
        );
    }
}
