//! The differential suite: every kernel × variant of the kernel table against the reference on
//! the default device (lavapipe on CI), 200 random cases each.
//!
//! The trials are generated from [`KERNELS`] at run time (a `libtest-mimic` harness), one per
//! variant, named `<kernel>::<variant>`, e.g.
//! `cargo test --release --test differential mul_mat_vec::mul_mat_vec_q4_0_f32_f32`.
//! A variant the device cannot run (a missing feature, `Kernel::requires`) is reported by the
//! test runner as *ignored*, with its reason printed, never as passed. `-- --include-ignored`
//! runs them anyway, and then they fail with the reason.

mod common;

use libtest_mimic::{Arguments, Failed, Trial};
use vkdiff::campaign::{run_variant, table, Settings};
use vkdiff::cases::{Kernel, KERNELS};
use vkdiff::kernels::Variant;
use vkdiff::worker::{InProcess, Repeat};
use vkdiff_gpu::ShaderTree;

/// Cases per variant.
const CASES: u32 = 200;

fn check_variant(kernel: &'static Kernel, variant: &Variant) -> Result<(), Failed> {
    let settings = Settings {
        cases: CASES,
        repro_dir: Some(std::env::temp_dir().join("vkdiff-repro")),
        ..Settings::default()
    };
    let report = common::with_gpu(|gpu| {
        let mut tree = ShaderTree::new(vkdiff::default_shader_dir());
        run_variant(
            &mut InProcess {
                gpu,
                tree: &mut tree,
                repeat: Repeat::AsCampaign,
            },
            kernel,
            variant,
            &settings,
        )
    });
    let summary = table(std::slice::from_ref(&report));
    println!("{summary}");
    let name = &variant.name;
    if !report.ok() {
        return Err(format!("{name} failed:\n{summary}").into());
    }
    if report.missing.is_some() {
        return Err(format!("{name}: shader missing:\n{summary}").into());
    }
    // Cases outside the domain of ggml or of the pinned host are drawn (the strategies cover
    // what ggml accepts) and end as named preconditions: counted and shown, never passed.
    let named: u32 = report
        .skipped
        .iter()
        .filter(|(reason, _)| reason.starts_with("precondition:"))
        .map(|(_, &n)| n)
        .sum();
    // Fused decode graphs and ggml's view kernels (nc, p021) run in backend mode only: here
    // every case is a skip that says so.
    let backend_only: u32 = report
        .skipped
        .iter()
        .filter(|(reason, _)| reason.starts_with("shader mode:"))
        .map(|(_, &n)| n)
        .sum();
    if backend_only == CASES {
        println!("{name}: not run in shader mode (backend mode only)");
        return Ok(());
    }
    if report.passed + named != CASES {
        return Err(format!("{name}: not every case ran and passed:\n{summary}").into());
    }
    if named > 0 {
        println!("{name}: {named} of {CASES} cases drawn outside the host's domain, not run (named preconditions above)");
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let caps = common::with_gpu(|gpu| gpu.caps().clone());
    let mut trials = Vec::new();
    let mut skipped = Vec::new();
    for kernel in KERNELS {
        for variant in (kernel.variants)() {
            let name = format!("{}::{}", kernel.name, variant.name);
            let reason = (kernel.requires)(&variant, &caps);
            let trial = Trial::test(name.clone(), move || check_variant(kernel, &variant));
            trials.push(match reason {
                Some(reason) => {
                    skipped.push(format!("{name}: {reason}"));
                    trial.with_ignored_flag(true)
                }
                None => trial,
            });
        }
    }
    if !skipped.is_empty() && !args.list {
        eprintln!(
            "{} of {} variants are ignored on {} (missing device features):",
            skipped.len(),
            trials.len(),
            caps.name
        );
        for s in &skipped {
            eprintln!("  ignored {s}");
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
