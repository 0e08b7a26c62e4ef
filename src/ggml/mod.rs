//! Backend mode (`--ggml DIR`): cases run through ggml's own Vulkan host (graph, pipeline
//! choice, dispatch) built from a checkout, instead of vkdiff's runners. The case model, the
//! reference and the error models are the same; only the executor changes ([`GraphExec`]).
//!
//! ggml keeps its device state per process and reads its path switches once, so each named
//! configuration runs in its own worker process (`vkdiff worker` with `VKDIFF_GGML_LIB` and
//! `VKDIFF_GGML_CONFIG` set); ggml aborts on errors, which the worker protocol already turns
//! into recorded `crash` outcomes.

pub mod build;
pub mod ffi;

use std::path::{Path, PathBuf};

use vkdiff_gpu::device::Instance;
use vkdiff_gpu::runners::KernelRun;
use vkdiff_gpu::{DeviceCaps, Gpu, ShaderTree};

use crate::cases::{Case, Ctx, GraphExec, GraphOp, Outcome};
use crate::kernels::Variant;
use crate::worker::{read_frame, write_frame, Request, Response};
use vkdiff_reference::tensor::Tensor;

/// A named path configuration, forced through ggml's environment switches (GGML_BACKEND.md §2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Config {
    /// No fp16, no cooperative matrices: the `_fp32` shaders.
    ScalarFp32,
    /// Scalar shaders with fp16.
    ScalarFp16,
    /// KHR cooperative matrices (no NV coopmat2).
    Cm1,
    /// NV cooperative matrix 2.
    Cm2,
}

/// Every configuration, in the order a campaign runs them.
pub const CONFIGS: [Config; 4] = [
    Config::ScalarFp32,
    Config::ScalarFp16,
    Config::Cm1,
    Config::Cm2,
];

impl Config {
    /// The name used by `--config` and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Config::ScalarFp32 => "scalar-fp32",
            Config::ScalarFp16 => "scalar-fp16",
            Config::Cm1 => "cm1",
            Config::Cm2 => "cm2",
        }
    }

    /// The configuration named `name`.
    pub fn parse(name: &str) -> Result<Config, String> {
        CONFIGS
            .into_iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| {
                let names: Vec<_> = CONFIGS.iter().map(|c| c.name()).collect();
                format!(
                    "unknown configuration {name:?}; they are {}",
                    names.join(", ")
                )
            })
    }

    /// ggml's switches for this path. Integer dot is always off: vkdiff has no error model
    /// for q8_1-quantized B (MMQ/MMVQ). Fusion and graph rewrites are off (one-op graphs).
    pub fn env(self) -> Vec<(&'static str, &'static str)> {
        let mut env = vec![
            ("GGML_VK_DISABLE_INTEGER_DOT_PRODUCT", "1"),
            ("GGML_VK_DISABLE_FUSION", "1"),
            ("GGML_VK_DISABLE_GRAPH_OPTIMIZE", "1"),
        ];
        if matches!(self, Config::ScalarFp32 | Config::ScalarFp16) {
            env.extend([
                ("GGML_VK_DISABLE_COOPMAT", "1"),
                ("GGML_VK_DISABLE_COOPMAT2", "1"),
                // Head's VALVE mixed dot2 changes the scalar fp16 arithmetic; not modelled.
                ("GGML_VK_DISABLE_DOT2", "1"),
            ]);
        }
        if self == Config::ScalarFp32 {
            env.push(("GGML_VK_DISABLE_F16", "1"));
        }
        if self == Config::Cm1 {
            env.push(("GGML_VK_DISABLE_COOPMAT2", "1"));
        }
        env
    }

    /// The capabilities the error models see: the device's, less what the switches turn off.
    pub fn caps(self, device: &DeviceCaps) -> DeviceCaps {
        let mut c = device.clone();
        c.integer_dot = false;
        if matches!(self, Config::ScalarFp32 | Config::ScalarFp16) {
            c.coopmat = false;
            c.coopmat2 = false;
            c.bf16_coopmat = false;
        }
        if self == Config::ScalarFp32 {
            c.fp16 = false;
        }
        if self == Config::Cm1 {
            c.coopmat2 = false;
        }
        c
    }

    /// Why this configuration cannot run here, from ggml's own device line ("fp16: 1 |" …
    /// "matrix cores: KHR_coopmat"), which reflects both the device and the build's shaders.
    fn unavailable(self, ggml_log: &str) -> Option<String> {
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
        match self {
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
    pub fn variant_skip(self, v: &Variant) -> Option<String> {
        let kernel = crate::kernels::kernel(v.kernel)?;
        (kernel.ggml_skip)(v, self)
    }
}

/// The executor: one loaded ggml build, one device, one configuration.
pub struct Driver {
    ggml: ffi::Ggml,
    config: Config,
    /// The tree's GGML_KQ_MASK_PAD where its ggml.h asserts one (0.1.109: 64; later trees
    /// dropped it), read by [`kq_mask_pad`].
    mask_pad: Option<usize>,
    /// `vkdiff bench --ggml`: time graph_compute (the reported time is its median).
    pub timing: Option<ffi::Timing>,
}

impl Driver {
    /// The configuration it runs under.
    pub fn config(&self) -> Config {
        self.config
    }
}

impl GraphExec for Driver {
    fn run(&mut self, op: &GraphOp) -> Result<KernelRun, Outcome> {
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
        GraphOp::FlashAttn { q, k, v, mask, .. } => [Some(*q), Some(*k), Some(*v), *mask]
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

/// The environment that makes `vkdiff worker` a ggml worker for `config`.
pub fn worker_env(build: &build::Build, config: Config) -> Vec<(String, String)> {
    vec![
        (
            "VKDIFF_GGML_LIB".to_string(),
            build.lib_dir.display().to_string(),
        ),
        ("VKDIFF_GGML_CONFIG".to_string(), config.name().to_string()),
        (
            "VKDIFF_GGML_TREE".to_string(),
            build.root.display().to_string(),
        ),
    ]
}

/// The tree and configuration of a ggml worker's environment, or None when it is not one.
pub fn target(env: &[(String, String)]) -> Option<crate::repro::GgmlTarget> {
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    Some(crate::repro::GgmlTarget {
        tree: get("VKDIFF_GGML_TREE")?,
        config: get("VKDIFF_GGML_CONFIG")?,
    })
}

/// The report label of a worker environment: `ggml <tree> config <config>`, or None when it is
/// not a ggml worker's.
pub fn label(env: &[(String, String)]) -> Option<String> {
    target(env).map(|t| format!("ggml {} config {}", t.tree, t.config))
}

/// Opens vkdiff's device and the ggml build in `lib_dir` on the same device under `config`,
/// once per process (ggml reads its switches once). The device's capabilities are narrowed to
/// what the configuration leaves, so vkdiff's error models (and runners) see the same path.
/// Call it before the process starts threads (it sets environment variables).
pub fn open(device: Option<&str>, lib_dir: &Path, config: Config) -> Result<(Gpu, Driver), String> {
    // ggml lists CPU devices (lavapipe) only when named: name the one vkdiff selected, by its
    // raw enumeration index, which becomes ggml's Vulkan0.
    let index = Instance::new()
        .and_then(|i| i.select(device))
        .map_err(|e| e.to_string())?
        .index;
    std::env::set_var("GGML_VK_VISIBLE_DEVICES", index.to_string());
    for (k, v) in config.env() {
        std::env::set_var(k, v);
    }
    let mut gpu = Gpu::open(Some(&index.to_string())).map_err(|e| e.to_string())?;
    let ggml = {
        let _span = vkdiff_gpu::profile::span("ggml load and device init");
        ffi::Ggml::open(lib_dir)?
    };
    if let Some(reason) = config.unavailable(&ffi::logged()) {
        return Err(format!("config {}: {reason}", config.name()));
    }
    let caps = config.caps(gpu.caps());
    gpu.set_caps(caps);
    let tree = vkdiff_gpu::env::env().ggml_tree.clone();
    let mask_pad = kq_mask_pad(&[tree.as_deref().unwrap_or(lib_dir), lib_dir]);
    Ok((
        gpu,
        Driver {
            ggml,
            config,
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

/// The ggml worker: sets the configuration's switches, picks the device, loads the build,
/// then answers requests like [`crate::worker::serve`].
pub fn serve(
    device: Option<&str>,
    lib_dir: PathBuf,
    config: &str,
    repeat: bool,
    repeat_every: Option<u64>,
) -> std::io::Result<()> {
    let (mut input, mut output) = (std::io::stdin().lock(), std::io::stdout().lock());
    // This process has no other threads yet.
    let opened = Config::parse(config).and_then(|c| open(device, &lib_dir, c));
    let (mut gpu, mut driver) = match opened {
        Ok(x) => x,
        Err(e) => return write_frame(&mut output, &Response::Failed(e)),
    };
    let mut caps_named = gpu.caps().clone();
    caps_named.name = format!("{} (ggml: {})", caps_named.name, driver.ggml.description);
    write_frame(&mut output, &Response::Ready { caps: caps_named })?;
    let mut tree = ShaderTree::new(crate::default_shader_dir());
    loop {
        let request: Request = match read_frame(&mut input) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                eprint!("{}", vkdiff_gpu::profile::report());
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let Request::Evaluate(json) = request;
        let outcome = match serde_json::from_str::<Case>(&json) {
            Ok(case) => {
                crate::worker::fault_injection(&case);
                case.evaluate(&mut Ctx {
                    repeat: crate::worker::campaign_repeats(
                        repeat,
                        repeat_every,
                        gpu.caps(),
                        &json,
                    ),
                    gpu: &mut gpu,
                    tree: &mut tree,
                    graph: Some(&mut driver),
                })
            }
            Err(e) => Outcome::Error(format!("worker could not read the case: {e}")),
        };
        write_frame(&mut output, &Response::Outcome(outcome))?;
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
