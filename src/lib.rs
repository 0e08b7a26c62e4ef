//! vkdiff: proves ggml-vulkan compute shaders right by running them against an exact CPU
//! reference.
//!
//! Layers, each importing only from those below it:
//! 1. [`model`]: the case model (kernels, cases, error models, verdicts, the driver boundary).
//! 2. [`exec`]: execution (worker processes, the two drivers: vkdiff's runners and ggml).
//! 3. [`campaign`]: running, shrinking and grouping findings; reproducer files.
//! 4. Front ends: [`cli`] (the command line), [`report`] (the streamed JSON report and the HTML
//!    page), [`diff`], [`bench`] (timing), [`mutate`] (mutation testing), [`fuzzing`].
#![deny(missing_docs)]

pub mod campaign;
pub mod exec;
pub mod model;

pub mod bench;
pub mod cli;
pub mod diff;
pub mod fuzzing;
pub mod mutate;
pub mod report;

// Short public paths for the modules tests, fuzz targets and front ends use most.
pub use campaign::{findings, repro};
pub use exec::{ggml, worker};
pub use model::{cases, compare, kernels, tolerance};

pub use exec::own::default_shader_dir;
