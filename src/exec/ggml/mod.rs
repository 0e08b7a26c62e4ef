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
pub mod layer;
pub mod modules;

use std::path::{Path, PathBuf};

use vkdiff_gpu::device::Instance;
use vkdiff_gpu::runners::KernelRun;
use vkdiff_gpu::{DeviceCaps, Gpu};

use serde::{Deserialize, Serialize};
use vkdiff_reference::tensor::Tensor;

use crate::model::driver::{Driver, GraphOp, Latitude, OwnRun};
use crate::model::outcome::Outcome;

pub use crate::model::config::{Config, Family, CONFIGS, DEFAULT_CONFIGS};

/// ggml's switches for a configuration. `default` sets none; each other configuration turns
/// off what it isolates from (a family configuration: every production path and every other
/// family).
pub fn switches(config: Config) -> Vec<(&'static str, &'static str)> {
    let mut env = Vec::new();
    if !config.integer_dot() {
        env.push(("GGML_VK_DISABLE_INTEGER_DOT_PRODUCT", "1"));
    }
    if !config.fusion() {
        env.extend([
            ("GGML_VK_DISABLE_FUSION", "1"),
            ("GGML_VK_DISABLE_GRAPH_OPTIMIZE", "1"),
        ]);
    }
    if config == Config::ForceMmvq {
        env.push(("GGML_VK_FORCE_MMVQ", "1"));
    }
    match config.forced_family() {
        Some(Family::ScalarFp32 | Family::ScalarFp16) => env.extend([
            ("GGML_VK_DISABLE_COOPMAT", "1"),
            ("GGML_VK_DISABLE_COOPMAT2", "1"),
            // Head's VALVE mixed dot2 changes the scalar fp16 arithmetic; not modelled.
            ("GGML_VK_DISABLE_DOT2", "1"),
        ]),
        Some(Family::Cm1) => env.push(("GGML_VK_DISABLE_COOPMAT2", "1")),
        Some(Family::Cm2) | None => {}
    }
    if config.forced_family() == Some(Family::ScalarFp32) {
        env.push(("GGML_VK_DISABLE_F16", "1"));
    }
    env
}

/// ggml's own device line ("fp16: 1 | … | int dot: 0 | … | matrix cores: KHR_coopmat"), which
/// reflects both the device and the build's shaders, as (field name → value).
struct DeviceLine(String);

impl DeviceLine {
    fn of(ggml_log: &str) -> DeviceLine {
        let line = ggml_log.lines().find(|l| l.contains("matrix cores:"));
        DeviceLine(line.unwrap_or("").to_string())
    }

    fn field(&self, name: &str) -> String {
        self.0
            .split('|')
            .find_map(|f| f.trim().strip_prefix(name).map(|v| v.trim().to_string()))
            .unwrap_or_default()
    }

    /// The shader family ggml says it uses.
    fn family(&self) -> Family {
        let cores = self.field("matrix cores:");
        if cores.starts_with("NV_coopmat2") {
            Family::Cm2
        } else if cores == "KHR_coopmat" {
            Family::Cm1
        } else if self.field("fp16:") == "1" {
            Family::ScalarFp16
        } else {
            Family::ScalarFp32
        }
    }
}

/// Why this configuration cannot run here, from ggml's own device line and, for
/// `force-mmvq`, the tree's source.
fn unavailable(config: Config, line: &DeviceLine, tree: Option<&Path>) -> Option<String> {
    let cores = line.field("matrix cores:");
    if config.overrides_integer_dot() && line.field("int dot:") != "1" {
        return Some(format!(
            "ggml reports int dot: {:?} even with vkdiff's layer reporting integer-dot \
             acceleration (the driver lacks VK_KHR_shader_integer_dot_product, or the build's \
             shaders lack integer dot)",
            line.field("int dot:")
        ));
    }
    if config == Config::ForceMmvq {
        let reads = tree
            .map(|t| t.join("ggml/src/ggml-vulkan/ggml-vulkan.cpp"))
            .into_iter()
            .chain(tree.map(|t| t.join("src/ggml-vulkan/ggml-vulkan.cpp")))
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .any(|s| s.contains("GGML_VK_FORCE_MMVQ"));
        if !reads {
            return Some("this tree does not read GGML_VK_FORCE_MMVQ".into());
        }
    }
    match config.forced_family()? {
        Family::ScalarFp32 => None,
        Family::ScalarFp16 => {
            (line.field("fp16:") == "0").then(|| "ggml reports fp16: 0 on this device".into())
        }
        Family::Cm1 => (cores != "KHR_coopmat").then(|| {
            format!("cm1 needs KHR coopmat; with coopmat2 disabled ggml reports matrix cores: {cores:?} (device or build lacks it)")
        }),
        Family::Cm2 => (!cores.starts_with("NV_coopmat2")).then(|| {
            format!("cm2 needs NV coopmat2; ggml reports matrix cores: {cores:?} (device or build lacks it)")
        }),
    }
}

/// Why a variant (a path vkdiff models) is not what ggml runs under this configuration.
pub fn variant_skip(family: Family, v: &crate::model::kernels::Variant) -> Option<String> {
    let kernel = crate::model::cases::kernel(v.kernel)?;
    (kernel.ggml_skip)(v, family)
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
    /// The tree's GGML_TYPE_COUNT where its ggml.h says it, read by [`ggml_type_count`]: a type
    /// of a later tree (mxfp4 in 0.1.109) is refused by [`type_refusal`].
    type_count: Option<usize>,
    /// `vkdiff bench --ggml`: time graph_compute (the reported time is its median).
    pub timing: Option<ffi::Timing>,
    /// The library's modules by hash (Err: why names are unknown, e.g. a stripped library).
    modules: Result<modules::Modules, String>,
    /// Whether vkdiff's layer is loaded (Err: why not; nothing is recorded then).
    layer: Result<(), String>,
    /// The properties vkdiff's layer changed for ggml (the integer-dot override).
    overridden: Vec<String>,
}

/// What one case dispatched in backend mode, as vkdiff's layer saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dispatched {
    /// The SPIR-V modules of the compute pipelines bound, by ggml's name (`spirv:<hash>` for
    /// one the library does not hold by name), sorted.
    pub pipelines: Vec<String>,
    /// Device properties vkdiff's layer overrode for the run
    /// ([`layer::INTDOT_PROPERTY`]).
    pub overridden: Vec<String>,
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

    /// The modules bound since the last call (the case just run), by name; None when vkdiff's
    /// layer is not loaded.
    pub fn take_dispatched(&self) -> Option<Dispatched> {
        self.layer.as_ref().ok()?;
        let bound = match layer::take_bound() {
            Ok(b) => b,
            Err(e) => {
                eprintln!("vkdiff worker: {e}");
                return None;
            }
        };
        let mut pipelines: Vec<String> = bound
            .iter()
            .flat_map(|b| match &self.modules {
                Ok(m) => {
                    let names = m.names_of(b.raw, b.norm);
                    if names.is_empty() {
                        vec![modules::unknown_name(b.raw)]
                    } else {
                        names
                    }
                }
                Err(_) => vec![modules::unknown_name(b.raw)],
            })
            .collect();
        pipelines.sort();
        pipelines.dedup();
        Some(Dispatched {
            pipelines,
            overridden: self.overridden.clone(),
        })
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
        if let Some(reason) = type_refusal(op, self.type_count) {
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
                    if injected(op, vkdiff_gpu::env::env().ggml_inject.as_deref()) {
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

/// Whether VKDIFF_GGML_INJECT=`name` hits `op`'s result: an op of that name, a fused graph
/// whose head is (a fault of the op itself, in the fused graph and its unfused twin alike), or
/// a fused graph of that name (MUL_MAT_ADD, …) but not its twin (a fault of the fused kernel
/// alone, which the case reports as fused only).
fn injected(op: &GraphOp, name: Option<&str>) -> bool {
    let Some(name) = name else { return false };
    match op {
        GraphOp::Fused { head, unfused, .. } => {
            head.name() == name || (!unfused && op.name() == name)
        }
        _ => op.name() == name,
    }
}

/// A graph's profile label: op, configuration, then each source's type and shape (the choice
/// of pipeline follows types and shapes).
fn graph_label(op: &GraphOp, config: Config) -> String {
    if let GraphOp::Fused {
        head,
        tail,
        unfused,
    } = op
    {
        let tail: Vec<String> = tail
            .iter()
            .map(|t| {
                format!(
                    "{} {:?}{:?}",
                    t.name(),
                    t.tensor().dtype(),
                    Tensor::ne(t.tensor())
                )
            })
            .collect();
        return format!(
            "{}{} = {} + {}",
            op.name(),
            if *unfused { " (unfused)" } else { "" },
            graph_label(head, config),
            tail.join(" + ")
        );
    }
    let srcs: Vec<&Tensor> = match op {
        GraphOp::MulMat { a, b, .. } => vec![a, b],
        GraphOp::MulMatId { a, b, ids, .. } => vec![a, b, ids],
        GraphOp::FlashAttn {
            q,
            k,
            v,
            mask,
            sinks,
            ..
        } => [Some(*q), Some(*k), Some(*v), *mask, *sinks]
            .into_iter()
            .flatten()
            .collect(),
        GraphOp::Wkv7(t) => vec![t[0]],
        GraphOp::Fused { .. } => unreachable!("labelled above"),
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

/// GGML_TYPE_COUNT as the tree's `ggml.h` declares it (`GGML_TYPE_COUNT = 39,` in its
/// `ggml_type` enum), looked for as [`kq_mask_pad`] looks; None when no header is found.
pub fn ggml_type_count(dirs: &[&Path]) -> Option<usize> {
    dirs.iter()
        .flat_map(|d| [d.join("include/ggml.h"), d.join("ggml.h")])
        .find_map(|h| std::fs::read_to_string(h).ok())
        .and_then(|text| {
            text.lines().find_map(|l| {
                let (name, value) = l.split_once('=')?;
                (name.trim() == "GGML_TYPE_COUNT")
                    .then(|| value.trim().trim_end_matches(',').trim().parse().ok())
                    .flatten()
            })
        })
}

/// Why a graph is not run: a tensor of a type this tree's ggml does not have (its id is not
/// below the tree's GGML_TYPE_COUNT; ggml would abort on it).
fn type_refusal(op: &GraphOp, count: Option<usize>) -> Option<String> {
    let count = count?;
    let tensors: Vec<&Tensor> = match op {
        GraphOp::MulMat { a, b, .. } => vec![a, b],
        GraphOp::MulMatId { a, b, ids, .. } => vec![a, b, ids],
        GraphOp::FlashAttn { q, k, v, mask, .. } => [Some(*q), Some(*k), Some(*v), *mask]
            .into_iter()
            .flatten()
            .collect(),
        GraphOp::Wkv7(t) => t.to_vec(),
        // The nodes after the head take f32 tensors.
        GraphOp::Fused { head, .. } => return type_refusal(head, Some(count)),
    };
    tensors.iter().map(|t| t.dtype()).find_map(|t| {
        let id = ffi::type_id(t);
        (id as usize >= count).then(|| {
            format!("ggml: this tree has no {t} (type {id}; its ggml.h has GGML_TYPE_COUNT = {count}): a later ggml's type")
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

/// `GALLIVM_PERF=nopt` for ggml workers, unless this process has `GALLIVM_PERF` (set it empty
/// to keep LLVM's passes): lavapipe (llvmpipe) then compiles a pipeline without LLVM's
/// optimisation passes; other drivers ignore it. On lavapipe a backend run is mostly LLVM
/// compiling ggml's large pipelines for a few cases each, and the passes made that about 1.3 to
/// 1.7 times slower; judged results were the same both ways (docs/ggml-backend.md, "Builds and
/// caches"). Shader mode keeps the passes: its many cases a pipeline ran faster with them.
fn lavapipe_compile_env() -> Option<(String, String)> {
    std::env::var_os("GALLIVM_PERF")
        .is_none()
        .then(|| ("GALLIVM_PERF".to_string(), "nopt".to_string()))
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
    /// through `vkdiff_gpu::env`: VKDIFF_GGML_LIB, VKDIFF_GGML_CONFIG, VKDIFF_GGML_TREE), and
    /// [`lavapipe_compile_env`].
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = vec![
            ("VKDIFF_GGML_LIB".into(), self.lib_dir.display().to_string()),
            ("VKDIFF_GGML_CONFIG".into(), self.config.name().into()),
            ("VKDIFF_GGML_TREE".into(), self.root.display().to_string()),
        ];
        env.extend(lavapipe_compile_env());
        env
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
    // vkdiff's layer first: it must be in place before any Vulkan instance exists.
    let intdot = config.overrides_integer_dot();
    let layer = layer::enable(layer::LayerOptions { intdot }).map(|_| ());
    if let Err(e) = &layer {
        eprintln!("vkdiff worker: no pipeline recording: {e}");
    }
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
    let tree = vkdiff_gpu::env::env().ggml_tree.clone();
    let line = DeviceLine::of(&ffi::logged());
    if let Some(reason) = unavailable(config, &line, tree.as_deref()) {
        return Err(format!("config {}: {reason}", config.name()));
    }
    let overridden = if intdot && layer::intdot_applied() {
        vec![layer::INTDOT_PROPERTY.to_string()]
    } else {
        Vec::new()
    };
    let mut caps = config.caps(gpu.caps(), line.family());
    // vkdiff's own device already sees the layer's property; this keeps the error models'
    // integer-dot candidates in step with ggml's view even if it did not.
    caps.integer_dot |= !overridden.is_empty();
    gpu.set_caps(caps.clone());
    let modules = modules::Modules::read(lib_dir);
    if let (Ok(()), Err(e)) = (&layer, &modules) {
        eprintln!("vkdiff worker: dispatched modules are named by hash only: {e}");
    }
    let mask_pad = kq_mask_pad(&[tree.as_deref().unwrap_or(lib_dir), lib_dir]);
    let type_count = ggml_type_count(&[tree.as_deref().unwrap_or(lib_dir), lib_dir]);
    Ok((
        gpu,
        GgmlDriver {
            ggml,
            config,
            caps,
            mask_pad,
            type_count,
            timing: None,
            modules,
            layer,
            overridden,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use vkdiff_reference::DType;

    #[test]
    fn an_injection_named_after_a_fused_graph_spares_its_twin() {
        use crate::model::driver::Tail;
        let t = |ne: [usize; 4]| {
            Tensor::from_f32(DType::F32, ne, &vec![0.5; ne.iter().product()]).unwrap()
        };
        let (a, b, bias) = (t([4, 3, 1, 1]), t([4, 1, 1, 1]), t([3, 1, 1, 1]));
        let head = GraphOp::MulMat {
            a: &a,
            b: &b,
            prec_f32: false,
        };
        let tail = [Tail::Add(&bias)];
        let fused = GraphOp::Fused {
            head: &head,
            tail: &tail,
            unfused: false,
        };
        let twin = fused.unfused().unwrap();
        assert_eq!(fused.name(), "MUL_MAT_ADD");
        assert!(injected(&fused, Some("MUL_MAT_ADD")) && !injected(&twin, Some("MUL_MAT_ADD")));
        assert!(injected(&fused, Some("MUL_MAT")) && injected(&twin, Some("MUL_MAT")));
        assert!(injected(&head, Some("MUL_MAT")) && !injected(&head, Some("MUL_MAT_ADD")));
        assert!(!injected(&fused, None) && !injected(&fused, Some("ADD")));
    }

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

    #[test]
    fn a_type_the_tree_lacks_is_refused() {
        let dir = std::env::temp_dir().join(format!("vkdiff-typecount-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("include")).unwrap();
        // As 0.1.109's enum ends (before MXFP4, type 39, existed).
        std::fs::write(
            dir.join("include/ggml.h"),
            "    enum ggml_type {\n        GGML_TYPE_F32     = 0,\n        GGML_TYPE_COUNT   = 39,\n    };\n",
        )
        .unwrap();
        let count = ggml_type_count(&[&dir]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(count, Some(39));
        let b = Tensor::from_f32(DType::F32, [32, 1, 1, 1], &[0.5; 32]).unwrap();
        let a = Tensor::from_bytes(DType::Mxfp4, [32, 1, 1, 1], vec![127; 17]).unwrap();
        let q = Tensor::from_bytes(DType::Q4_0, [32, 1, 1, 1], vec![0; 18]).unwrap();
        let op = |a| GraphOp::MulMat {
            a,
            b: &b,
            prec_f32: false,
        };
        assert!(type_refusal(&op(&a), count).is_some_and(|r| r.contains("no mxfp4")));
        assert!(type_refusal(&op(&q), count).is_none());
        assert!(type_refusal(&op(&a), Some(40)).is_none());
        assert!(type_refusal(&op(&a), None).is_none());
    }
}
