//! ggml's tensor model: an element type, four element counts `ne` (`ne[0]` fastest) and four
//! byte strides `nb`, over a byte buffer. Strides make non-contiguous, permuted and broadcast
//! inputs expressible exactly as ggml sees them.
//!
//! [`Tensor`] owns its bytes; [`TensorView`] borrows them (no copy). Every op takes either:
//! the functions take `impl Into<TensorView>` (so `&Tensor` and `&TensorView` both work) and the
//! input structs of the multi-input ops are generic over [`AsTensorView`].
//!
//! ```
//! use vkdiff_reference::tensor::{Tensor, TensorView};
//! use vkdiff_reference::DType;
//!
//! // A 2×3 f32 matrix stored column-major: element (i0, i1) at byte 12·i0 + 4·i1.
//! let stored: Vec<u8> = [1.0f32, 3.0, 5.0, 2.0, 4.0, 6.0]
//!     .iter()
//!     .flat_map(|v| v.to_le_bytes())
//!     .collect();
//! let view = TensorView::new(DType::F32, [2, 3, 1, 1], [12, 4, 24, 24], &stored)?;
//! assert_eq!(view.rows()?, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
//! assert!(!view.is_contiguous());
//!
//! // An owned, densely packed tensor from f32 values (quantized with ggml's reference code).
//! let t = Tensor::from_f32(DType::F16, [2, 3, 1, 1], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])?;
//! assert_eq!(t.rows()?, view.rows()?);
//! # Ok::<(), vkdiff_reference::Error>(())
//! ```

use crate::formats::{dequantize_into, magnitude_into, quantize, DType};
use crate::{Error, Result};

/// Decodes bytes of one type into f64 values (exact values, or magnitudes).
pub(crate) type Decoder = fn(DType, &[u8], &mut [f64]) -> Result<()>;

fn shape_error(reason: String) -> Error {
    Error::Shape {
        op: "tensor",
        reason,
    }
}

/// The largest element count a tensor may have: its f64 values must be addressable
/// (`8·n ≤ isize::MAX`), so decoding it can never overflow a size computation.
const MAX_ELEMENTS: usize = (isize::MAX as usize) / 8;

/// Checks a type, shape and strides against a buffer of `len` bytes (see [`TensorView::new`]),
/// with every size computed without overflow.
fn validate(dtype: DType, ne: [usize; 4], nb: [usize; 4], len: usize) -> Result<()> {
    if ne.contains(&0) {
        return Err(shape_error(format!("empty shape {ne:?}")));
    }
    let row = row_bytes(dtype, ne[0])?;
    if dtype.is_quantized() && nb[0] != dtype.block_bytes() {
        return Err(shape_error(format!(
            "{dtype} rows must be consecutive blocks: nb[0] = {} but a block is {} bytes",
            nb[0],
            dtype.block_bytes()
        )));
    }
    let too_large = || {
        shape_error(format!(
            "{dtype} tensor {ne:?} with strides {nb:?} is too large to address"
        ))
    };
    ne.iter()
        .try_fold(1usize, |acc, &x| acc.checked_mul(x))
        .filter(|&n| n <= MAX_ELEMENTS)
        .ok_or_else(too_large)?;
    let mut last_row_start = 0usize;
    for d in 1..4 {
        last_row_start = (ne[d] - 1)
            .checked_mul(nb[d])
            .and_then(|x| x.checked_add(last_row_start))
            .ok_or_else(too_large)?;
    }
    let needed = if dtype.is_quantized() {
        last_row_start.checked_add(row)
    } else {
        (ne[0] - 1)
            .checked_mul(nb[0])
            .and_then(|x| x.checked_add(last_row_start))
            .and_then(|x| x.checked_add(dtype.block_bytes()))
    }
    .ok_or_else(too_large)?;
    if len < needed {
        return Err(Error::ByteLength {
            what: format!("{dtype} tensor {ne:?} with strides {nb:?}"),
            expected: needed,
            got: len,
        });
    }
    Ok(())
}

/// [`DType::row_bytes`] without overflow: bytes of `n` elements, [`Error::RaggedRow`] unless
/// they are whole blocks.
fn row_bytes(dtype: DType, n: usize) -> Result<usize> {
    if n % dtype.block_len() != 0 {
        return dtype.row_bytes(n);
    }
    (n / dtype.block_len())
        .checked_mul(dtype.block_bytes())
        .ok_or_else(|| shape_error(format!("{n} {dtype} elements are too many to address")))
}

/// The dense strides of `dtype` and `ne`, and the total byte count, without overflow.
fn dense_layout(dtype: DType, ne: [usize; 4]) -> Result<([usize; 4], usize)> {
    let row = row_bytes(dtype, ne[0])?;
    let too_large = || shape_error(format!("{dtype} tensor {ne:?} is too large to address"));
    let nb2 = row.checked_mul(ne[1]).ok_or_else(too_large)?;
    let nb3 = nb2.checked_mul(ne[2]).ok_or_else(too_large)?;
    let total = nb3.checked_mul(ne[3]).ok_or_else(too_large)?;
    Ok(([dtype.block_bytes(), row, nb2, nb3], total))
}

/// A tensor borrowing its bytes: the same model as [`Tensor`] without owning (or copying) the
/// data. Element (i0, i1, i2, i3) of a float type starts at byte i0·nb0 + i1·nb1 + i2·nb2 +
/// i3·nb3; for block formats i0 counts elements and a row's blocks are consecutive (nb0 is the
/// block size in bytes, as in ggml).
///
/// A view is only ever constructed through [`TensorView::new`] / [`TensorView::from_bytes`]
/// (or [`Tensor::view`]), which check that every element lies inside the buffer, so reading
/// one never fails.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TensorView<'a> {
    dtype: DType,
    ne: [usize; 4],
    nb: [usize; 4],
    data: &'a [u8],
}

impl<'a> TensorView<'a> {
    /// A view of `data` with explicit strides. Checks that the shape is non-empty, that every
    /// element lies inside `data` and that a block format's rows are whole, consecutive blocks;
    /// [`Error::Shape`], [`Error::RaggedRow`] or [`Error::ByteLength`] otherwise.
    pub fn new(dtype: DType, ne: [usize; 4], nb: [usize; 4], data: &'a [u8]) -> Result<Self> {
        validate(dtype, ne, nb, data.len())?;
        Ok(TensorView {
            dtype,
            ne,
            nb,
            data,
        })
    }

    /// A densely packed view of `data`, which must hold exactly the bytes of the shape.
    pub fn from_bytes(dtype: DType, ne: [usize; 4], data: &'a [u8]) -> Result<Self> {
        let (nb, expected) = dense_layout(dtype, ne)?;
        if data.len() != expected {
            return Err(Error::ByteLength {
                what: format!("{dtype} tensor {ne:?}"),
                expected,
                got: data.len(),
            });
        }
        Self::new(dtype, ne, nb, data)
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Element counts, `ne[0]` fastest.
    pub fn ne(&self) -> [usize; 4] {
        self.ne
    }

    /// Byte strides.
    pub fn nb(&self) -> [usize; 4] {
        self.nb
    }

    /// The underlying bytes (including any padding the strides skip).
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Number of elements.
    pub fn nelements(&self) -> usize {
        // Checked not to overflow when the view was made.
        self.ne.iter().product()
    }

    /// Number of rows (ne1·ne2·ne3).
    pub fn nrows(&self) -> usize {
        self.ne[1] * self.ne[2] * self.ne[3]
    }

    /// True when the strides are the dense ones (ggml_is_contiguous).
    pub fn is_contiguous(&self) -> bool {
        dense_layout(self.dtype, self.ne).is_ok_and(|(nb, _)| nb == self.nb)
    }

    /// Exact values of row (i1, i2, i3) written into `out`, whose length must be ne0;
    /// [`Error::Shape`] for an index outside the tensor or a wrong `out` length.
    pub fn row_into(&self, i1: usize, i2: usize, i3: usize, out: &mut [f64]) -> Result<()> {
        let [_, n1, n2, n3] = self.ne;
        if i1 >= n1 || i2 >= n2 || i3 >= n3 || out.len() != self.ne[0] {
            return Err(shape_error(format!(
                "row ({i1}, {i2}, {i3}) into {} values: the tensor is {:?}",
                out.len(),
                self.ne
            )));
        }
        self.decode_row(i1, i2, i3, 0, out, dequantize_into)
    }

    /// Exact values of every row, row-major: index (i3, i2, i1) then i0.
    pub fn rows(&self) -> Result<Vec<f64>> {
        self.decode_all(dequantize_into)
    }

    /// Per element, the magnitudes an error bound scales with (|x|, or |d·q| + |m| for block
    /// formats with a minimum; see [`crate::formats::magnitude_into`]), in [`TensorView::rows`]
    /// order.
    pub fn magnitudes(&self) -> Result<Vec<f64>> {
        self.decode_all(magnitude_into)
    }

    /// Decodes elements `k0 .. k0 + out.len()` of row (i1, i2, i3) with `decode`. The caller
    /// keeps the indices in range and, for block formats, `k0` and the end of the range on
    /// block boundaries.
    pub(crate) fn decode_row(
        &self,
        i1: usize,
        i2: usize,
        i3: usize,
        k0: usize,
        out: &mut [f64],
        decode: Decoder,
    ) -> Result<()> {
        let start = i1 * self.nb[1] + i2 * self.nb[2] + i3 * self.nb[3];
        let size = self.dtype.block_bytes();
        if self.dtype.is_quantized() || self.nb[0] == size {
            let block = self.dtype.block_len();
            let at = start + k0 / block * size;
            let len = out.len() / block * size;
            return decode(self.dtype, &self.data[at..at + len], out);
        }
        for (i0, o) in out.iter_mut().enumerate() {
            let at = start + (k0 + i0) * self.nb[0];
            decode(
                self.dtype,
                &self.data[at..at + size],
                std::slice::from_mut(o),
            )?;
        }
        Ok(())
    }

    /// The bytes of elements `k0 .. k0 + n` of row (i1, i2, i3) when they are consecutive
    /// whole blocks (a block format, or a float type with nb0 = its size); None otherwise. The
    /// caller keeps the indices in range and the range on block boundaries.
    pub(crate) fn row_bytes(
        &self,
        i1: usize,
        i2: usize,
        i3: usize,
        k0: usize,
        n: usize,
    ) -> Option<&'a [u8]> {
        let size = self.dtype.block_bytes();
        if !self.dtype.is_quantized() && self.nb[0] != size {
            return None;
        }
        let block = self.dtype.block_len();
        let at = i1 * self.nb[1] + i2 * self.nb[2] + i3 * self.nb[3] + k0 / block * size;
        Some(&self.data[at..at + n / block * size])
    }

    /// Every row decoded with `decode` (rows in parallel for large tensors).
    pub(crate) fn decode_all(&self, decode: Decoder) -> Result<Vec<f64>> {
        use rayon::prelude::*;
        let [ne0, ne1, ne2, _] = self.ne;
        let mut out = vec![0.0; self.nelements()];
        let row = |(r, chunk): (usize, &mut [f64])| {
            self.decode_row(r % ne1, (r / ne1) % ne2, r / (ne1 * ne2), 0, chunk, decode)
        };
        if out.len() >= 1 << 16 {
            out.par_chunks_mut(ne0).enumerate().try_for_each(row)?;
        } else {
            out.chunks_mut(ne0).enumerate().try_for_each(row)?;
        }
        Ok(out)
    }

    /// An owned copy with the same strides (the buffer is copied as is).
    pub fn to_tensor(&self) -> Tensor {
        Tensor {
            dtype: self.dtype,
            ne: self.ne,
            nb: self.nb,
            data: self.data.to_vec(),
        }
    }

    /// A densely packed copy with the same type and values (what ggml's cpy/cont produces).
    pub fn to_contiguous(&self) -> Tensor {
        let [ne0, ne1, ne2, ne3] = self.ne;
        let (nb, total) =
            dense_layout(self.dtype, self.ne).expect("checked when the view was made");
        if nb == self.nb {
            return Tensor {
                dtype: self.dtype,
                ne: self.ne,
                nb,
                data: self.data[..total].to_vec(),
            };
        }
        let row = nb[1];
        let size = self.dtype.block_bytes();
        let mut data = Vec::with_capacity(total);
        for i3 in 0..ne3 {
            for i2 in 0..ne2 {
                for i1 in 0..ne1 {
                    let start = i1 * self.nb[1] + i2 * self.nb[2] + i3 * self.nb[3];
                    if self.dtype.is_quantized() {
                        data.extend_from_slice(&self.data[start..start + row]);
                    } else {
                        for i0 in 0..ne0 {
                            let at = start + i0 * self.nb[0];
                            data.extend_from_slice(&self.data[at..at + size]);
                        }
                    }
                }
            }
        }
        Tensor {
            dtype: self.dtype,
            ne: self.ne,
            nb,
            data,
        }
    }
}

/// A tensor owning its bytes. Element (i0, i1, i2, i3) of a float type starts at byte
/// i0·nb0 + i1·nb1 + i2·nb2 + i3·nb3; for block formats i0 counts elements and a row's blocks are
/// consecutive (nb0 is the block size in bytes, as in ggml). [`Tensor::view`] borrows it as a
/// [`TensorView`], which every op accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    dtype: DType,
    ne: [usize; 4],
    nb: [usize; 4],
    data: Vec<u8>,
}

impl Tensor {
    /// The strides of a densely packed tensor of this type and shape.
    pub fn contiguous_strides(dtype: DType, ne: [usize; 4]) -> Result<[usize; 4]> {
        Ok(dense_layout(dtype, ne)?.0)
    }

    /// A tensor over `data` with explicit strides. Checks that the shape is non-empty, that
    /// every element lies inside `data` and that a block format's rows are whole, consecutive
    /// blocks (as [`TensorView::new`]).
    pub fn new(dtype: DType, ne: [usize; 4], nb: [usize; 4], data: Vec<u8>) -> Result<Self> {
        validate(dtype, ne, nb, data.len())?;
        Ok(Tensor {
            dtype,
            ne,
            nb,
            data,
        })
    }

    /// A densely packed tensor over `data` (exactly the bytes of the shape).
    pub fn from_bytes(dtype: DType, ne: [usize; 4], data: Vec<u8>) -> Result<Self> {
        let nb = TensorView::from_bytes(dtype, ne, &data)?.nb;
        Ok(Tensor {
            dtype,
            ne,
            nb,
            data,
        })
    }

    /// A densely packed tensor of `values` (`ne[0]` fastest) converted to `dtype` with ggml's
    /// reference quantizers ([`crate::formats::quantize`]).
    pub fn from_f32(dtype: DType, ne: [usize; 4], values: &[f32]) -> Result<Self> {
        let n = ne.iter().try_fold(1usize, |acc, &x| acc.checked_mul(x));
        if n != Some(values.len()) {
            return Err(shape_error(format!(
                "{} values for shape {ne:?} ({} elements)",
                values.len(),
                n.map_or("too many".to_string(), |n| n.to_string())
            )));
        }
        Self::from_bytes(dtype, ne, quantize(dtype, values)?)
    }

    /// Borrows the tensor as a [`TensorView`] (no copy).
    pub fn view(&self) -> TensorView<'_> {
        TensorView {
            dtype: self.dtype,
            ne: self.ne,
            nb: self.nb,
            data: &self.data,
        }
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Element counts, `ne[0]` fastest.
    pub fn ne(&self) -> [usize; 4] {
        self.ne
    }

    /// Byte strides.
    pub fn nb(&self) -> [usize; 4] {
        self.nb
    }

    /// The underlying bytes (including any padding the strides skip).
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The underlying bytes, taken out of the tensor.
    pub fn into_data(self) -> Vec<u8> {
        self.data
    }

    /// Number of elements.
    pub fn nelements(&self) -> usize {
        self.view().nelements()
    }

    /// Number of rows (ne1·ne2·ne3).
    pub fn nrows(&self) -> usize {
        self.view().nrows()
    }

    /// True when the strides are the dense ones (ggml_is_contiguous).
    pub fn is_contiguous(&self) -> bool {
        self.view().is_contiguous()
    }

    /// Exact values of row (i1, i2, i3) written into `out` (length ne0); see
    /// [`TensorView::row_into`].
    pub fn row_into(&self, i1: usize, i2: usize, i3: usize, out: &mut [f64]) -> Result<()> {
        self.view().row_into(i1, i2, i3, out)
    }

    /// Exact values of every row, row-major: index (i3, i2, i1) then i0.
    pub fn rows(&self) -> Result<Vec<f64>> {
        self.view().rows()
    }

    /// Per element, the magnitudes an error bound scales with (|x|, or |d·q| + |m| for block
    /// formats with a minimum; see [`crate::formats::magnitude_into`]), in [`Tensor::rows`] order.
    pub fn magnitudes(&self) -> Result<Vec<f64>> {
        self.view().magnitudes()
    }

    /// A densely packed copy with the same type and values (what ggml's cpy/cont produces).
    pub fn to_contiguous(&self) -> Tensor {
        if self.is_contiguous() {
            return self.clone();
        }
        self.view().to_contiguous()
    }
}

impl<'a> From<&'a Tensor> for TensorView<'a> {
    fn from(t: &'a Tensor) -> Self {
        t.view()
    }
}

impl<'a> From<&TensorView<'a>> for TensorView<'a> {
    fn from(t: &TensorView<'a>) -> Self {
        *t
    }
}

/// Anything an op can read as a [`TensorView`]: [`Tensor`] and [`TensorView`] itself. The input
/// structs of the multi-input ops ([`crate::ops::wkv7::Wkv7Inputs`],
/// [`crate::ops::flash_attn::FlashAttnInputs`]) hold `&T` for any such `T`.
pub trait AsTensorView {
    /// The tensor as a view.
    fn view(&self) -> TensorView<'_>;
}

impl AsTensorView for Tensor {
    fn view(&self) -> TensorView<'_> {
        Tensor::view(self)
    }
}

impl AsTensorView for TensorView<'_> {
    fn view(&self) -> TensorView<'_> {
        *self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_rows_read_what_the_strides_say() {
        // Logical rows [1,2], [3,4], [5,6] stored column-major: element (i0, i1) at 12·i0 + 4·i1.
        let stored = [1.0f32, 3.0, 5.0, 2.0, 4.0, 6.0];
        let bytes: Vec<u8> = stored.iter().flat_map(|v| v.to_le_bytes()).collect();
        let t = Tensor::new(DType::F32, [2, 3, 1, 1], [12, 4, 24, 24], bytes).unwrap();
        assert!(!t.is_contiguous());
        assert_eq!(t.rows().unwrap(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let c = t.to_contiguous();
        assert!(c.is_contiguous());
        assert_eq!(c.rows().unwrap(), t.rows().unwrap());
    }

    #[test]
    fn out_of_bounds_strides_are_rejected() {
        let err = Tensor::new(DType::F32, [4, 2, 1, 1], [4, 16, 32, 32], vec![0; 20]).unwrap_err();
        assert!(
            matches!(
                err,
                Error::ByteLength {
                    expected: 32,
                    got: 20,
                    ..
                }
            ),
            "{err}"
        );
        let err = Tensor::from_f32(DType::Q4_0, [20, 1, 1, 1], &[0.0; 20]).unwrap_err();
        assert!(matches!(err, Error::RaggedRow { .. }), "{err}");
    }
}
