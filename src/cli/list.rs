//! `vkdiff list`: kernels, their variants and error models.

use std::process::ExitCode;

use crate::cases::KERNELS;

/// Prints the kernel table.
pub fn run() -> Result<ExitCode, String> {
    for k in KERNELS {
        println!(
            "{} ({}): {}\n  error model: {}",
            k.name, k.shader, k.summary, k.error_model
        );
        for v in (k.variants)() {
            println!("  - {}", v.name);
        }
    }
    Ok(ExitCode::SUCCESS)
}
