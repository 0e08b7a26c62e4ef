//! Every `VKDIFF_*` environment switch, read once per process into [`Env`]: the one place they
//! are listed and documented. Code asks [`env()`] instead of reading the environment, so a
//! switch cannot be spelled two ways or parsed two ways. (The struct lives in the lowest crate
//! that reads switches, so every crate of the workspace shares it.)
//!
//! Switches that are the environment's own business stay outside it: `HOME`,
//! `XDG_CACHE_HOME`, `CXX`, and ggml's own `GGML_*` switches, which vkdiff sets for the ggml
//! library it loads rather than reads. The CI scripts' own switches (`VKDIFF_CI_JOBS`,
//! `VKDIFF_FUZZ_TARGET_DIR`) are documented in the scripts.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// The switches, as this process found them at first use.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// `VKDIFF_DEVICE`: the Vulkan device to open, by index or a substring of its name
    /// (default: the first discrete GPU, else the first device).
    pub device: Option<String>,
    /// `VKDIFF_VALIDATE`: `1` runs under the Khronos validation layer with synchronization
    /// validation, `gpu` adds GPU-assisted validation; anything else (`0`) none. `--validate`
    /// is its flag form ([`request_validation`]).
    pub validate: Option<String>,
    /// `VKDIFF_SHADERS`: our shader tree (default: the checkout's `shaders/`, else the tree
    /// built into the binary).
    pub shaders: Option<PathBuf>,
    /// `VKDIFF_CACHE_DIR`: the SPIR-V cache (default `$XDG_CACHE_HOME/vkdiff/spirv`, else
    /// `~/.cache/vkdiff/spirv`); its parent also holds the written-out built-in shaders.
    pub cache_dir: Option<PathBuf>,
    /// `VKDIFF_PROFILE`: non-empty and not `0` prints where a case's time goes.
    pub profile: bool,
    /// `VKDIFF_STAGING=1`: stage buffers through host-visible copies even on a device whose
    /// memory the host shares (cpu, integrated), as a discrete GPU needs.
    pub staging: bool,
    /// `VKDIFF_TIMEOUT_S`: seconds a job may run before it counts as hung (default 120).
    pub timeout_s: u64,
    /// `VKDIFF_FUZZ_KERNEL`: the kernel the fuzz target `kernel` fuzzes (unset or empty: the
    /// first byte picks one).
    pub fuzz_kernel: Option<String>,
    /// `VKDIFF_GGML_LIB` and `VKDIFF_GGML_CONFIG`: set by vkdiff for a ggml worker process, the
    /// ggml library it loads and the path configuration it runs.
    pub ggml_lib: Option<OsString>,
    /// See [`Env::ggml_lib`].
    pub ggml_config: String,
    /// `VKDIFF_GGML_TREE`: the ggml source tree a ggml worker reads `ggml.h` from (default: the
    /// library's folder); the backend tests also take their recent tree from it.
    pub ggml_tree: Option<PathBuf>,
    /// `VKDIFF_WORKER_WRAPPER`: a command line (split at whitespace) that worker processes run
    /// under, e.g. valgrind (empty: none).
    pub worker_wrapper: String,
    /// `VKDIFF_GGML_CACHE`: where ggml trees are built, one folder per tree location, options
    /// and tools, updated in place (default `~/.cache/vkdiff-ggml`). Mesa's own shader cache,
    /// which keeps lavapipe's compiled pipelines across workers and runs, is Mesa's switches'
    /// business (`MESA_SHADER_CACHE_DIR`, `MESA_SHADER_CACHE_DISABLE`); vkdiff sets neither.
    pub ggml_cache: Option<PathBuf>,
    /// `VKDIFF_GLSLC`: the glslc a ggml build uses (default: the one shaderc-sys built).
    pub glslc: Option<PathBuf>,
    /// `VKDIFF_VULKAN_HEADERS`: Vulkan headers for a ggml build (default: the system's when
    /// recent enough, else the ones `ci/vulkan-headers.sh` fetched).
    pub vulkan_headers: Option<PathBuf>,
    /// `VKDIFF_GGML_JOBS`: parallel jobs of a ggml build (default: the CPU count).
    pub ggml_jobs: Option<String>,
    /// Fault injection for vkdiff's own tests (negative controls). `VKDIFF_INJECT_CRASH=<text>`:
    /// the evaluating process aborts on a case whose description contains the text.
    pub inject_crash: Option<String>,
    /// `VKDIFF_INJECT_STATE_CRASH=<text>`: it aborts there only after evaluating another case
    /// (a driver whose state an earlier case left bad).
    pub inject_state_crash: Option<String>,
    /// `VKDIFF_INJECT_HANG=<text>`: it hangs there instead.
    pub inject_hang: Option<String>,
    /// `VKDIFF_INJECT_DEVICE_LOST=N`: every Nth job reports a lost device.
    pub inject_device_lost: Option<u64>,
    /// `VKDIFF_INJECT_TIMEOUT=N`: every Nth job counts as past the timeout once submitted.
    pub inject_timeout: Option<u64>,
    /// `VKDIFF_INJECT_NONDETERMINISM=1`: every second job flips the lowest bit of its first
    /// output element.
    pub inject_nondeterminism: bool,
    /// `VKDIFF_GGML_INJECT=<op name>`: backend mode adds 1 to the op's first output element.
    pub ggml_inject: Option<String>,
    /// `VKDIFF_CM1_ONLY` / `VKDIFF_CM2_ONLY`: the coopmat compile tests build only the variants
    /// whose name contains the text.
    pub cm1_only: Option<String>,
    /// See [`Env::cm1_only`].
    pub cm2_only: Option<String>,
    /// `VKDIFF_MATVEC_SHAPE=BLOCK,ROWS`: a host experiment for `vkdiff bench`: quantized
    /// mat-vec pipelines get this workgroup size and rows per workgroup instead of the pinned
    /// host's (interface.md §5.4), to measure how the dispatch shape limits their bandwidth.
    /// Results are still judged (the error model reads the same constants). Not a configuration
    /// upstream runs: never set in campaigns.
    pub matvec_shape: Option<(u32, u32)>,
}

impl Env {
    /// Reads the switches from this process's environment.
    pub fn read() -> Env {
        let s = |k: &str| std::env::var(k).ok();
        let path = |k: &str| std::env::var_os(k).map(PathBuf::from);
        Env {
            device: s("VKDIFF_DEVICE"),
            validate: s("VKDIFF_VALIDATE"),
            shaders: path("VKDIFF_SHADERS"),
            cache_dir: path("VKDIFF_CACHE_DIR"),
            profile: s("VKDIFF_PROFILE").is_some_and(|v| !v.is_empty() && v != "0"),
            staging: s("VKDIFF_STAGING").as_deref() == Some("1"),
            timeout_s: s("VKDIFF_TIMEOUT_S")
                .and_then(|v| v.parse().ok())
                .unwrap_or(120),
            fuzz_kernel: s("VKDIFF_FUZZ_KERNEL").filter(|k| !k.is_empty()),
            ggml_lib: std::env::var_os("VKDIFF_GGML_LIB"),
            ggml_config: s("VKDIFF_GGML_CONFIG").unwrap_or_default(),
            ggml_tree: path("VKDIFF_GGML_TREE"),
            worker_wrapper: s("VKDIFF_WORKER_WRAPPER").unwrap_or_default(),
            ggml_cache: path("VKDIFF_GGML_CACHE"),
            glslc: path("VKDIFF_GLSLC"),
            vulkan_headers: path("VKDIFF_VULKAN_HEADERS"),
            ggml_jobs: s("VKDIFF_GGML_JOBS"),
            inject_crash: s("VKDIFF_INJECT_CRASH"),
            inject_state_crash: s("VKDIFF_INJECT_STATE_CRASH"),
            inject_hang: s("VKDIFF_INJECT_HANG"),
            inject_device_lost: s("VKDIFF_INJECT_DEVICE_LOST").and_then(|v| v.parse().ok()),
            inject_timeout: s("VKDIFF_INJECT_TIMEOUT").and_then(|v| v.parse().ok()),
            inject_nondeterminism: s("VKDIFF_INJECT_NONDETERMINISM").as_deref() == Some("1"),
            ggml_inject: s("VKDIFF_GGML_INJECT"),
            cm1_only: s("VKDIFF_CM1_ONLY"),
            cm2_only: s("VKDIFF_CM2_ONLY"),
            matvec_shape: s("VKDIFF_MATVEC_SHAPE").and_then(|v| {
                let (b, r) = v.split_once(',')?;
                Some((b.trim().parse().ok()?, r.trim().parse().ok()?))
            }),
        }
    }

    /// Whether the validation layer is asked for (`VKDIFF_VALIDATE` `1` or `gpu`, or
    /// `--validate`).
    pub fn validation_requested(&self) -> bool {
        matches!(self.validate.as_deref(), Some("1") | Some("gpu"))
            || VALIDATE_FLAG.load(Ordering::Relaxed)
    }

    /// Whether GPU-assisted validation is asked for too (`VKDIFF_VALIDATE=gpu`).
    pub fn gpu_assisted_validation(&self) -> bool {
        self.validate.as_deref() == Some("gpu")
    }
}

static ENV: OnceLock<Env> = OnceLock::new();
static VALIDATE_FLAG: AtomicBool = AtomicBool::new(false);

/// The switches of this process, read at first use.
pub fn env() -> &'static Env {
    ENV.get_or_init(Env::read)
}

/// `--validate`: asks for the validation layer in this process (whatever [`env()`] read before)
/// and, through the environment, in the worker processes it starts. Call it before any thread
/// or worker exists.
/// An explicit `VKDIFF_VALIDATE` (`0` included) wins over the flag.
pub fn request_validation() {
    if std::env::var_os("VKDIFF_VALIDATE").is_none() {
        VALIDATE_FLAG.store(true, Ordering::Relaxed);
        std::env::set_var("VKDIFF_VALIDATE", "1");
    }
}
