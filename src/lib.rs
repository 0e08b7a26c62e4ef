//! vkdiff: proves ggml-vulkan compute shaders right by running them against an exact CPU
//! reference.
//!
//! - [`kernels`]: the table of kernels and variants every front end iterates.
//! - [`cases`]: one case model per kernel (shapes, types, seeded data, proptest strategies).
//! - [`tolerance`]: the error models behind every per-element bound.
//! - [`compare`]: per-element verdicts.
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
pub mod fuzzing;
pub mod ggml;
pub mod kernels;
pub mod mutate;
pub mod report;
pub mod repro;
pub mod tolerance;
pub mod worker;

use std::path::PathBuf;

/// Our own shader tree: `$VKDIFF_SHADERS`, else `shaders/` of this checkout, else `./shaders`.
pub fn default_shader_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("VKDIFF_SHADERS") {
        return PathBuf::from(d);
    }
    let built = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders"));
    if built.is_dir() {
        built
    } else {
        PathBuf::from("shaders")
    }
}
