//! GLSL → SPIR-V with shaderc, the way upstream's generator invokes glslc (one compile per
//! variant, every define as `-DKEY=VALUE`, `#include` resolved inside the shader tree), with a
//! two-level cache so re-running a kernel after editing one shader costs only that shader.
//!
//! Disk cache entry (in `cache_dir`): `<key>.spv` plus `<key>.deps` listing every file the
//! compile read with the SHA-256 of its content. `key` hashes the tree path, main file, defines,
//! target and optimisation flag and [`COMPILER_ID`]; an entry is used only while every listed
//! file still has the recorded hash, so an edit to any included header invalidates exactly the
//! variants that include it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::error::{GpuError, Result};

/// Identifies the compiler in cache keys; bump with the shaderc pin in the workspace Cargo.toml.
pub const COMPILER_ID: &str = "shaderc-rs 0.10.1 / glslang 15.3";

/// SPIR-V target environment, as upstream's `--target-env`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum TargetEnv {
    /// `vulkan1.2` (SPIR-V 1.5): every non-cm2 variant.
    Vulkan12,
    /// `vulkan1.3` (SPIR-V 1.6): cm2 variants.
    Vulkan13,
}

/// One compiled variant of a shader file: what upstream's generator names `<name>.spv`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShaderVariant {
    /// Upstream-style variant name, e.g. `mul_mat_vec_q4_0_f32_f32` (for messages and reports).
    pub name: String,
    /// Main source file inside the shader tree, e.g. `mul_mat_vec.comp`.
    pub file: String,
    /// Preprocessor defines in the order given.
    pub defines: Vec<(String, String)>,
    /// Target environment.
    pub target: TargetEnv,
    /// `-O` (upstream uses it everywhere except cm1 variants).
    pub optimize: bool,
}

impl ShaderVariant {
    /// A variant of `file` compiled for vulkan1.2 with `-O`, as most upstream variants are.
    pub fn new(name: impl Into<String>, file: impl Into<String>, defines: &[(&str, &str)]) -> Self {
        ShaderVariant {
            name: name.into(),
            file: file.into(),
            defines: defines
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            target: TargetEnv::Vulkan12,
            optimize: true,
        }
    }

    /// The equivalent glslc command line (printed in reproducers so a user can rerun it by hand).
    pub fn glslc_command(&self) -> String {
        let env = match self.target {
            TargetEnv::Vulkan12 => "vulkan1.2",
            TargetEnv::Vulkan13 => "vulkan1.3",
        };
        let mut cmd = format!("glslc -fshader-stage=compute --target-env={env}");
        if self.optimize {
            cmd.push_str(" -O");
        }
        cmd.push_str(&format!(" {}", self.file));
        for (k, v) in &self.defines {
            cmd.push_str(&format!(" -D{k}={v}"));
        }
        cmd
    }
}

/// Compiled SPIR-V and the hash that identifies it in the pipeline cache.
#[derive(Debug)]
pub struct Spirv {
    /// The words.
    pub words: Vec<u32>,
    /// SHA-256 of the words.
    pub hash: [u8; 32],
}

/// A directory of GLSL sources (ours, or a user's upstream `vulkan-shaders` folder) and the
/// compiled variants taken from it. Sources are assumed not to change while this object lives;
/// a mutant tree gets its own `ShaderTree`.
pub struct ShaderTree {
    dir: PathBuf,
    cache_dir: Option<PathBuf>,
    compiler: Option<shaderc::Compiler>,
    memo: HashMap<ShaderVariant, Arc<Spirv>>,
}

impl ShaderTree {
    /// A tree rooted at `dir`, caching SPIR-V on disk in [`default_cache_dir`].
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self::with_cache(dir, default_cache_dir())
    }

    /// A tree with an explicit disk cache (None: memory only).
    pub fn with_cache(dir: impl Into<PathBuf>, cache_dir: Option<PathBuf>) -> Self {
        ShaderTree {
            dir: dir.into(),
            cache_dir,
            compiler: None,
            memo: HashMap::new(),
        }
    }

    /// The tree's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// True when the tree has the variant's main file.
    pub fn has(&self, variant: &ShaderVariant) -> bool {
        self.dir.join(&variant.file).is_file()
    }

    /// Every variant this tree has handed out SPIR-V for: what the kernels run on it used
    /// (`vkdiff mutate` learns from it which files each kernel variant compiles).
    pub fn variants(&self) -> Vec<ShaderVariant> {
        let mut v: Vec<ShaderVariant> = self.memo.keys().cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// SPIR-V of `variant`, from memory, the disk cache, or a fresh compile.
    pub fn spirv(&mut self, variant: &ShaderVariant) -> Result<Arc<Spirv>> {
        if let Some(s) = self.memo.get(variant) {
            return Ok(s.clone());
        }
        if !self.has(variant) {
            return Err(GpuError::MissingShader {
                file: variant.file.clone(),
                dir: self.dir.display().to_string(),
            });
        }
        let _span = crate::profile::span("SPIR-V (cache or compile)");
        let key = self.cache_key(variant);
        let spirv = match self.load_cached(&key) {
            Some(words) => words,
            None => {
                let _span = crate::profile::span("SPIR-V compile");
                let (words, deps) = self.compile(variant)?;
                // A cache that cannot be written only costs time, never a result.
                let _ = self.store_cached(&key, &words, &deps);
                words
            }
        };
        let hash = Sha256::digest(words_as_bytes(&spirv)).into();
        let s = Arc::new(Spirv { words: spirv, hash });
        self.memo.insert(variant.clone(), s.clone());
        Ok(s)
    }

    fn cache_key(&self, v: &ShaderVariant) -> String {
        let mut h = Sha256::new();
        let dir = std::fs::canonicalize(&self.dir).unwrap_or_else(|_| self.dir.clone());
        for part in [
            COMPILER_ID,
            &dir.display().to_string(),
            &v.file,
            &format!("{:?}{}", v.target, v.optimize),
        ] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        for (k, val) in &v.defines {
            h.update(format!("{k}={val}\0").as_bytes());
        }
        // The generated include is no file of the tree, so the .deps check cannot see it.
        h.update(crate::iq_glsl::iq_grids_glsl().as_bytes());
        hex(&h.finalize())
    }

    fn load_cached(&self, key: &str) -> Option<Vec<u32>> {
        let dir = self.cache_dir.as_ref()?;
        let deps = std::fs::read_to_string(dir.join(format!("{key}.deps"))).ok()?;
        for line in deps.lines() {
            let (digest, path) = line.split_once(' ')?;
            if file_digest(Path::new(path))? != digest {
                return None;
            }
        }
        let bytes = std::fs::read(dir.join(format!("{key}.spv"))).ok()?;
        (bytes.len() % 4 == 0).then(|| {
            bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect()
        })
    }

    fn store_cached(&self, key: &str, words: &[u32], deps: &[PathBuf]) -> std::io::Result<()> {
        let Some(dir) = &self.cache_dir else {
            return Ok(());
        };
        std::fs::create_dir_all(dir)?;
        let mut manifest = String::new();
        for p in deps {
            let digest = file_digest(p).ok_or_else(|| std::io::Error::other("dep vanished"))?;
            manifest.push_str(&format!("{digest} {}\n", p.display()));
        }
        // Write the SPIR-V first: a manifest never points at a missing or partial blob.
        let tmp = dir.join(format!("{key}.spv.tmp{}", std::process::id()));
        std::fs::write(&tmp, words_as_bytes(words))?;
        std::fs::rename(&tmp, dir.join(format!("{key}.spv")))?;
        std::fs::write(dir.join(format!("{key}.deps")), manifest)
    }

    fn compile(&mut self, v: &ShaderVariant) -> Result<(Vec<u32>, Vec<PathBuf>)> {
        if self.compiler.is_none() {
            self.compiler = Some(shaderc::Compiler::new().map_err(|e| GpuError::Compile {
                variant: v.name.clone(),
                file: v.file.clone(),
                message: format!("shaderc could not create a compiler: {e}"),
            })?);
        }
        let compiler = self.compiler.as_ref().unwrap();
        let main_path = self.dir.join(&v.file);
        let source = std::fs::read_to_string(&main_path)
            .map_err(|e| GpuError::Io(format!("{}: {e}", main_path.display())))?;
        let deps = Arc::new(std::sync::Mutex::new(vec![main_path.clone()]));
        let seen = deps.clone();
        let compile_err = |message: String| GpuError::Compile {
            variant: v.name.clone(),
            file: v.file.clone(),
            message,
        };

        let mut opts = shaderc::CompileOptions::new()
            .map_err(|e| compile_err(format!("shaderc options: {e}")))?;
        let env = match v.target {
            TargetEnv::Vulkan12 => shaderc::EnvVersion::Vulkan1_2,
            TargetEnv::Vulkan13 => shaderc::EnvVersion::Vulkan1_3,
        };
        opts.set_target_env(shaderc::TargetEnv::Vulkan, env as u32);
        if v.optimize {
            opts.set_optimization_level(shaderc::OptimizationLevel::Performance);
        }
        for (k, val) in &v.defines {
            opts.add_macro_definition(k, Some(val));
        }
        let root = self.dir.clone();
        opts.set_include_callback(move |name, _kind, from, _depth| {
            // Like glslc: relative to the including file, then to the tree root.
            let from_dir = Path::new(from)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| root.clone());
            let Some(path) = [from_dir.join(name), root.join(name)]
                .into_iter()
                .find(|p| p.is_file())
            else {
                // The i-quant tables, generated from iq_grids.json, unless the tree has its own.
                if name == crate::iq_glsl::IQ_GRIDS_INCLUDE {
                    return Ok(shaderc::ResolvedInclude {
                        resolved_name: format!("<generated>/{name}"),
                        content: crate::iq_glsl::iq_grids_glsl().to_string(),
                    });
                }
                return Err(format!("cannot find include {name} (from {from})"));
            };
            let content =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            seen.lock().unwrap().push(path.clone());
            Ok(shaderc::ResolvedInclude {
                resolved_name: path.display().to_string(),
                content,
            })
        });
        let artifact = compiler
            .compile_into_spirv(
                &source,
                shaderc::ShaderKind::Compute,
                &main_path.display().to_string(),
                "main",
                Some(&opts),
            )
            .map_err(|e| compile_err(e.to_string()))?;
        drop(opts);
        let deps = deps.lock().unwrap().clone();
        Ok((artifact.as_binary().to_vec(), deps))
    }
}

/// `$VKDIFF_CACHE_DIR`, else `$XDG_CACHE_HOME/vkdiff/spirv`, else `~/.cache/vkdiff/spirv`.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(d) = &crate::env::env().cache_dir {
        return Some(d.clone());
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("vkdiff").join("spirv"))
}

fn file_digest(path: &Path) -> Option<String> {
    std::fs::read(path).ok().map(|b| hex(&Sha256::digest(b)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn words_as_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}
