//! Fuzzes the mul_mm_id kernel: the bytes drive its case strategy (vkdiff::fuzzing), the case runs on
//! the default Vulkan device against the reference with the campaign's bounds. A panic carries
//! the reproducer; `vkdiff fuzz-repro mul_mm_id ARTIFACT` writes it from the saved input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(finding) = vkdiff::fuzzing::check("mul_mm_id", data) {
        panic!("{finding}");
    }
});
