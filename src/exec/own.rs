//! The driver over vkdiff's own runners: our shader tree (the checkout's `shaders/`, another
//! tree given with `--shaders`, or the copy built into the binary) run by the runners of
//! `vkdiff-gpu`, which model the pinned July 2025 host. A case's forced choices (path, split,
//! precision) run as they are.

use std::path::{Path, PathBuf};

use vkdiff_gpu::runners::KernelRun;
use vkdiff_gpu::{DeviceCaps, Gpu, ShaderTree};

use crate::model::driver::{Driver, GraphOp, Latitude, OwnRun};
use crate::model::outcome::Outcome;

/// vkdiff's runners on a device owned by the caller.
pub struct OwnDriver<'a> {
    /// The device.
    pub gpu: &'a mut Gpu,
    /// The shaders.
    pub tree: &'a mut ShaderTree,
}

impl Driver for OwnDriver<'_> {
    fn caps(&self) -> &DeviceCaps {
        self.gpu.caps()
    }

    fn latitude(&self) -> Latitude {
        Latitude::PINNED
    }

    /// The pinned July 2025 interface has no fused kernels, so vkdiff's shaders have none.
    fn fused_skip(&self) -> Option<String> {
        Some(
            "shader mode: the pinned July 2025 interface has no fused kernels, so vkdiff's shaders have no fused mat-vec epilogue; fused graphs run in backend mode (--ggml)"
                .into(),
        )
    }

    fn run_once(&mut self, op: &GraphOp, own: &mut OwnRun<'_>) -> Result<KernelRun, Outcome> {
        if let (GraphOp::Fused { .. }, Some(reason)) = (op, self.fused_skip()) {
            return Err(Outcome::Skip(reason));
        }
        let run = own(self.gpu, self.tree).map_err(Outcome::from_gpu_error)?;
        if !run.validation.is_empty() {
            return Err(Outcome::from_validation(run.validation));
        }
        Ok(run)
    }
}

/// Evaluates `case` with vkdiff's runners on `gpu` and `tree` (each op twice with `repeat`).
pub fn evaluate(
    case: &crate::model::cases::Case,
    gpu: &mut Gpu,
    tree: &mut ShaderTree,
    repeat: bool,
) -> Outcome {
    case.evaluate(&mut crate::model::driver::Ctx {
        driver: &mut OwnDriver { gpu, tree },
        repeat,
    })
}

/// The shader tree built into this binary (`build.rs`).
pub mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_shaders.rs"));
}

/// Our own shader tree: `$VKDIFF_SHADERS`; else `shaders/` of the checkout this binary was built
/// from while it is there (edits take effect without a rebuild); else the tree built into the
/// binary, written out once per content under the cache folder (an installed binary).
pub fn default_shader_dir() -> PathBuf {
    let env = vkdiff_gpu::env::env();
    if let Some(d) = &env.shaders {
        return d.clone();
    }
    let built = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders"));
    if built.is_dir() {
        return built;
    }
    let base = env
        .cache_dir
        .clone()
        .or_else(|| {
            vkdiff_gpu::compile::default_cache_dir().and_then(|d| d.parent().map(Path::to_path_buf))
        })
        .unwrap_or_else(std::env::temp_dir)
        .join("shaders");
    match write_embedded(&base) {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!(
                "vkdiff: cannot write the built-in shaders under {}: {e}",
                base.display()
            );
            built
        }
    }
}

/// Writes [`embedded::SHADERS`] to `base/<content hash>/` unless a complete copy is there, and
/// returns that folder. Written beside it and renamed into place, so a reader never sees half.
fn write_embedded(base: &Path) -> std::io::Result<PathBuf> {
    // FNV-1a over names and contents: stable across builds and toolchains.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, text) in embedded::SHADERS {
        for b in name.bytes().chain([0]).chain(text.bytes()).chain([0]) {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    let dir = base.join(format!("{h:016x}"));
    if dir.join(".complete").is_file() {
        return Ok(dir);
    }
    let tmp = base.join(format!("{h:016x}.tmp{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    for (name, text) in embedded::SHADERS {
        std::fs::write(tmp.join(name), text)?;
    }
    std::fs::write(tmp.join(".complete"), "")?;
    if std::fs::rename(&tmp, &dir).is_err() {
        // Another process won the race: its copy is identical.
        let _ = std::fs::remove_dir_all(&tmp);
    }
    if dir.join(".complete").is_file() {
        Ok(dir)
    } else {
        Err(std::io::Error::other("the written copy vanished"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_built_in_tree_is_the_checkout_s_shaders_folder() {
        let base = std::env::temp_dir().join(format!("vkdiff-embedded-{}", std::process::id()));
        let dir = super::write_embedded(&base).unwrap();
        // A second call finds the complete copy.
        assert_eq!(super::write_embedded(&base).unwrap(), dir);
        let checkout = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
        let mut n = 0;
        for entry in std::fs::read_dir(&checkout).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap();
            assert_eq!(
                std::fs::read(&path).unwrap(),
                std::fs::read(dir.join(name)).unwrap(),
                "{name:?}"
            );
            n += 1;
        }
        assert_eq!(n, super::embedded::SHADERS.len());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
