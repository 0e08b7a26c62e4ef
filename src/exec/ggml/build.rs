//! Building ggml with its Vulkan backend from a checkout (`--ggml DIR`): CMake + Ninja into a
//! cache folder keyed by the tree's ggml sources, the options and the tools, so a tree is built
//! once per machine and an edit to it rebuilds.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

/// A finished build: where its shared libraries are.
#[derive(Debug, Clone)]
pub struct Build {
    /// The ggml root that was built (DIR or DIR/ggml).
    pub root: PathBuf,
    /// The folder holding libggml-base, libggml and libggml-vulkan.
    pub lib_dir: PathBuf,
    /// The cache key (first 16 hex digits), which names the build in reports.
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

/// The folder under `dir` holding `libggml-vulkan.so`, which CMake makes a symlink to the
/// versioned file (so [`walk`], which lists regular files, does not see it).
fn find_library_dir(dir: &Path) -> Option<PathBuf> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            if e.file_name() == "libggml-vulkan.so" {
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

/// Builds (or finds in the cache) ggml with the Vulkan backend from `dir`. Progress goes to
/// stderr; a failure names the log and quotes its tail.
pub fn build(dir: &Path) -> Result<Build, String> {
    // A folder holding an existing build's libraries is used as it is (your own build).
    if dir.join("libggml-vulkan.so").exists() {
        return Ok(Build {
            root: dir.to_path_buf(),
            lib_dir: dir.to_path_buf(),
            key: "prebuilt".into(),
        });
    }
    let root = ggml_root(dir)?;
    let glslc = find_glslc()?;
    let headers = vulkan_headers()?;
    let library = vulkan_library();
    let mut options = vec![
        "-G".to_string(),
        "Ninja".into(),
        "-DCMAKE_BUILD_TYPE=Release".into(),
        "-DGGML_VULKAN=ON".into(),
        "-DBUILD_SHARED_LIBS=ON".into(),
        "-DGGML_BACKEND_DL=OFF".into(),
        // The CPU backend is not used (the reference is vkdiff's own); leaving it out halves the build.
        "-DGGML_CPU=OFF".into(),
        "-DGGML_NATIVE=OFF".into(),
        "-DGGML_OPENMP=OFF".into(),
        "-DGGML_BUILD_TESTS=OFF".into(),
        "-DGGML_BUILD_EXAMPLES=OFF".into(),
        format!("-DVulkan_GLSLC_EXECUTABLE={}", glslc.display()),
    ];
    if let Some(h) = &headers {
        options.push(format!("-DVulkan_INCLUDE_DIR={}", h.display()));
    }
    if let Some(l) = &library {
        options.push(format!("-DVulkan_LIBRARY={}", l.display()));
    }
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let mut h = Sha256::new();
    for file in walk(&root) {
        let rel = file.strip_prefix(&root).unwrap_or(&file);
        if other_backend(rel) {
            continue;
        }
        h.update(rel.to_string_lossy().as_bytes());
        h.update([0]);
        h.update(std::fs::read(&file).unwrap_or_default());
        h.update([0]);
    }
    // glslc enters the key by its version (below), not its path: the same shaderc built into
    // another cargo target folder (another checkout, CI) must find the same cached build.
    for o in options
        .iter()
        .filter(|o| !o.starts_with("-DVulkan_GLSLC_EXECUTABLE="))
    {
        h.update(o.as_bytes());
    }
    h.update(version_of(Path::new(&cxx)).as_bytes());
    h.update(version_of(&glslc).as_bytes());
    h.update(version_of(Path::new("cmake")).as_bytes());
    let key: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let key = key[..16].to_string();
    let out = cache_root().join(&key);
    let done = out.join("done");
    if let Ok(lib) = std::fs::read_to_string(&done) {
        let lib_dir = PathBuf::from(lib.trim());
        if lib_dir.join("libggml-vulkan.so").exists() {
            return Ok(Build { root, lib_dir, key });
        }
    }
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let _lock = Lock::take(&out.join("lock"))?;
    // Another process may have finished it while we waited.
    if let Ok(lib) = std::fs::read_to_string(&done) {
        return Ok(Build {
            root,
            lib_dir: PathBuf::from(lib.trim()),
            key,
        });
    }
    let log_path = out.join("build.log");
    let mut log = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
    let _ = writeln!(
        log,
        "ggml root: {}\nglslc: {}\n",
        root.display(),
        glslc.display()
    );
    eprintln!(
        "ggml: building {} with the Vulkan backend into {} (once per tree; log: {})",
        root.display(),
        out.display(),
        log_path.display()
    );
    let started = std::time::Instant::now();
    let build_dir = out.join("build");
    // ggml as a subproject, as llama.cpp uses it: not standalone, so no tests, examples or
    // pkg-config file (crate-vendored trees lack ggml.pc.in).
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
    let mut configure = Command::new("cmake");
    configure
        .arg("-S")
        .arg(&wrapper)
        .arg("-B")
        .arg(&build_dir)
        .args(&options);
    run_logged(&mut configure, &mut log, "configure")
        .map_err(|e| failure(&e, &log_path, "configure"))?;
    let jobs = vkdiff_gpu::env::env().ggml_jobs.clone().unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .to_string()
    });
    let mut compile = Command::new("cmake");
    compile
        .arg("--build")
        .arg(&build_dir)
        .args(["--parallel", &jobs]);
    run_logged(&mut compile, &mut log, "build").map_err(|e| failure(&e, &log_path, "build"))?;
    let lib_dir = find_library_dir(&build_dir).ok_or_else(|| {
        failure(
            "the build finished without libggml-vulkan.so",
            &log_path,
            "build",
        )
    })?;
    std::fs::write(&done, lib_dir.display().to_string()).map_err(|e| e.to_string())?;
    eprintln!(
        "ggml: built in {:.0}s ({})",
        started.elapsed().as_secs_f64(),
        lib_dir.display()
    );
    Ok(Build { root, lib_dir, key })
}

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

/// A lock file holding the builder's pid, so two vkdiff processes do not build one key at once.
struct Lock(PathBuf);

impl Lock {
    fn take(path: &Path) -> Result<Lock, String> {
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
            {
                Ok(mut f) => {
                    let _ = write!(f, "{}", std::process::id());
                    return Ok(Lock(path.to_path_buf()));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let pid = std::fs::read_to_string(path).unwrap_or_default();
                    let alive =
                        !pid.trim().is_empty() && Path::new("/proc").join(pid.trim()).exists();
                    if !alive {
                        let _ = std::fs::remove_file(path);
                        continue;
                    }
                    eprintln!(
                        "ggml: waiting for process {} to finish this build",
                        pid.trim()
                    );
                    std::thread::sleep(std::time::Duration::from_secs(5));
                }
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
