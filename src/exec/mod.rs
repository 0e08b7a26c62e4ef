//! Execution: where and by whom cases run. [`worker`] evaluates cases in restartable worker
//! processes (or in process); [`own`] is the driver over vkdiff's own runners and shader tree,
//! [`ggml`] the driver over ggml's own Vulkan backend. Both implement
//! [`crate::model::driver::Driver`]. The worker protocol and the one serve loop are in
//! [`worker`].

pub mod ggml;
pub mod own;
pub mod worker;
