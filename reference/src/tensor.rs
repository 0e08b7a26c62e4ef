//! ggml's tensor model: an element type, four element counts `ne` (ne[0] fastest) and four byte
//! strides `nb`, over a byte buffer. Strides make non-contiguous, permuted and broadcast inputs
//! expressible exactly as ggml sees them.

use crate::formats::{dequantize_into, magnitude_into, quantize, DType};
use crate::{Error, Result};

/// Decodes bytes of one type into f64 values (exact values, or magnitudes).
type Decoder = fn(DType, &[u8], &mut [f64]) -> Result<()>;

/// A tensor owning its bytes. Element (i0, i1, i2, i3) of a float type starts at byte
/// i0·nb0 + i1·nb1 + i2·nb2 + i3·nb3; for block formats i0 counts elements and a row's blocks are
/// consecutive (nb0 is the block size in bytes, as in ggml).
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
        let row = dtype.row_bytes(ne[0])?;
        Ok([dtype.block_bytes(), row, row * ne[1], row * ne[1] * ne[2]])
    }

    /// A tensor over `data` with explicit strides. Checks that every element lies inside `data`
    /// and that a block format's rows are whole, consecutive blocks.
    pub fn new(dtype: DType, ne: [usize; 4], nb: [usize; 4], data: Vec<u8>) -> Result<Self> {
        let row = dtype.row_bytes(ne[0])?;
        if dtype.is_quantized() && nb[0] != dtype.block_bytes() {
            return Err(Error::Shape {
                op: "tensor",
                reason: format!(
                    "{dtype} rows must be consecutive blocks: nb[0] = {} but a block is {} bytes",
                    nb[0],
                    dtype.block_bytes()
                ),
            });
        }
        if ne.contains(&0) {
            return Err(Error::Shape {
                op: "tensor",
                reason: format!("empty shape {ne:?}"),
            });
        }
        let last_row_start: usize = (1..4).map(|d| (ne[d] - 1) * nb[d]).sum();
        let needed = if dtype.is_quantized() {
            last_row_start + row
        } else {
            last_row_start + (ne[0] - 1) * nb[0] + dtype.block_bytes()
        };
        if data.len() < needed {
            return Err(Error::ByteLength {
                what: format!("{dtype} tensor {ne:?} with strides {nb:?}"),
                expected: needed,
                got: data.len(),
            });
        }
        Ok(Tensor {
            dtype,
            ne,
            nb,
            data,
        })
    }

    /// A densely packed tensor over `data` (exactly the bytes of the shape).
    pub fn from_bytes(dtype: DType, ne: [usize; 4], data: Vec<u8>) -> Result<Self> {
        let nb = Self::contiguous_strides(dtype, ne)?;
        let expected = nb[3] * ne[3];
        if data.len() != expected {
            return Err(Error::ByteLength {
                what: format!("{dtype} tensor {ne:?}"),
                expected,
                got: data.len(),
            });
        }
        Self::new(dtype, ne, nb, data)
    }

    /// A densely packed tensor of `values` (ne[0] fastest) converted to `dtype` with ggml's
    /// reference quantizers.
    pub fn from_f32(dtype: DType, ne: [usize; 4], values: &[f32]) -> Result<Self> {
        let n: usize = ne.iter().product();
        if values.len() != n {
            return Err(Error::Shape {
                op: "tensor",
                reason: format!("{} values for shape {ne:?} ({n} elements)", values.len()),
            });
        }
        Self::from_bytes(dtype, ne, quantize(dtype, values)?)
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Element counts, ne[0] fastest.
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

    /// Number of elements.
    pub fn nelements(&self) -> usize {
        self.ne.iter().product()
    }

    /// Number of rows (ne1·ne2·ne3).
    pub fn nrows(&self) -> usize {
        self.ne[1] * self.ne[2] * self.ne[3]
    }

    /// True when the strides are the dense ones (ggml_is_contiguous).
    pub fn is_contiguous(&self) -> bool {
        Self::contiguous_strides(self.dtype, self.ne).is_ok_and(|nb| nb == self.nb)
    }

    /// Exact values of row (i1, i2, i3) written into `out` (length ne0).
    pub fn row_into(&self, i1: usize, i2: usize, i3: usize, out: &mut [f64]) -> Result<()> {
        self.decode_row(i1, i2, i3, out, dequantize_into)
    }

    /// Exact values of every row, row-major: index (i3, i2, i1) then i0.
    pub fn rows(&self) -> Result<Vec<f64>> {
        self.decode_all(dequantize_into)
    }

    /// Per element, the magnitudes an error bound scales with (|x|, or |d·q| + |m| for block
    /// formats with a minimum; see [`crate::formats::magnitude_into`]), in [`Tensor::rows`] order.
    pub fn magnitudes(&self) -> Result<Vec<f64>> {
        self.decode_all(magnitude_into)
    }

    fn decode_row(
        &self,
        i1: usize,
        i2: usize,
        i3: usize,
        out: &mut [f64],
        decode: Decoder,
    ) -> Result<()> {
        let start = i1 * self.nb[1] + i2 * self.nb[2] + i3 * self.nb[3];
        if self.dtype.is_quantized() || self.nb[0] == self.dtype.block_bytes() {
            let len = self.dtype.row_bytes(self.ne[0])?;
            return decode(self.dtype, &self.data[start..start + len], out);
        }
        let size = self.dtype.block_bytes();
        for (i0, o) in out.iter_mut().enumerate() {
            let at = start + i0 * self.nb[0];
            decode(
                self.dtype,
                &self.data[at..at + size],
                std::slice::from_mut(o),
            )?;
        }
        Ok(())
    }

    fn decode_all(&self, decode: Decoder) -> Result<Vec<f64>> {
        let [ne0, ne1, ne2, ne3] = self.ne;
        let mut out = vec![0.0; self.nelements()];
        let mut chunks = out.chunks_exact_mut(ne0);
        for i3 in 0..ne3 {
            for i2 in 0..ne2 {
                for i1 in 0..ne1 {
                    self.decode_row(i1, i2, i3, chunks.next().unwrap(), decode)?;
                }
            }
        }
        Ok(out)
    }

    /// A densely packed copy with the same type and values (what ggml's cpy/cont produces).
    pub fn to_contiguous(&self) -> Tensor {
        if self.is_contiguous() {
            return self.clone();
        }
        let [ne0, ne1, ne2, ne3] = self.ne;
        let row = self.dtype.row_bytes(ne0).expect("validated in new");
        let mut data = Vec::with_capacity(row * self.nrows());
        for i3 in 0..ne3 {
            for i2 in 0..ne2 {
                for i1 in 0..ne1 {
                    let start = i1 * self.nb[1] + i2 * self.nb[2] + i3 * self.nb[3];
                    if self.dtype.is_quantized() {
                        data.extend_from_slice(&self.data[start..start + row]);
                    } else {
                        let size = self.dtype.block_bytes();
                        for i0 in 0..ne0 {
                            let at = start + i0 * self.nb[0];
                            data.extend_from_slice(&self.data[at..at + size]);
                        }
                    }
                }
            }
        }
        Tensor::from_bytes(self.dtype, self.ne, data).expect("dense copy of a valid tensor")
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
