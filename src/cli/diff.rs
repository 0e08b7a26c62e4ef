//! `vkdiff diff`: the cases whose outcome differs between two runs.

use std::path::PathBuf;
use std::process::ExitCode;

/// `diff`'s options (see [`super::Command::Diff`]).
#[allow(missing_docs)]
pub struct Args {
    pub a: PathBuf,
    pub b: PathBuf,
}

/// Prints the differing cases; exit status 1 when any differ.
pub fn run(args: Args) -> Result<ExitCode, String> {
    let Args { a, b } = args;
    let (changes, common) = crate::diff::diff(&a, &b)?;
    for c in &changes {
        let (kernel, variant, config, case) = &c.key;
        println!("{kernel} {variant} [{config}] {case}: {} → {}", c.a, c.b);
        if let Some(d) = &c.detail {
            for l in d.lines().take(3) {
                println!("    {l}");
            }
        }
    }
    println!(
        "{} of {common} common cases differ ({} lines in all); A = {}, B = {}",
        changes
            .iter()
            .filter(|c| c.a != "absent" && c.b != "absent")
            .count(),
        changes.len(),
        a.display(),
        b.display()
    );
    Ok(if changes.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
