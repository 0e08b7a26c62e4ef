//! Block decoders on any bytes (every bit pattern, NaN/Inf scales included): they never panic,
//! and the exact decoder agrees with the element formulas written out independently here
//! (docs/interface.md §2.3), element by element.
#![no_main]

use half::f16;
use libfuzzer_sys::fuzz_target;
use vkdiff_reference::formats::{dequantize, dequantize_f32, magnitude_into, DType};

/// Element `i` of one block, from the spec's formulas.
fn element(dtype: DType, b: &[u8], i: usize) -> Option<f64> {
    let h = |at: usize| f16::from_le_bytes([b[at], b[at + 1]]).to_f64();
    let nib = |qs: usize| if i < 16 { b[qs + i] & 0xF } else { b[qs + i - 16] >> 4 } as f64;
    let bit5 = |qh: usize| ((u32::from_le_bytes(b[qh..qh + 4].try_into().unwrap()) >> i) & 1) as f64 * 16.0;
    Some(match dtype {
        DType::Q4_0 => h(0) * (nib(2) - 8.0),
        DType::Q4_1 => h(0) * nib(4) + h(2),
        DType::Q5_0 => h(0) * (nib(6) + bit5(2) - 16.0),
        DType::Q5_1 => h(0) * (nib(8) + bit5(4)) + h(2),
        DType::Q8_0 => h(0) * (b[2 + i] as i8) as f64,
        DType::Q8_1 => h(0) * (b[4 + i] as i8) as f64,
        _ => return None,
    })
}

fuzz_target!(|input: (u8, Vec<u8>)| {
    let (pick, bytes) = input;
    let dtype = DType::ALL[pick as usize % DType::ALL.len()];
    let n = bytes.len() / dtype.block_bytes() * dtype.block_len();
    let bytes = &bytes[..n / dtype.block_len() * dtype.block_bytes()];
    let exact = dequantize(dtype, bytes, n).expect("whole blocks decode");
    let _ = dequantize_f32(dtype, bytes, n).expect("whole blocks decode");
    let mut mag = vec![0.0; n];
    magnitude_into(dtype, bytes, &mut mag).expect("whole blocks");
    for (i, &x) in exact.iter().enumerate() {
        let block = &bytes[i / dtype.block_len() * dtype.block_bytes()..][..dtype.block_bytes()];
        if let Some(want) = element(dtype, block, i % dtype.block_len()) {
            assert!(x == want || (x.is_nan() && want.is_nan()), "{dtype} element {i}: {x} vs {want}");
        }
        // Magnitudes bound the value (NaN scales excepted).
        assert!(!(x.abs() > mag[i]), "{dtype} element {i}: |{x}| > magnitude {}", mag[i]);
    }
    // Ragged rows are an error, never a panic.
    if dtype.is_quantized() {
        assert!(dequantize(dtype, bytes, n + 1).is_err());
    }
});
