//! The one error type of the reference crate: every variant names what was wrong.

use crate::DType;

/// Invalid input given to the reference: wrong sizes, shapes, strides or types.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A row of a block format must hold a whole number of blocks.
    #[error("{dtype}: {n} elements is not a multiple of the block size {block}")]
    RaggedRow {
        /// The block format.
        dtype: DType,
        /// The element count that was asked for.
        n: usize,
        /// Elements per block.
        block: usize,
    },
    /// A byte buffer has the wrong length for the data it should hold.
    #[error("{what}: expected {expected} bytes, got {got}")]
    ByteLength {
        /// What the buffer holds.
        what: String,
        /// The length it must have.
        expected: usize,
        /// The length it has.
        got: usize,
    },
    /// A tensor shape or stride that the op does not accept.
    #[error("{op}: {reason}")]
    Shape {
        /// The op that rejected its input.
        op: &'static str,
        /// What was wrong, with the numbers.
        reason: String,
    },
    /// An element type the op does not take in this position.
    #[error("{op}: {what} may not be {dtype}")]
    Type {
        /// The op that rejected its input.
        op: &'static str,
        /// Which operand.
        what: &'static str,
        /// The type it was given.
        dtype: DType,
    },
    /// A block format whose ggml reference quantizer vkdiff does not reproduce
    /// (docs/interface.md §2.7: the K-quants, iq4_nl, iq4_xs): values cannot be converted to
    /// it; use raw blocks.
    #[error("{dtype}: ggml's reference quantizer for this format is not specified; generate raw blocks instead")]
    NoQuantizer {
        /// The block format.
        dtype: DType,
    },
    /// An input value the op has no defined result for (an expert id outside [0, n_as)).
    #[error("{op}: {reason}")]
    Value {
        /// The op that rejected its input.
        op: &'static str,
        /// Which value, where, and the valid range.
        reason: String,
    },
}
