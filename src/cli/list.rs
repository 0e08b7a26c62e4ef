//! `vkdiff list`: kernels, their variants and error models.

use std::io::Write;
use std::process::ExitCode;

use crate::cases::KERNELS;

/// Prints the kernel table. A reader that stops early (`vkdiff list | head`) ends the listing
/// quietly; any other write error is the command's error.
pub fn run() -> Result<ExitCode, String> {
    let mut out = std::io::stdout().lock();
    let mut print = || -> std::io::Result<()> {
        for k in KERNELS {
            writeln!(
                out,
                "{} ({}): {}\n  error model: {}",
                k.name, k.shader, k.summary, k.error_model
            )?;
            for v in (k.variants)() {
                writeln!(out, "  - {}", v.name)?;
            }
        }
        out.flush()
    };
    match print() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("stdout: {e}")),
        _ => Ok(ExitCode::SUCCESS),
    }
}
