//! Exact CPU reference for the ggml-vulkan kernels vkdiff tests.
//!
//! Tensors follow ggml's model (element type, `ne` element counts, `nb` byte strides), block
//! formats are bit-exact with ggml, and every reduction accumulates in f64 so the result is the
//! mathematically exact value of the op on the given inputs (up to one final f64 rounding).
#![deny(missing_docs)]

pub mod error;
pub mod formats;
pub mod ops;
pub mod tensor;

pub use error::Error;
pub use formats::DType;

/// Result type of every fallible function in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
