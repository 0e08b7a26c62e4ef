//! Coverage-guided fuzzing of the kernels. The fuzzer's bytes choose the variant (first byte)
//! and seed the kernel's own proptest strategy (a ChaCha RNG keyed by a hash of the rest), so
//! every byte string decodes to a case the campaign could have drawn, with the same
//! preconditions, bounds and judgement, and an artifact always decodes to the same case.
//! (Feeding the bytes to proptest's pass-through RNG instead would make byte mutations local,
//! but strategies that derive RNGs split those bytes until they run dry, and proptest's weighted
//! unions never finish on the zeros that follow.) Coverage guidance keeps the inputs that reach
//! new code. A failing input becomes a reproducer with `vkdiff fuzz-repro KERNEL ARTIFACT`.
//!
//! One fuzz target serves every kernel of the registry: `VKDIFF_FUZZ_KERNEL` names the kernel,
//! and without it the first byte picks one (the kernel `any`).

use std::sync::Mutex;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use vkdiff_gpu::{Gpu, ShaderTree};

use crate::cases::{Case, Outcome};

use crate::repro::Reproducer;

/// The kernel name that stands for "the first byte picks the kernel".
pub const ANY: &str = "any";

/// The case that `data` stands for in `kernel`'s strategy (None for an unknown kernel); for
/// [`ANY`], the first byte picks the kernel and the rest is that kernel's input.
pub fn case_from_bytes(kernel: &str, data: &[u8]) -> Option<Case> {
    if kernel == ANY {
        let (pick, rest) = data.split_first().unwrap_or((&0, &[]));
        let k = &crate::cases::KERNELS[*pick as usize % crate::cases::KERNELS.len()];
        return case_from_bytes(k.name, rest);
    }
    let k = crate::cases::kernel(kernel)?;
    let variants = (k.variants)();
    let (pick, rest) = data.split_first().unwrap_or((&0, &[]));
    let variant = variants.get(*pick as usize % variants.len().max(1))?;
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_of(rest));
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    (k.strategy)(variant)
        .new_tree(&mut runner)
        .ok()
        .map(|t| t.current())
}

/// The 32-byte ChaCha seed for `bytes` (SHA-256 would do as well; FNV-1a spread over four
/// lanes is enough to give distinct inputs distinct streams).
fn seed_of(bytes: &[u8]) -> [u8; 32] {
    let mut seed = [0u8; 32];
    for (lane, chunk) in seed.chunks_exact_mut(8).enumerate() {
        let h = bytes
            .iter()
            .fold(0xcbf2_9ce4_8422_2325u64 ^ lane as u64, |h, &b| {
                (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
            });
        chunk.copy_from_slice(&h.to_le_bytes());
    }
    seed
}

/// A reproducer for `case`, found by fuzzing.
pub fn reproducer(case: &Case, finding: String, device: &str, shaders: &str) -> Reproducer {
    Reproducer {
        ggml: None,
        vkdiff_reproducer: crate::repro::FORMAT,
        kernel: case.kernel().into(),
        variant: case.variant(),
        device: device.into(),
        shaders: shaders.into(),
        finding,
        shrunk_from: "found by cargo fuzz (not shrunk)".into(),
        case: case.clone(),
    }
}

/// The device and shaders a fuzz process shares across inputs (opened on first use).
static DEVICE: Mutex<Option<(Gpu, ShaderTree)>> = Mutex::new(None);

/// [`check`] for the kernel the fuzz target was started for
/// ([`vkdiff_gpu::env::Env::fuzz_kernel`], else [`ANY`]).
pub fn check_selected(data: &[u8]) -> Result<(), String> {
    let kernel = vkdiff_gpu::env::env()
        .fuzz_kernel
        .clone()
        .unwrap_or_else(|| ANY.into());
    if kernel != ANY && crate::cases::kernel(&kernel).is_none() {
        return Err(format!("VKDIFF_FUZZ_KERNEL={kernel}: no such kernel"));
    }
    check(&kernel, data)
}

/// Evaluates the case `data` stands for on the default device with our shaders
/// (`VKDIFF_SHADERS` overrides). Err holds the reproducer JSON and what failed, so the fuzz
/// target can panic with it: a failure, a crash of the evaluation, nondeterminism or a
/// validation message. Skips, missing shaders and the like are not findings.
pub fn check(kernel: &str, data: &[u8]) -> Result<(), String> {
    let Some(case) = case_from_bytes(kernel, data) else {
        return Ok(());
    };
    let mut guard = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    if guard.is_none() {
        let gpu = Gpu::open(None).map_err(|e| format!("no device to fuzz on: {e}"))?;
        *guard = Some((gpu, ShaderTree::new(crate::default_shader_dir())));
    }
    let (gpu, tree) = guard.as_mut().unwrap();
    let outcome = crate::exec::own::evaluate(&case, gpu, tree, true);
    if let Outcome::DeviceLost(_) = outcome {
        *guard = None;
    }
    if outcome.is_failure() {
        let (device, shaders) = guard
            .as_ref()
            .map(|(g, t)| (g.caps().name.clone(), t.dir().display().to_string()))
            .unwrap_or_default();
        let repro = reproducer(&case, outcome.explain(), &device, &shaders);
        let json = serde_json::to_string_pretty(&repro).unwrap_or_default();
        return Err(format!("{}\nreproducer:\n{json}", outcome.explain()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_bytes_decode_to_a_case_and_the_same_bytes_to_the_same_case() {
        for data in [&[][..], &[0u8; 1000][..], &[0xff; 64][..], b"vkdiff"] {
            for k in crate::cases::KERNELS {
                let a =
                    case_from_bytes(k.name, data).unwrap_or_else(|| panic!("{} decodes", k.name));
                assert_eq!(Some(a), case_from_bytes(k.name, data));
            }
        }
        assert!(case_from_bytes("no_such_kernel", b"x").is_none());
        for pick in 0..crate::cases::KERNELS.len() as u8 {
            let k = &crate::cases::KERNELS[pick as usize];
            let any = case_from_bytes(ANY, &[pick, 3, 1, 4]).unwrap();
            assert_eq!(Some(any), case_from_bytes(k.name, &[3, 1, 4]));
        }
    }
}
