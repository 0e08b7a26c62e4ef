//! Building ggml with its Vulkan backend from a checkout (`--ggml DIR`): CMake + Ninja into one
//! cache folder per tree location, options and tools, updated in place, so an edit to the tree
//! rebuilds only what it touched ([`build`]). A content key of the tree's ggml sources, the
//! options and the tools names each build in reports.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

/// Which ggml backend a build compiles: Vulkan (backend mode), or the CPU backend alone
/// (`vkdiff bench --ggml-cpu`, which times the reference against it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `GGML_VULKAN=ON`, the CPU backend off.
    Vulkan,
    /// `GGML_CPU=ON` (tuned for this host: `GGML_NATIVE=ON`), Vulkan off.
    Cpu,
}

impl Backend {
    /// The backend's library file name.
    pub fn library(self) -> &'static str {
        match self {
            Backend::Vulkan => "libggml-vulkan.so",
            Backend::Cpu => "libggml-cpu.so",
        }
    }

    /// The snapshot's subfolder, and the build folder name's suffix for the CPU build.
    fn name(self) -> &'static str {
        match self {
            Backend::Vulkan => "vulkan",
            Backend::Cpu => "cpu",
        }
    }
}

/// A finished build: where its shared libraries are.
#[derive(Debug, Clone)]
pub struct Build {
    /// The ggml root that was built (DIR or DIR/ggml).
    pub root: PathBuf,
    /// The folder holding libggml-base and the backend's library (a built tree's: its
    /// snapshot for this content key).
    pub lib_dir: PathBuf,
    /// The content key (first 16 hex digits), which names the build in reports.
    pub key: String,
}

/// The ggml root inside `dir`: `dir` itself (a ggml checkout) or `dir/ggml` (llama.cpp).
pub fn ggml_root(dir: &Path) -> Result<PathBuf, String> {
    if !dir.is_dir() {
        return Err(format!("--ggml {}: no such directory", dir.display()));
    }
    for root in [dir.join("ggml"), dir.to_path_buf()] {
        if root.join("include/ggml.h").is_file() && root.join("CMakeLists.txt").is_file() {
            if root.join("src/ggml-vulkan").is_dir() {
                return Ok(root);
            }
            return Err(format!(
                "{} is a ggml tree without the Vulkan backend (no src/ggml-vulkan): nothing to test",
                root.display()
            ));
        }
    }
    Err(format!(
        "{} is not a ggml or llama.cpp checkout (no include/ggml.h and CMakeLists.txt, nor ggml/ holding them)",
        dir.display()
    ))
}

/// The cache root: `$VKDIFF_GGML_CACHE`, else `~/.cache/vkdiff-ggml`.
pub fn cache_root() -> PathBuf {
    vkdiff_gpu::env::env()
        .ggml_cache
        .clone()
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into()))
                .join(".cache/vkdiff-ggml")
        })
}

/// vkdiff's own source-built glslc (shaderc-sys builds one next to the library; it passes
/// ggml's coopmat, coopmat2, integer-dot and bf16 probes, Debian 12's does not), or
/// `$VKDIFF_GLSLC`.
pub fn find_glslc() -> Result<PathBuf, String> {
    if let Some(p) = &vkdiff_gpu::env::env().glslc {
        return Ok(p.clone());
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // The binary is $CARGO_TARGET_DIR/<profile>/vkdiff (or …/deps/<test> for tests).
    let mut candidates = Vec::new();
    for dir in exe.ancestors().skip(1).take(3) {
        let Ok(entries) = std::fs::read_dir(dir.join("build")) else {
            continue;
        };
        for e in entries.flatten() {
            let glslc = e.path().join("out/bin/glslc");
            if e.file_name().to_string_lossy().starts_with("shaderc-sys-") && glslc.is_file() {
                let mtime = glslc.metadata().and_then(|m| m.modified()).ok();
                candidates.push((mtime, glslc));
            }
        }
    }
    candidates.sort();
    candidates.pop().map(|(_, p)| p).ok_or_else(|| {
        format!(
            "no glslc: vkdiff's shaderc build puts one in $CARGO_TARGET_DIR/release/build/shaderc-sys-*/out/bin/ \
             (none next to {}); build vkdiff with `cargo build --release` or set VKDIFF_GLSLC",
            exe.display()
        )
    })
}

/// The Vulkan headers a build needs: the system's if they know VK_KHR_cooperative_matrix
/// (every tree's coopmat code, compiled in because vkdiff's glslc passes the probe) and
/// VK_EXT_layer_settings (recent trees); else Debian 13's, fetched by ci/vulkan-headers.sh
/// (or `$VKDIFF_VULKAN_HEADERS`). Debian 12's 1.3.239 lacks both.
fn vulkan_headers() -> Result<Option<PathBuf>, String> {
    if let Some(p) = &vkdiff_gpu::env::env().vulkan_headers {
        return Ok(Some(p.clone()));
    }
    let system_ok = std::fs::read_to_string("/usr/include/vulkan/vulkan_core.h").is_ok_and(|s| {
        s.contains("VK_KHR_cooperative_matrix") && s.contains("VK_EXT_layer_settings")
    });
    if system_ok {
        return Ok(None);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/vulkan-headers.sh");
    let out = Command::new("bash")
        .arg(&script)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "ggml needs Vulkan headers with VK_KHR_cooperative_matrix and VK_EXT_layer_settings (1.3.275+) and {} failed; \
             set VKDIFF_VULKAN_HEADERS to a Vulkan-Headers include folder",
            script.display()
        ));
    }
    Ok(Some(PathBuf::from(
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
    )))
}

/// Every file under `dir`, sorted (symlinks not followed).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// The folder under `dir` holding `library` (`libggml-vulkan.so`), which CMake makes a symlink
/// to the versioned file (so [`walk`], which lists regular files, does not see it).
fn find_library_dir(dir: &Path, library: &str) -> Option<PathBuf> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            if e.file_name() == library {
                return Some(d);
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            }
        }
    }
    None
}

/// Source folders of other backends: they do not affect a Vulkan build and are not hashed.
fn other_backend(rel: &Path) -> bool {
    let s = rel.to_string_lossy();
    s.starts_with("src/ggml-")
        && !["src/ggml-vulkan", "src/ggml-cpu"]
            .iter()
            .any(|k| s.starts_with(k))
        && rel.components().count() > 2
}

/// The first line of `prog --version`.
fn version_of(prog: &Path) -> String {
    Command::new(prog)
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default()
}

/// The libvulkan to link (the loader; ggml only needs the soname).
fn vulkan_library() -> Option<PathBuf> {
    [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/lib/aarch64-linux-gnu",
    ]
    .iter()
    .flat_map(|d| {
        [
            Path::new(d).join("libvulkan.so"),
            Path::new(d).join("libvulkan.so.1"),
        ]
    })
    .find(|p| p.exists())
}

/// Builds ggml with the Vulkan backend from `dir`, incrementally, or finds the build done.
/// Progress goes to stderr; a failure names the log and quotes its tail.
///
/// One build folder serves a tree location (with its options and tools) across edits, so
/// Ninja rebuilds only what an edit touched: `<cache>/<tree folder name>-<16 hex digits>`.
/// Its files:
/// - `lock`: held (flock) by the process building, so two processes never build at once.
/// - `configured`: the configure fingerprint (tree path, options, tools), written only after a
///   configure succeeded. A folder without it, or with another fingerprint, or without
///   CMake's cache and Ninja's build file (a failed or interrupted configure, another source
///   folder or other options) is wiped and configured afresh, never trusted.
/// - `built`: the content key the last successful build saw, and its library snapshot;
///   removed before a build starts, so an interrupted or failed build leaves none. Ninja
///   decides what is stale (an interrupted command is not in its log, so it reruns).
/// - `lib/<key>/`: a copy of the built libraries per content key. Workers load the snapshot,
///   so a rebuild of the tree by another process (after an edit) never changes the library
///   under a run that is going on, nor under a worker it restarts.
pub fn build(dir: &Path) -> Result<Build, String> {
    build_in(dir, &cache_root())
}

/// [`build`] of ggml's CPU backend alone (no Vulkan, no glslc), in its own build folder
/// (`<tree folder name>-cpu-<16 hex digits>`), the same way: `--ggml-cpu`'s column.
pub fn build_cpu(dir: &Path) -> Result<Build, String> {
    build_backend(dir, &cache_root(), Backend::Cpu)
}

/// [`build`] with the cache root given.
fn build_in(dir: &Path, cache: &Path) -> Result<Build, String> {
    build_backend(dir, cache, Backend::Vulkan)
}

/// [`build`] of `backend` with the cache root given.
fn build_backend(dir: &Path, cache: &Path, backend: Backend) -> Result<Build, String> {
    let library = backend.library();
    // A folder holding an existing build's libraries is used as it is (your own build).
    if dir.join(library).exists() {
        return Ok(Build {
            root: dir.to_path_buf(),
            lib_dir: dir.to_path_buf(),
            key: "prebuilt".into(),
        });
    }
    let root = ggml_root(dir)?;
    let root = root.canonicalize().unwrap_or(root);
    // The CPU build needs no shader compiler (nor its link in the build folder).
    let glslc = match backend {
        Backend::Vulkan => find_glslc()?,
        Backend::Cpu => PathBuf::new(),
    };
    // The Vulkan build's options, in this order, name its existing build folders (the
    // fingerprint and folder hash include them): keep them as they are.
    let mut options: Vec<String> = match backend {
        Backend::Vulkan => vec![
            "-G".to_string(),
            "Ninja".into(),
            "-DCMAKE_BUILD_TYPE=Release".into(),
            "-DGGML_VULKAN=ON".into(),
            "-DBUILD_SHARED_LIBS=ON".into(),
            "-DGGML_BACKEND_DL=OFF".into(),
            // The CPU backend is not used (the reference is vkdiff's own); leaving it out
            // halves the build.
            "-DGGML_CPU=OFF".into(),
            "-DGGML_NATIVE=OFF".into(),
            "-DGGML_OPENMP=OFF".into(),
            "-DGGML_BUILD_TESTS=OFF".into(),
            "-DGGML_BUILD_EXAMPLES=OFF".into(),
        ],
        Backend::Cpu => vec![
            "-G".to_string(),
            "Ninja".into(),
            "-DCMAKE_BUILD_TYPE=Release".into(),
            "-DGGML_VULKAN=OFF".into(),
            "-DBUILD_SHARED_LIBS=ON".into(),
            "-DGGML_BACKEND_DL=OFF".into(),
            "-DGGML_CPU=ON".into(),
            // What a llama.cpp build does by default: the host's instruction set.
            "-DGGML_NATIVE=ON".into(),
            // ggml's own thread pool, made per graph_compute and joined after it: OpenMP's
            // workers would spin after the op, on the cores the reference is timed on next.
            "-DGGML_OPENMP=OFF".into(),
            "-DGGML_BUILD_TESTS=OFF".into(),
            "-DGGML_BUILD_EXAMPLES=OFF".into(),
        ],
    };
    if backend == Backend::Vulkan {
        if let Some(h) = &vulkan_headers()? {
            options.push(format!("-DVulkan_INCLUDE_DIR={}", h.display()));
        }
        if let Some(l) = &vulkan_library() {
            options.push(format!("-DVulkan_LIBRARY={}", l.display()));
        }
    }
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    // glslc enters the keys by its version, not its path: the same shaderc built into another
    // cargo target folder (another checkout, CI) must find the same build. CMake sees it
    // through a link in the build folder, so a new path changes no command line Ninja keeps.
    let versions = [
        version_of(Path::new(&cxx)),
        match backend {
            Backend::Vulkan => version_of(&glslc),
            Backend::Cpu => String::new(),
        },
        version_of(Path::new("cmake")),
    ];
    let tools: Vec<&[u8]> = options
        .iter()
        .map(|o| o.as_bytes())
        .chain(versions.iter().map(|v| v.as_bytes()))
        .collect();
    let key = content_key(&root, &tools);
    let mut place = Sha256::new();
    for t in &tools {
        place.update(t);
    }
    place.update(root.as_os_str().as_encoded_bytes());
    let out = cache.join(format!(
        "{}{}-{}",
        folder_label(&root),
        match backend {
            Backend::Vulkan => "",
            Backend::Cpu => "-cpu",
        },
        &hex(&place.finalize())[..16]
    ));
    let glslc_link = out.join("glslc");
    if backend == Backend::Vulkan {
        options.push(format!(
            "-DVulkan_GLSLC_EXECUTABLE={}",
            glslc_link.display()
        ));
    }
    // What a configure depends on: any change reconfigures from an empty folder.
    let fingerprint = format!(
        "tree {}\ncxx {cxx} {}\nglslc {}\ncmake {}\n{}\n",
        root.display(),
        versions[0],
        versions[1],
        versions[2],
        options.join("\n")
    );
    let (configured, built) = (out.join("configured"), out.join("built"));
    if let Some(lib_dir) = finished(&built, &configured, &fingerprint, &key, backend) {
        return Ok(Build { root, lib_dir, key });
    }
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let _lock = Lock::take(&out.join("lock"))?;
    // Another process may have built it while we waited.
    if let Some(lib_dir) = finished(&built, &configured, &fingerprint, &key, backend) {
        return Ok(Build { root, lib_dir, key });
    }
    if backend == Backend::Vulkan
        && std::fs::read_link(&glslc_link).ok().as_deref() != Some(glslc.as_path())
    {
        let _ = std::fs::remove_file(&glslc_link);
        std::os::unix::fs::symlink(&glslc, &glslc_link)
            .map_err(|e| format!("{}: {e}", glslc_link.display()))?;
    }
    let _ = std::fs::remove_file(&built);
    let log_path = out.join("build.log");
    let mut log = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
    let _ = writeln!(
        log,
        "ggml root: {}\nglslc: {}\ncontent key: {key}\n",
        root.display(),
        glslc.display()
    );
    let started = std::time::Instant::now();
    let build_dir = out.join("build");
    let wrapper = out.join("wrapper");
    let mut fresh = false;
    if let Some(why) = broken(&build_dir, &wrapper, &configured, &fingerprint) {
        eprintln!(
            "ggml: building {} with the {} backend into {} from scratch ({why}; log: {})",
            root.display(),
            backend.name(),
            out.display(),
            log_path.display()
        );
        let _ = writeln!(log, "from scratch: {why}");
        configure(&out, &root, &options, &fingerprint, &mut log, &log_path)?;
        fresh = true;
    } else {
        eprintln!(
            "ggml: updating the build of {} in {} (Ninja rebuilds what changed; log: {})",
            root.display(),
            out.display(),
            log_path.display()
        );
    }
    let mut lib_dir = compile(&build_dir, library, &mut log, &log_path)?;
    if lib_dir.is_none() && !fresh {
        // Ninja was content but the libraries are missing: the folder is broken.
        eprintln!("ggml: the build folder lacks {library}; building from scratch");
        let _ = writeln!(log, "from scratch: no {library} after an update");
        configure(&out, &root, &options, &fingerprint, &mut log, &log_path)?;
        lib_dir = compile(&build_dir, library, &mut log, &log_path)?;
    }
    let lib_dir = lib_dir.ok_or_else(|| {
        failure(
            &format!("the build finished without {library}"),
            &log_path,
            "build",
        )
    })?;
    let snapshot = snapshot(&out, &lib_dir, &key, backend).map_err(|e| {
        format!(
            "cannot copy the built libraries into {}: {e}",
            out.join("lib").display()
        )
    })?;
    std::fs::write(&built, format!("{key}\n{}\n", snapshot.display()))
        .map_err(|e| e.to_string())?;
    eprintln!(
        "ggml: {} in {:.0}s (build {key}, {})",
        if fresh { "built" } else { "updated" },
        started.elapsed().as_secs_f64(),
        snapshot.display()
    );
    Ok(Build {
        root,
        lib_dir: snapshot,
        key,
    })
}

/// The content key: the tree's ggml sources (other backends' folders left out), then the
/// options and tool versions in `tools`; its first 16 hex digits name the build in reports.
fn content_key(root: &Path, tools: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for file in walk(root) {
        let rel = file.strip_prefix(root).unwrap_or(&file);
        if other_backend(rel) {
            continue;
        }
        h.update(rel.to_string_lossy().as_bytes());
        h.update([0]);
        h.update(std::fs::read(&file).unwrap_or_default());
        h.update([0]);
    }
    for t in tools {
        h.update(t);
    }
    hex(&h.finalize())[..16].to_string()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A readable prefix for a tree's build folder: the checkout's folder name (`llama.cpp` for
/// `…/llama.cpp/ggml`), in plain characters.
fn folder_label(root: &Path) -> String {
    let named = if root.file_name().is_some_and(|n| n == "ggml") {
        root.parent().unwrap_or(root)
    } else {
        root
    };
    let name: String = named
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    if name.is_empty() {
        "ggml".into()
    } else {
        name
    }
}

/// The snapshot of a finished build of content `key` with this configure fingerprint, if the
/// folder has one.
fn finished(
    built: &Path,
    configured: &Path,
    fingerprint: &str,
    key: &str,
    backend: Backend,
) -> Option<PathBuf> {
    let text = std::fs::read_to_string(built).ok()?;
    let mut lines = text.lines();
    let (k, lib) = (lines.next()?, PathBuf::from(lines.next()?));
    (k == key
        && std::fs::read_to_string(configured).ok()? == fingerprint
        && lib.join(backend.library()).is_file()
        && lib.join("libggml-base.so").is_file())
    .then_some(lib)
}

/// Why the build folder cannot be updated in place (None: Ninja can take it from here).
fn broken(
    build_dir: &Path,
    wrapper: &Path,
    configured: &Path,
    fingerprint: &str,
) -> Option<String> {
    let Ok(recorded) = std::fs::read_to_string(configured) else {
        return Some(if build_dir.exists() {
            "its configure never finished".into()
        } else {
            "first build of this tree".into()
        });
    };
    if recorded != fingerprint {
        return Some("the tree path, options or tools changed".into());
    }
    let cache = std::fs::read_to_string(build_dir.join("CMakeCache.txt")).unwrap_or_default();
    let home = cache
        .lines()
        .find_map(|l| l.strip_prefix("CMAKE_HOME_DIRECTORY:INTERNAL="));
    let same = |a: &Path, b: &Path| {
        a.canonicalize()
            .ok()
            .is_some_and(|a| Some(a) == b.canonicalize().ok())
    };
    if !home.is_some_and(|h| same(Path::new(h), wrapper)) {
        return Some("its CMake cache is missing or belongs to another source folder".into());
    }
    if !build_dir.join("build.ninja").is_file() {
        return Some("Ninja's build file is missing".into());
    }
    None
}

/// Configures an empty build folder (removing what was there) and records the fingerprint.
/// ggml is built as a subproject, as llama.cpp uses it: not standalone, so no tests, examples
/// or pkg-config file (crate-vendored trees lack ggml.pc.in).
fn configure(
    out: &Path,
    root: &Path,
    options: &[String],
    fingerprint: &str,
    log: &mut std::fs::File,
    log_path: &Path,
) -> Result<(), String> {
    let configured = out.join("configured");
    let _ = std::fs::remove_file(&configured);
    let build_dir = out.join("build");
    if build_dir.exists() {
        std::fs::remove_dir_all(&build_dir)
            .map_err(|e| format!("cannot clear {}: {e}", build_dir.display()))?;
    }
    let wrapper = out.join("wrapper");
    std::fs::create_dir_all(&wrapper).map_err(|e| e.to_string())?;
    std::fs::write(
        wrapper.join("CMakeLists.txt"),
        format!(
            "cmake_minimum_required(VERSION 3.19)\nproject(vkdiff_ggml C CXX)\nadd_subdirectory(\"{}\" ggml)\n",
            root.display()
        ),
    )
    .map_err(|e| e.to_string())?;
    let mut cmd = Command::new("cmake");
    cmd.arg("-S")
        .arg(&wrapper)
        .arg("-B")
        .arg(&build_dir)
        .args(options);
    run_logged(&mut cmd, log, "configure").map_err(|e| failure(&e, log_path, "configure"))?;
    std::fs::write(&configured, fingerprint).map_err(|e| e.to_string())
}

/// Runs Ninja (through CMake, which reconfigures by itself when a CMakeLists.txt changed) and
/// returns the folder holding `library` (libggml-vulkan.so), if any.
fn compile(
    build_dir: &Path,
    library: &str,
    log: &mut std::fs::File,
    log_path: &Path,
) -> Result<Option<PathBuf>, String> {
    let jobs = vkdiff_gpu::env::env().ggml_jobs.clone().unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .to_string()
    });
    let mut cmd = Command::new("cmake");
    cmd.arg("--build")
        .arg(build_dir)
        .args(["--parallel", &jobs]);
    run_logged(&mut cmd, log, "build").map_err(|e| failure(&e, log_path, "build"))?;
    Ok(find_library_dir(build_dir, library))
}

/// Copies the built libraries into `out/lib/<key>/vulkan/` (libggml-vulkan.so and
/// libggml-base.so; the CPU build's into `cpu/`, libggml-cpu.so), unversioned names: vkdiff loads libggml-base first, which satisfies the
/// backend's dependency by its soname, as in a carried folder) and returns that folder; a
/// link to libggml-base.so one folder up keeps the build tree's layout, which `ci/gpu.sh
/// stage` reads. Snapshots of other keys older than a week go, the newest [`SNAPSHOTS_KEPT`]
/// stay whatever their age.
fn snapshot(out: &Path, lib_dir: &Path, key: &str, backend: Backend) -> std::io::Result<PathBuf> {
    let (library, sub) = (backend.library(), backend.name());
    let base = [lib_dir, lib_dir.parent().unwrap_or(lib_dir)]
        .iter()
        .map(|d| d.join("libggml-base.so"))
        .find(|p| p.exists())
        .ok_or_else(|| std::io::Error::other(format!("no libggml-base.so beside {library}")))?;
    let snaps = out.join("lib");
    let dest = snaps.join(key);
    let partial = snaps.join(format!("{key}.partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(partial.join(sub))?;
    std::fs::copy(&base, partial.join(sub).join("libggml-base.so"))?;
    std::fs::copy(lib_dir.join(library), partial.join(sub).join(library))?;
    std::fs::hard_link(
        partial.join(sub).join("libggml-base.so"),
        partial.join("libggml-base.so"),
    )?;
    if dest.join(sub).join(library).is_file() && dest.join("libggml-base.so").is_file() {
        // The same sources built again (a broken folder rebuilt): a run may be using the
        // snapshot there, which stands for the same build.
        std::fs::remove_dir_all(&partial)?;
    } else {
        let _ = std::fs::remove_dir_all(&dest);
        std::fs::rename(&partial, &dest)?;
    }
    let dest = dest.join(sub);
    let week = std::time::Duration::from_secs(7 * 24 * 3600);
    let mut others: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&snaps)?
        .flatten()
        .filter(|e| Some(e.path().as_path()) != dest.parent())
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    others.sort();
    others.reverse();
    for (modified, path) in others.into_iter().skip(SNAPSHOTS_KEPT) {
        if modified.elapsed().is_ok_and(|age| age > week) {
            let _ = std::fs::remove_dir_all(path);
        }
    }
    Ok(dest)
}

/// Library snapshots kept per build folder whatever their age (a run still going on may use
/// one).
const SNAPSHOTS_KEPT: usize = 4;

/// Runs `cmd`, its output into `log`, showing Ninja's `[i/n]` progress on one stderr line.
fn run_logged(cmd: &mut Command, log: &mut std::fs::File, stage: &str) -> Result<(), String> {
    let _ = writeln!(log, "$ {cmd:?}");
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run cmake ({e}); install cmake and ninja (ci/install.sh)"))?;
    let stderr = child.stderr.take().expect("piped");
    let err_lines = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut last_shown = std::time::Instant::now();
    for line in BufReader::new(child.stdout.take().expect("piped"))
        .lines()
        .map_while(Result::ok)
    {
        let _ = writeln!(log, "{line}");
        if line.starts_with('[') {
            let progress: String = line.chars().take(100).collect();
            if tty {
                eprint!("\r\x1b[2Kggml {stage}: {progress}");
            } else if last_shown.elapsed().as_secs() >= 30 {
                eprintln!("ggml {stage}: {progress}");
                last_shown = std::time::Instant::now();
            }
        }
    }
    if tty {
        eprintln!();
    }
    for line in err_lines.join().unwrap_or_default() {
        let _ = writeln!(log, "{line}");
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cmake {stage} failed ({status})"))
    }
}

/// The error for a failed build: what failed, the log's tail, and what to do.
fn failure(what: &str, log: &Path, stage: &str) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(25)..].join("\n    ");
    format!(
        "building ggml failed: {what}\n  last lines of {}:\n    {tail}\n  what to do: {}",
        log.display(),
        if stage == "configure" {
            "check that cmake ≥ 3.19, ninja, a C++ compiler, the Vulkan headers and (recent trees) spirv-headers \
             are installed (bash ci/install.sh); the log names the missing piece"
        } else {
            "read the log for the first error; a tree older or newer than vkdiff knows may need other Vulkan \
             headers (VKDIFF_VULKAN_HEADERS) or glslc (VKDIFF_GLSLC); delete the build folder to retry from scratch"
        }
    )
}

/// An exclusive `flock` on the build folder's lock file, so two vkdiff processes never build
/// one folder at once; the kernel releases it when the holder exits, however it exits.
struct Lock(#[allow(dead_code)] std::fs::File);

extern "C" {
    fn flock(fd: std::ffi::c_int, operation: std::ffi::c_int) -> std::ffi::c_int;
}
const LOCK_EX: std::ffi::c_int = 2;
const LOCK_NB: std::ffi::c_int = 4;

impl Lock {
    fn take(path: &Path) -> Result<Lock, String> {
        use std::os::fd::AsRawFd;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let fd = file.as_raw_fd();
        // SAFETY: flock on a file descriptor this function owns.
        if unsafe { flock(fd, LOCK_EX | LOCK_NB) } != 0 {
            eprintln!(
                "ggml: another vkdiff process is building in {}; waiting for it",
                path.parent().unwrap_or(path).display()
            );
            // SAFETY: as above; blocks until the holder releases it.
            while unsafe { flock(fd, LOCK_EX) } != 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(format!("locking {}: {e}", path.display()));
                }
            }
        }
        Ok(Lock(file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for a ggml tree: two tiny shared libraries named as ggml's, built by CMake
    /// and Ninja through [`build_in`] like a real tree (seconds instead of minutes).
    fn fake_tree(dir: &Path) {
        let vk = dir.join("src/ggml-vulkan");
        std::fs::create_dir_all(&vk).unwrap();
        std::fs::create_dir_all(dir.join("include")).unwrap();
        std::fs::write(dir.join("include/ggml.h"), "int ggml_base(void);\n").unwrap();
        std::fs::write(
            dir.join("CMakeLists.txt"),
            "add_library(ggml-base SHARED base.c)\n\
             add_library(ggml-vulkan SHARED src/ggml-vulkan/vk.c)\n\
             target_link_libraries(ggml-vulkan ggml-base)\n",
        )
        .unwrap();
        std::fs::write(dir.join("base.c"), "int ggml_base(void) { return 1; }\n").unwrap();
        std::fs::write(
            vk.join("vk.c"),
            "int ggml_base(void);\nint ggml_vk(void) { return ggml_base(); }\n",
        )
        .unwrap();
    }

    fn mtime(p: &Path) -> std::time::SystemTime {
        p.metadata().and_then(|m| m.modified()).unwrap()
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("vkdiff-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// The build folder of a build (its libraries are in `lib/<key>/vulkan`).
    fn folder(b: &Build) -> PathBuf {
        b.lib_dir.ancestors().nth(3).unwrap().to_path_buf()
    }

    /// The library in the build folder (not the snapshot).
    fn built_lib(b: &Build, name: &str) -> PathBuf {
        let lib_dir = find_library_dir(&folder(b).join("build"), "libggml-vulkan.so").unwrap();
        [&lib_dir, lib_dir.parent().unwrap()]
            .iter()
            .map(|d| d.join(name))
            .find(|p| p.exists())
            .unwrap()
    }

    #[test]
    fn an_edit_rebuilds_in_place_and_a_broken_folder_from_scratch() {
        if find_glslc().is_err() || Command::new("ninja").arg("--version").output().is_err() {
            eprintln!("skipped: no glslc or ninja");
            return;
        }
        let root = scratch("fake-ggml");
        let (tree, cache) = (root.join("tree"), root.join("cache"));
        fake_tree(&tree);
        let first = build_in(&tree, &cache).unwrap();
        let out = folder(&first);
        assert!(first.lib_dir.join("libggml-vulkan.so").is_file());
        let base = built_lib(&first, "libggml-base.so");
        let (base_t, vk_t) = (mtime(&base), mtime(&built_lib(&first, "libggml-vulkan.so")));

        // Unchanged: the same build, nothing run.
        let again = build_in(&tree, &cache).unwrap();
        assert_eq!((&again.key, &again.lib_dir), (&first.key, &first.lib_dir));

        // An edit: a new content key, the same folder, only the edited library relinked.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let vk_c = tree.join("src/ggml-vulkan/vk.c");
        let mut text = std::fs::read_to_string(&vk_c).unwrap();
        text.push_str("int ggml_vk2(void) { return 2; }\n");
        std::fs::write(&vk_c, text).unwrap();
        let edited = build_in(&tree, &cache).unwrap();
        assert_ne!(edited.key, first.key);
        assert!(
            edited.lib_dir.starts_with(&out),
            "{}",
            edited.lib_dir.display()
        );
        assert_eq!(
            mtime(&base),
            base_t,
            "libggml-base was rebuilt for an edit to vk.c"
        );
        assert_ne!(mtime(&built_lib(&edited, "libggml-vulkan.so")), vk_t);
        let log = std::fs::read_to_string(out.join("build.log")).unwrap();
        assert!(!log.contains("from scratch"), "{log}");
        // The first build's snapshot is still there for a run that uses it.
        assert!(first.lib_dir.join("libggml-vulkan.so").is_file());

        // A broken folder (Ninja's file gone, as after a configure that died): from scratch.
        std::fs::remove_file(out.join("build/build.ninja")).unwrap();
        std::fs::write(&vk_c, std::fs::read_to_string(&vk_c).unwrap() + "\n").unwrap();
        let rebuilt = build_in(&tree, &cache).unwrap();
        let log = std::fs::read_to_string(out.join("build.log")).unwrap();
        assert!(
            log.contains("from scratch: Ninja's build file is missing"),
            "{log}"
        );
        assert_ne!(mtime(&base), base_t);
        assert!(rebuilt.lib_dir.join("libggml-vulkan.so").is_file());

        // A configure that never finished (no fingerprint): from scratch too.
        std::fs::remove_file(out.join("configured")).unwrap();
        std::fs::remove_file(out.join("built")).unwrap();
        build_in(&tree, &cache).unwrap();
        let log = std::fs::read_to_string(out.join("build.log")).unwrap();
        assert!(
            log.contains("from scratch: its configure never finished"),
            "{log}"
        );

        // A CMake cache of another source folder: from scratch.
        let cache_txt = out.join("build/CMakeCache.txt");
        let text = std::fs::read_to_string(&cache_txt).unwrap();
        let moved = text
            .lines()
            .map(|l| {
                if l.starts_with("CMAKE_HOME_DIRECTORY:INTERNAL=") {
                    "CMAKE_HOME_DIRECTORY:INTERNAL=/elsewhere".to_string()
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(&cache_txt, moved).unwrap();
        std::fs::remove_file(out.join("built")).unwrap();
        build_in(&tree, &cache).unwrap();
        let log = std::fs::read_to_string(out.join("build.log")).unwrap();
        assert!(log.contains("another source folder"), "{log}");

        // Two processes (here threads, each with its own lock file handle) at once: one builds,
        // the other waits and takes its result.
        let fresh = root.join("tree2");
        fake_tree(&fresh);
        let results: Vec<Build> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..2)
                .map(|_| s.spawn(|| build_in(&fresh, &cache).unwrap()))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(results[0].lib_dir, results[1].lib_dir);
        let out2 = folder(&results[0]);
        let log = std::fs::read_to_string(out2.join("build.log")).unwrap();
        assert_eq!(log.matches("from scratch").count(), 1, "{log}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
