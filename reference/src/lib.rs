//! Exact CPU implementations of the ggml ops that vkdiff tests on the GPU: an independent
//! reference, usable on its own (no GPU, no Vulkan).
//!
//! * **ggml semantics.** Tensors follow ggml's model ([`Tensor`] / [`TensorView`]: element type,
//!   `ne` element counts with `ne[0]` fastest, `nb` byte strides), so permuted, padded and
//!   broadcast operands are expressed exactly as ggml sees them, and each op returns dst in
//!   ggml's layout ([`ops::Output`]).
//! * **Bit-exact block formats.** [`formats`] decodes every ggml block format (q4_0 … q8_1, the
//!   K-quants, iq4_nl, iq4_xs) to its exact values, reproduces ggml's own f32 dequantization and
//!   its reference quantizers bit for bit.
//! * **Exact arithmetic.** Every element value is exact in f64, and every reduction accumulates
//!   in f64, sequentially in index order: a result is the exact value of the op up to the
//!   rounding of f64 sums, with a fixed, documented operation order (so results are
//!   reproducible bit for bit, whatever the machine, thread count or SIMD width).
//! * **Fast.** The ops are tiled, vectorized (AVX-512, AVX2/AVX, or portable code, picked at run
//!   time) and spread over all cores with rayon, without changing that order; quantized
//!   weights are decoded on the fly, never as a whole f64 copy. `RAYON_NUM_THREADS` limits the
//!   threads. See the crate README for the numbers.
//! * **No panics on bad input.** Invalid shapes, strides, types or values give an [`Error`]
//!   naming what is wrong.
//!
//! | op | function | ggml |
//! |---|---|---|
//! | matrix product | [`ops::mul_mat::mul_mat`] | `ggml_mul_mat` |
//! | mixture-of-experts product | [`ops::mul_mat_id::mul_mat_id`] | `ggml_mul_mat_id` |
//! | flash attention | [`ops::flash_attn::flash_attn`] | `ggml_flash_attn_ext` |
//! | RWKV-7 recurrence | [`ops::wkv7::wkv7`] | `ggml_rwkv_wkv7` |
//!
//! # Block formats
//!
//! Quantize with ggml's reference quantizer and decode back, exactly (f64) or as ggml's own f32
//! numbers:
//!
//! ```
//! use vkdiff_reference::formats::{dequantize, dequantize_f32, quantize, Block, BlockQ4_0};
//! use vkdiff_reference::DType;
//!
//! let x: Vec<f32> = (0..64).map(|i| (i as f32 - 32.0) / 8.0).collect(); // two blocks of 32
//!
//! // q8_0: 34-byte blocks, x ≈ d·q with d = max|x|/127 per block.
//! let q8 = quantize(DType::Q8_0, &x)?;
//! assert_eq!(q8.len(), 2 * DType::Q8_0.block_bytes());
//! let exact = dequantize(DType::Q8_0, &q8, 64)?; // the blocks' exact values, f64
//! for (y, v) in exact.iter().zip(&x) {
//!     assert!((y - f64::from(*v)).abs() <= 4.0 / 127.0);
//! }
//!
//! // q4_0: 18-byte blocks, x ≈ d·(q − 8) with 4-bit q.
//! let q4 = quantize(DType::Q4_0, &x)?;
//! let ggml = dequantize_f32(DType::Q4_0, &q4, 64)?; // ggml's dequantize_row_q4_0, bit for bit
//! let block = BlockQ4_0::from_bytes(&q4[..18]); // the first block's fields
//! assert_eq!(block.d.to_f32(), 0.5); // the signed absmax −4 over −8
//! for (y, v) in ggml.iter().zip(&x) {
//!     assert!((y - v).abs() <= 0.5);
//! }
//! # Ok::<(), vkdiff_reference::Error>(())
//! ```
//!
//! The K-quants have no specified reference quantizer ([`DType::has_quantizer`]); build their
//! blocks from raw fields or bytes and decode them:
//!
//! ```
//! use half::f16;
//! use vkdiff_reference::formats::{dequantize, Block, BlockQ4_K, QK_K};
//! use vkdiff_reference::DType;
//!
//! // x = d·sc·q − dmin·m per 32-element sub-block, with 6-bit (sc, m) packed in `scales`.
//! let mut scales = [0u8; 12];
//! scales[0] = 2; // sub-block 0: scale 2
//! scales[4] = 1; // sub-block 0: min 1
//! let block = BlockQ4_K {
//!     d: f16::from_f32(0.5),
//!     dmin: f16::from_f32(0.25),
//!     scales,
//!     qs: [0x31; 128], // every quant 1 (low nibbles) or 3 (high nibbles)
//! };
//! let mut bytes = vec![0u8; DType::Q4_K.block_bytes()];
//! block.to_bytes(&mut bytes);
//! let x = dequantize(DType::Q4_K, &bytes, QK_K)?;
//! assert_eq!(x[0], 0.5 * 2.0 * 1.0 - 0.25 * 1.0); // sub-block 0, low nibble
//! assert_eq!(x[32], 0.0); // sub-block 1: scale and min 0
//! # Ok::<(), vkdiff_reference::Error>(())
//! ```
//!
//! # Ops on borrowed data
//!
//! Every op takes `&Tensor`, `&TensorView` or a `TensorView`: a view over bytes you already
//! have (a memory-mapped model file, a GPU readback) costs no copy.
//!
//! ```
//! use vkdiff_reference::ops::mul_mat::mul_mat;
//! use vkdiff_reference::{DType, TensorView};
//!
//! let bytes: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
//! let a = TensorView::from_bytes(DType::F32, [2, 2, 1, 1], &bytes)?; // rows (1, 2), (3, 4)
//! let b = TensorView::from_bytes(DType::F32, [2, 1, 1, 1], &bytes[..8])?; // (1, 2)
//! assert_eq!(mul_mat(a, b)?.values, vec![5.0, 11.0]);
//! # Ok::<(), vkdiff_reference::Error>(())
//! ```
#![deny(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

pub mod error;
pub mod formats;
pub mod ops;
pub mod tensor;

pub use error::Error;
pub use formats::DType;
pub use ops::Output;
pub use tensor::{AsTensorView, Tensor, TensorView};

/// Result type of every fallible function in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
