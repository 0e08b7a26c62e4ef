//! `vkdiff fuzz-repro`: a cargo-fuzz artifact turned into a reproducer for `replay`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::fuzzing;

/// `fuzz-repro`'s options (see [`super::Command::FuzzRepro`]).
#[allow(missing_docs)]
pub struct Args {
    pub kernel: String,
    pub artifact: PathBuf,
    pub out: PathBuf,
}

/// Writes the reproducer and says how to replay it.
pub fn run(args: Args) -> Result<ExitCode, String> {
    let Args {
        kernel,
        artifact,
        out,
    } = args;
    if kernel != fuzzing::ANY {
        crate::cases::select(std::slice::from_ref(&kernel), None)?;
    }
    let data = std::fs::read(&artifact).map_err(|e| format!("{}: {e}", artifact.display()))?;
    let case = fuzzing::case_from_bytes(&kernel, &data)
        .ok_or_else(|| format!("{kernel} has no variants"))?;
    let finding = format!("found by cargo fuzz: {}", artifact.display());
    let path = fuzzing::reproducer(&case, finding, "", "")
        .write(&out)
        .map_err(|e| format!("{}: {e}", out.display()))?;
    println!(
        "case: {case}\nreproducer: {}\nreplay with: vkdiff replay {}",
        path.display(),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}
