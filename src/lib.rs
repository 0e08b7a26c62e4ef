//! vkdiff: proves ggml-vulkan compute shaders right by running them against an exact CPU
//! reference.
//!
//! - [`kernels`]: the table of kernels and variants every front end iterates.
//! - [`cases`]: one case model per kernel (shapes, types, seeded data, proptest strategies).
//! - [`tolerance`]: the arithmetic the error models share (each kernel's own model is its
//!   case module's `bounds`).
//! - [`compare`]: per-element verdicts.
//! - [`findings`]: signatures, reachability, distinct and known findings.
//! - [`campaign`]: running, shrinking, summarising; [`repro`]: reproducer files;
//!   [`report`]: the streamed JSON report and the HTML page.
//! - [`mutate`]: mutation testing of a shader tree (how strong the suite is).
//! - [`bench`]: timing on realistic shapes against measured device ceilings.
//! - [`fuzzing`]: fuzzer bytes → cases through each kernel's strategy.
//! - [`cli`]: the command line (parsing apart from running).
//! - [`worker`]: where cases are evaluated (in process, or in a restartable worker process).
#![deny(missing_docs)]

pub mod bench;
pub mod campaign;
pub mod cases;
pub mod cli;
pub mod compare;
pub mod diff;
pub mod findings;
pub mod fuzzing;
pub mod ggml;
pub mod kernels;
pub mod mutate;
pub mod report;
pub mod repro;
pub mod tolerance;
pub mod worker;

use std::path::{Path, PathBuf};

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
