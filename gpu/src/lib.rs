//! Runs ggml-vulkan compute shaders on a real Vulkan device.
//!
//! - [`device`]: instance, device choice (`VKDIFF_DEVICE`), capability probing ([`DeviceCaps`]).
//! - [`compile`]: GLSL → SPIR-V with shaderc, cached on disk per variant and include set;
//!   [`iq_glsl`] generates the i-quant tables it serves as an include.
//! - [`context`]: pipelines cached per (SPIR-V, specialization constants), reused buffers,
//!   jobs that poison outputs, dispatch, read back and time; [`heat`] brings clocks up before
//!   timed jobs; [`statistics`] reads the driver's compiler statistics of a pipeline.
//! - [`runners`]: one per kernel family, reproducing upstream's host logic.
#![deny(missing_docs)]

pub mod caps;
pub mod compile;
pub mod context;
pub mod device;
pub mod env;
pub mod error;
pub mod heat;
pub mod iq_glsl;
pub mod layer_messages;
pub mod profile;
pub mod runners;
pub mod statistics;

pub use caps::DeviceCaps;
pub use compile::{ShaderTree, ShaderVariant};
pub use context::Gpu;
pub use error::{GpuError, Result};
