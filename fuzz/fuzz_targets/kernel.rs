//! Fuzzes the kernels of the registry: the bytes drive a kernel's case strategy
//! (vkdiff::fuzzing), the case runs on the default Vulkan device against the reference with the
//! campaign's bounds. `VKDIFF_FUZZ_KERNEL=NAME` fuzzes one kernel (ci/fuzz.sh runs each in
//! turn); without it the first byte picks the kernel. A panic carries the reproducer;
//! `vkdiff fuzz-repro NAME ARTIFACT` (or `any` without the variable) writes it from the input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(finding) = vkdiff::fuzzing::check_selected(data) {
        panic!("{finding}");
    }
});
