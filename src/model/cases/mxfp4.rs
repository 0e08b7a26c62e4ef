//! What MXFP4 weights add to the matmul and mat-vec error models, and how its raw blocks'
//! E8M0 scales are drawn.
//!
//! **Why the dequantize-then-dot models apply.** An MXFP4 element is kv·2^(e − 128) with kv
//! one of ggml's doubled E2M1 magnitudes (0, 1, 2, 3, 4, 6, 8, 12: at most 4 significant
//! bits): a power of two times a small integer. Every decoder (mat-vec: kv/2 in f32, the
//! scale 2^(e − 127) applied to a chunk's dot product; mul_mm: kv·(2^(e − 127)·0.5); cm2:
//! (kv·2^(e − 127))·0.5 rounded to f16) computes it without rounding while the value, and each
//! intermediate, is an f32 normal number below f32's largest. So the bodies' models for
//! blocks with an exact d·q (iq4_nl's) hold for MXFP4, with three differences, all at the ends
//! of E8M0's range, which the generator draws on purpose ([`super::data::scale_byte`]):
//!
//! * **Flushed scales** (e ≤ 1): 2^(e − 127) (mat-vec, cm2) or its half (mul_mm) is an f32
//!   subnormal there, which Vulkan may flush to zero before the product that would make it
//!   normal (kv = 12 at e = 0 is 1.5·2⁻¹²⁵). Every term of such a block is charged in full:
//!   [`Mxfp4Terms::flushed`].
//! * **Scales up to 2¹²⁷**: the mat-vec body multiplies a chunk's Σ kv/2·b by d after forming
//!   it, so a partial sum flushed below 2⁻¹²⁶ costs up to 2⁻¹²⁶·d, not 2⁻¹²⁶·65504 as with an
//!   f16 scale: [`Mxfp4Terms::max_scale`] scales the subnormal floor per A row.
//! * **Overflow** (e ≥ 253): values from 2¹²⁸ on are past f32's range; the reference decodes
//!   them exactly (finite f64), and each model's overflow test (Σ|a·b| past the format's
//!   largest value, or an operand that may round to ±∞) leaves those outputs undefined.
//!
//! E8M0 = 0xFF is NaN in the MX specification; ggml does not treat it (its CPU decoder gives
//! 2¹²⁷ as the halved scale, the Vulkan shaders +∞), so the reference decodes it to NaN and the
//! outputs it reaches are left undefined (the NaN rows of `tolerance::rows_with_specials`).
//! Only [`super::data::Scales::AnyBits`] draws it.

use vkdiff_reference::tensor::Tensor;
use vkdiff_reference::DType;

/// E8M0 codes whose scale (2^(e − 127), or its half in mul_mm) is an f32 subnormal.
pub const FLUSHED_SCALES: u8 = 1;

/// Per dst element, what MXFP4 A adds to a model (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Mxfp4Terms {
    /// Σ|a·b| over the terms whose block scale may be flushed (e ≤ [`FLUSHED_SCALES`]).
    pub flushed: Vec<f64>,
    /// The largest finite block scale 2^(e − 127) of the element's A row (at least 1).
    pub max_scale: Vec<f64>,
}

/// [`Mxfp4Terms`] of the dst elements of `columns` (dst column c multiplies A rows
/// `columns[c].0 ..` + m by B row `columns[c].1`, K elements each; dst is column-major, M
/// fastest). `a` is a dense MXFP4 tensor whose rows are K long; `b_rows` B's exact values.
pub fn terms(
    a: &Tensor,
    b_rows: &[f64],
    k: usize,
    m: usize,
    columns: &[(usize, usize)],
) -> Result<Mxfp4Terms, String> {
    if a.dtype() != DType::Mxfp4 {
        return Err(format!("mxfp4 terms of a {} tensor", a.dtype()));
    }
    let row_bytes = DType::Mxfp4.row_bytes(k).map_err(|e| e.to_string())?;
    let bb = DType::Mxfp4.block_bytes();
    let rows = a.data().len() / row_bytes.max(1);
    // Per A row: its largest finite scale, and (only for rows with a flushable scale) its
    // exact values with the other blocks zeroed.
    let mut max_scale = vec![1f64; rows];
    let mut flushable: Vec<Option<Vec<f64>>> = vec![None; rows];
    for (r, row) in a.data().chunks_exact(row_bytes).enumerate() {
        let mut any = false;
        for block in row.chunks_exact(bb) {
            let e = block[0];
            if e != vkdiff_reference::formats::mxfp4::E8M0_NAN {
                max_scale[r] = max_scale[r].max(2f64.powi(i32::from(e) - 127));
            }
            any |= e <= FLUSHED_SCALES;
        }
        if any {
            let mut v = vkdiff_reference::formats::dequantize(DType::Mxfp4, row, k)
                .map_err(|e| e.to_string())?;
            for (blk, vals) in row.chunks_exact(bb).zip(v.chunks_exact_mut(32)) {
                if blk[0] > FLUSHED_SCALES {
                    vals.fill(0.0);
                }
            }
            flushable[r] = Some(v);
        }
    }
    let mut flushed = vec![0.0; m * columns.len()];
    let mut scale = vec![1.0; m * columns.len()];
    for (c, &(a_first, b_row)) in columns.iter().enumerate() {
        let b = &b_rows[b_row * k..][..k];
        for i in 0..m {
            let r = a_first + i;
            scale[c * m + i] = max_scale[r];
            if let Some(v) = &flushable[r] {
                flushed[c * m + i] = v.iter().zip(b).map(|(x, y)| (x * y).abs()).sum();
            }
        }
    }
    Ok(Mxfp4Terms {
        flushed,
        max_scale: scale,
    })
}

/// Adds MXFP4's terms to mat-vec bounds (the generic body, `mul_mat_vec_bounds_of`): the
/// flushed-scale terms in full, and the subnormal floor of K flushable operations scaled by
/// the row's largest scale (a chunk's Σ kv/2·b is multiplied by d after it is formed). Does
/// nothing for other A types.
pub fn add_mat_vec_terms(
    bounds: &mut [f64],
    a: &Tensor,
    b_rows: &[f64],
    k: usize,
    m: usize,
    columns: &[(usize, usize)],
) -> Result<(), String> {
    if a.dtype() != DType::Mxfp4 {
        return Ok(());
    }
    let t = terms(a, b_rows, k, m, columns)?;
    let floor = crate::model::tolerance::subnormal_floor(k);
    for ((b, f), d) in bounds.iter_mut().zip(&t.flushed).zip(&t.max_scale) {
        *b += f + floor * d;
    }
    Ok(())
}

/// Adds the flushed-scale terms to matrix-matrix bounds (running error model of `mul_mm.comp`
/// and the coopmat step models, which take the decoded values as exact f32 operands): an
/// operand flushed to zero moves the exact partial sums by at most its term, and each of the
/// K later roundings (unit `acc_unit`) by at most that unit of it, so the term is charged
/// (1 + K·unit) times. Does nothing for other A types.
pub fn add_mat_mat_terms(
    bounds: &mut [f64],
    a: &Tensor,
    b_rows: &[f64],
    k: usize,
    m: usize,
    columns: &[(usize, usize)],
    acc_unit: f64,
) -> Result<(), String> {
    if a.dtype() != DType::Mxfp4 {
        return Ok(());
    }
    let t = terms(a, b_rows, k, m, columns)?;
    let grow = 1.0 + k as f64 * acc_unit;
    for (b, f) in bounds.iter_mut().zip(&t.flushed) {
        *b += f * grow;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::cases::data::{rng, scale_byte, tensor, Blocks, Scales};

    #[test]
    fn scale_modes_reach_both_ends_and_nan_only_with_any_bits() {
        let mut r = rng(3, 0);
        let draw = |mode, r: &mut rand_chacha::ChaCha8Rng| {
            (0..2000)
                .map(|_| scale_byte(mode, r).0)
                .collect::<Vec<u8>>()
        };
        let ext = draw(Scales::Extreme, &mut r);
        assert!(ext.contains(&0) && ext.contains(&254) && !ext.contains(&255));
        let mixed = draw(Scales::Mixed, &mut r);
        assert!(mixed.contains(&0) && mixed.contains(&254) && !mixed.contains(&255));
        assert!(draw(Scales::Random, &mut r)
            .iter()
            .all(|e| (116..127).contains(e)));
        assert!(draw(Scales::AnyBits, &mut r).contains(&255));
    }

    #[test]
    fn flushed_terms_are_the_small_scale_blocks_only() {
        // Two blocks per row: the first with e = 0, the second with e = 130.
        let k = 64;
        let mut bytes = vec![0u8; 2 * 17];
        bytes[0] = 0;
        bytes[1] = 0x77; // elements 0 and 16: 6·2⁻¹²⁷
        bytes[17] = 130;
        bytes[18] = 0x02; // element 32: 1·2³
        let a = Tensor::from_bytes(DType::Mxfp4, [k, 1, 1, 1], bytes).unwrap();
        let b = vec![2.0; k];
        let t = terms(&a, &b, k, 1, &[(0, 0)]).unwrap();
        assert_eq!(t.flushed, [2.0 * 2.0 * 6.0 * 2f64.powi(-127)]);
        assert_eq!(t.max_scale, [8.0]);
        // A generated tensor of Subnormal scales has flushable terms.
        let a = tensor(
            DType::Mxfp4,
            [k, 3, 1, 1],
            Blocks::Raw(Scales::Subnormal),
            5,
            0,
        );
        let t = terms(&a, &vec![1.0; k], k, 3, &[(0, 0)]).unwrap();
        assert!(t.flushed.iter().any(|&f| f > 0.0));
    }
}
