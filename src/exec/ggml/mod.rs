//! Backend mode (`--ggml DIR`): cases run through ggml's own Vulkan host (graph, pipeline
//! choice, dispatch) built from a checkout, instead of vkdiff's runners. The case model, the
//! reference and the error models are the same; only the driver changes ([`GgmlDriver`]).
//!
//! ggml keeps its device state per process and reads its path switches once, so each named
//! configuration runs in its own worker process (`vkdiff worker` with `VKDIFF_GGML_LIB` and
//! `VKDIFF_GGML_CONFIG` set); ggml aborts on errors, which the worker protocol already turns
//! into recorded `crash` outcomes.

pub mod build;
pub mod ffi;
pub mod identity;

use std::path::{Path, PathBuf};

use vkdiff_gpu::device::Instance;
use vkdiff_gpu::runners::KernelRun;
use vkdiff_gpu::{DeviceCaps, Gpu};

use serde::{Deserialize, Serialize};
use vkdiff_reference::tensor::Tensor;

use crate::model::driver::{Driver, GraphOp, Latitude, OwnRun};
use crate::model::outcome::Outcome;

pub use crate::model::config::{Config, CONFIGS};

/// ggml's switches for this path. Integer dot is always off: vkdiff has no error model
/// for q8_1-quantized B (MMQ/MMVQ). Fusion and graph rewrites are off (one-op graphs).
pub fn switches(config: Config) -> Vec<(&'static str, &'static str)> {
    let mut env = vec![
        ("GGML_VK_DISABLE_INTEGER_DOT_PRODUCT", "1"),
        ("GGML_VK_DISABLE_FUSION", "1"),
        ("GGML_VK_DISABLE_GRAPH_OPTIMIZE", "1"),
    ];
    if matches!(config, Config::ScalarFp32 | Config::ScalarFp16) {
        env.extend([
            ("GGML_VK_DISABLE_COOPMAT", "1"),
            ("GGML_VK_DISABLE_COOPMAT2", "1"),
            // Head's VALVE mixed dot2 changes the scalar fp16 arithmetic; not modelled.
            ("GGML_VK_DISABLE_DOT2", "1"),
        ]);
    }
    if config == Config::ScalarFp32 {
        env.push(("GGML_VK_DISABLE_F16", "1"));
    }
    if config == Config::Cm1 {
        env.push(("GGML_VK_DISABLE_COOPMAT2", "1"));
    }
    env
}

/// Why this configuration cannot run here, from ggml's own device line ("fp16: 1 |" …
/// "matrix cores: KHR_coopmat"), which reflects both the device and the build's shaders.
fn unavailable(config: Config, ggml_log: &str) -> Option<String> {
    let line = ggml_log
        .lines()
        .find(|l| l.contains("matrix cores:"))
        .unwrap_or("");
    let field = |name: &str| {
        line.split('|')
            .find_map(|f| f.trim().strip_prefix(name).map(|v| v.trim().to_string()))
            .unwrap_or_default()
    };
    let cores = field("matrix cores:");
    match config {
        Config::ScalarFp32 => None,
        Config::ScalarFp16 => (field("fp16:") == "0")
            .then(|| "ggml reports fp16: 0 on this device".into()),
        Config::Cm1 => (cores != "KHR_coopmat").then(|| {
            format!("cm1 needs KHR coopmat; with coopmat2 disabled ggml reports matrix cores: {cores:?} (device or build lacks it)")
        }),
        Config::Cm2 => (!cores.starts_with("NV_coopmat2")).then(|| {
            format!("cm2 needs NV coopmat2; ggml reports matrix cores: {cores:?} (device or build lacks it)")
        }),
    }
}

/// Why a variant (a path vkdiff models) is not what ggml runs under this configuration.
pub fn variant_skip(config: Config, v: &crate::model::kernels::Variant) -> Option<String> {
    let kernel = crate::model::cases::kernel(v.kernel)?;
    (kernel.ggml_skip)(v, config)
}

/// The driver: one loaded ggml build, one device, one configuration.
pub struct GgmlDriver {
    ggml: ffi::Ggml,
    config: Config,
    /// The device's capabilities less what the configuration turns off.
    caps: DeviceCaps,
    /// The tree's GGML_KQ_MASK_PAD where its ggml.h asserts one (0.1.109: 64; later trees
    /// dropped it), read by [`kq_mask_pad`].
    mask_pad: Option<usize>,
    /// `vkdiff bench --ggml`: time graph_compute (the reported time is its median).
    pub timing: Option<ffi::Timing>,
}

impl GgmlDriver {
    /// The configuration it runs under.
    pub fn config(&self) -> Config {
        self.config
    }

    /// ggml's description of its device.
    pub fn description(&self) -> &str {
        &self.ggml.description
    }
}

impl Driver for GgmlDriver {
    fn caps(&self) -> &DeviceCaps {
        &self.caps
    }

    /// ggml's host picks splits itself, and a tree may be of any revision.
    fn latitude(&self) -> Latitude {
        Latitude::REAL_HOST
    }

    /// ggml builds the op from `op` itself: vkdiff's runner is not used.
    fn run_once(&mut self, op: &GraphOp, _own: &mut OwnRun<'_>) -> Result<KernelRun, Outcome> {
        if let Some(reason) = mask_pad_refusal(op, self.mask_pad) {
            return Err(Outcome::Skip(reason));
        }
        let _span = vkdiff_gpu::profile::enabled()
            .then(|| vkdiff_gpu::profile::graph(graph_label(op, self.config)));
        let start = std::time::Instant::now();
        match self.ggml.run(op, self.timing.clone()) {
            Ok(mut r) => Ok(KernelRun {
                values: {
                    // VKDIFF_GGML_INJECT=<op name>: a wrong first element, the negative control
                    // that shows the comparison is live in backend mode.
                    if vkdiff_gpu::env::env().ggml_inject.as_deref() == Some(op.name()) {
                        r.values[0] += 1.0;
                    }
                    r.values
                },
                overrun: r.overrun,
                gpu_ns: Some(
                    r.compute_ns
                        .unwrap_or_else(|| start.elapsed().as_nanos() as f64),
                ),
                variant: format!("ggml {}", self.config.name()),
                validation: Vec::new(),
            }),
            Err(ffi::Refusal::Unsupported(m)) => Err(Outcome::Skip(format!("ggml: {m}"))),
            Err(ffi::Refusal::Error(m)) => Err(Outcome::Error(format!("ggml: {m}"))),
        }
    }
}

/// A graph's profile label: op, configuration, then each source's type and shape (the choice
/// of pipeline follows types and shapes).
fn graph_label(op: &GraphOp, config: Config) -> String {
    let srcs: Vec<&Tensor> = match op {
        GraphOp::MulMat { a, b, .. } => vec![a, b],
        GraphOp::MulMatId { a, b, ids, .. } => vec![a, b, ids],
        GraphOp::FlashAttn {
            q, k, v, mask, sinks, ..
        } => [Some(*q), Some(*k), Some(*v), *mask, *sinks]
            .into_iter()
            .flatten()
            .collect(),
        GraphOp::Wkv7(t) => vec![t[0]],
    };
    let srcs: Vec<String> = srcs
        .iter()
        .map(|t| format!("{:?}{:?}", t.dtype(), Tensor::ne(t)))
        .collect();
    format!("{} {} {}", op.name(), config.name(), srcs.join(" "))
}

/// GGML_KQ_MASK_PAD as the tree's `ggml.h` defines it: `ggml_flash_attn_ext` asserts
/// (GGML_ASSERT: the process aborts) that a mask has at least GGML_PAD(N, it) rows in trees that
/// define it (0.1.109), and later trees do not. Looked for in the ggml root and in the library
/// folder (`ci/gpu.sh stage` carries ggml.h there); None when neither has it.
pub fn kq_mask_pad(dirs: &[&Path]) -> Option<usize> {
    dirs.iter()
        .flat_map(|d| [d.join("include/ggml.h"), d.join("ggml.h")])
        .find_map(|h| std::fs::read_to_string(h).ok())
        .and_then(|text| {
            text.lines().find_map(|l| {
                let mut w = l.split_whitespace();
                (w.next() == Some("#define") && w.next() == Some("GGML_KQ_MASK_PAD"))
                    .then(|| w.next()?.parse().ok())
                    .flatten()
            })
        })
}

/// Why a FLASH_ATTN_EXT graph is not run: a mask with fewer rows than the tree asserts.
fn mask_pad_refusal(op: &GraphOp, pad: Option<usize>) -> Option<String> {
    let (
        GraphOp::FlashAttn {
            q, mask: Some(m), ..
        },
        Some(pad),
    ) = (op, pad)
    else {
        return None;
    };
    let (n, rows) = (Tensor::ne(q)[1], Tensor::ne(m)[1]);
    (rows < n.div_ceil(pad) * pad).then(|| {
        format!(
            "ggml: this tree asserts a mask of at least GGML_PAD(N, {pad}) = {} rows (GGML_KQ_MASK_PAD); the case's has {rows}",
            n.div_ceil(pad) * pad
        )
    })
}

/// A ggml build and the path configuration a worker runs it under.
#[derive(Debug, Clone)]
pub struct GgmlSetup {
    /// The ggml root that was built (or the folder of a prebuilt build).
    pub root: PathBuf,
    /// The folder holding the libraries the worker loads.
    pub lib_dir: PathBuf,
    /// The path configuration.
    pub config: Config,
}

impl GgmlSetup {
    /// `build` under `config`.
    pub fn of(build: &build::Build, config: Config) -> GgmlSetup {
        GgmlSetup {
            root: build.root.clone(),
            lib_dir: build.lib_dir.clone(),
            config,
        }
    }

    /// The environment that makes `vkdiff worker` a ggml worker (read back by the worker
    /// through `vkdiff_gpu::env`: VKDIFF_GGML_LIB, VKDIFF_GGML_CONFIG, VKDIFF_GGML_TREE).
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("VKDIFF_GGML_LIB".into(), self.lib_dir.display().to_string()),
            ("VKDIFF_GGML_CONFIG".into(), self.config.name().into()),
            ("VKDIFF_GGML_TREE".into(), self.root.display().to_string()),
        ]
    }

    /// The tree and configuration, as reproducers record them.
    pub fn target(&self) -> GgmlTarget {
        GgmlTarget {
            tree: self.root.display().to_string(),
            config: self.config.name().into(),
        }
    }

    /// The report label: `ggml <tree> [<identity>] config <config>`. The identity
    /// ([`identity::tree_identity`]: ggml version, git commit, upstream changes found in the
    /// source) is what known-findings scopes match, so a tree's verdicts do not depend on its
    /// folder's name.
    pub fn label(&self) -> String {
        let (tree, config) = (self.root.display(), self.config.name());
        match identity::tree_identity(&self.root) {
            Some(id) => format!("ggml {tree} [{id}] config {config}"),
            None => format!("ggml {tree} config {config}"),
        }
    }
}

/// Where a backend-mode case ran: the ggml tree (or prebuilt library folder) given to `--ggml`,
/// and the named path configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GgmlTarget {
    /// The ggml root that was built (or the folder of a prebuilt build).
    pub tree: String,
    /// The configuration (`scalar-fp32`, `scalar-fp16`, `cm1`, `cm2`).
    pub config: String,
}

/// Opens vkdiff's device and the ggml build in `lib_dir` on the same device under `config`,
/// once per process (ggml reads its switches once). The device's capabilities are narrowed to
/// what the configuration leaves, so vkdiff's error models (and runners) see the same path.
/// Call it before the process starts threads (it sets environment variables).
pub fn open(
    device: Option<&str>,
    lib_dir: &Path,
    config: Config,
) -> Result<(Gpu, GgmlDriver), String> {
    // ggml lists CPU devices (lavapipe) only when named: name the one vkdiff selected, by its
    // raw enumeration index, which becomes ggml's Vulkan0.
    let index = Instance::new()
        .and_then(|i| i.select(device))
        .map_err(|e| e.to_string())?
        .index;
    std::env::set_var("GGML_VK_VISIBLE_DEVICES", index.to_string());
    for (k, v) in switches(config) {
        std::env::set_var(k, v);
    }
    let mut gpu = Gpu::open(Some(&index.to_string())).map_err(|e| e.to_string())?;
    let ggml = {
        let _span = vkdiff_gpu::profile::span("ggml load and device init");
        ffi::Ggml::open(lib_dir)?
    };
    if let Some(reason) = unavailable(config, &ffi::logged()) {
        return Err(format!("config {}: {reason}", config.name()));
    }
    let caps = config.caps(gpu.caps());
    gpu.set_caps(caps.clone());
    let tree = vkdiff_gpu::env::env().ggml_tree.clone();
    let mask_pad = kq_mask_pad(&[tree.as_deref().unwrap_or(lib_dir), lib_dir]);
    Ok((
        gpu,
        GgmlDriver {
            ggml,
            config,
            caps,
            mask_pad,
            timing: None,
        },
    ))
}

/// The best configuration the device offers (cm2 > cm1 > scalar fp16 > scalar fp32): what
/// ggml picks by itself, less integer dot.
pub fn best_config(caps: &DeviceCaps) -> Config {
    if caps.coopmat2 {
        Config::Cm2
    } else if caps.coopmat {
        Config::Cm1
    } else if caps.fp16 {
        Config::ScalarFp16
    } else {
        Config::ScalarFp32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vkdiff_reference::DType;

    #[test]
    fn a_short_mask_is_refused_only_where_the_tree_asserts_the_pad() {
        let dir = std::env::temp_dir().join(format!("vkdiff-kqpad-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("include")).unwrap();
        std::fs::write(
            dir.join("include/ggml.h"),
            "#pragma once\n#define GGML_KQ_MASK_PAD 64\n",
        )
        .unwrap();
        let pad = kq_mask_pad(&[&dir]);
        assert_eq!(pad, Some(64));
        assert_eq!(kq_mask_pad(&[&dir.join("include/none")]), None);
        std::fs::remove_dir_all(&dir).unwrap();

        let t = |ne: [usize; 4], dt| Tensor::from_f32(dt, ne, &vec![0.5; ne.iter().product()]);
        let (q, k) = (
            t([64, 2, 1, 1], DType::F32).unwrap(),
            t([64, 2, 1, 1], DType::F16).unwrap(),
        );
        let op = |m| GraphOp::FlashAttn {
            q: &q,
            k: &k,
            v: &k,
            mask: Some(m),
            sinks: None,
            scale: 1.0,
            max_bias: 0.0,
            softcap: 0.0,
            prec_f32: false,
        };
        let short = t([2, 2, 1, 1], DType::F16).unwrap();
        let padded = t([2, 64, 1, 1], DType::F16).unwrap();
        assert!(mask_pad_refusal(&op(&short), pad).is_some_and(|r| r.contains("64 rows")));
        assert!(mask_pad_refusal(&op(&padded), pad).is_none());
        assert!(mask_pad_refusal(&op(&short), None).is_none());
    }
}
