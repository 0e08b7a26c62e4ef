//! `vkdiff mutate`: mutation testing of a shader tree (how many planted bugs the cases catch).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::{shader_dir, Target};

/// `mutate`'s options, checked (see [`super::Command::Mutate`]).
#[allow(missing_docs)]
pub struct Args {
    pub target: Target,
    pub ops: Vec<String>,
    pub variant: Option<String>,
    pub files: Vec<String>,
    pub cases: u32,
    pub budget: Option<usize>,
    pub time: Option<Duration>,
    pub seed: u64,
    pub out: PathBuf,
    /// A positive, finite duration.
    pub case_timeout: Option<Duration>,
    pub no_repeat: bool,
    pub equivalent: Option<PathBuf>,
}

/// Runs the mutants and prints the table; writes OUT/mutants.json.
pub fn run(args: Args) -> Result<ExitCode, String> {
    let Args {
        target,
        ops,
        variant,
        files,
        cases,
        budget,
        time,
        seed,
        out,
        case_timeout,
        no_repeat,
        equivalent,
    } = args;
    if let Some(dir) = &target.ggml {
        return Err(format!(
            "mutate does not take --ggml: ggml compiles its shaders into libggml-vulkan, so \
every mutant would be a rebuild of the library (minutes to tens of minutes each, \
docs/ggml-backend.md). Mutate the tree's shaders in shader mode instead: \
vkdiff mutate --shaders {}/src/ggml-vulkan/vulkan-shaders",
            crate::ggml::build::ggml_root(dir)
                .unwrap_or_else(|_| dir.clone())
                .display()
        ));
    }
    // Before anything slow: a selection that matches nothing is an error (exit status 2).
    crate::cases::select(&ops, variant.as_deref())?;
    target.apply();
    let shaders = shader_dir(&target)?;
    let equivalent = match equivalent {
        Some(path) => Some(path),
        None => Some(crate::mutate::default_equivalence_file(&shaders)).filter(|p| p.is_file()),
    };
    let equivalent = match equivalent {
        Some(path) => std::fs::read_to_string(&path)
            .map_err(|e| format!("{}: {e}", path.display()))
            .and_then(|t| crate::mutate::parse_equivalences(&t))
            .map_err(|e| format!("{}: {e}", path.display()))?,
        None => Vec::new(),
    };
    let opts = crate::mutate::Options {
        shaders,
        device: target.device.clone(),
        ops,
        variant,
        files,
        cases,
        budget,
        time,
        seed,
        out,
        case_timeout,
        repeat: !no_repeat,
        equivalent,
    };
    let report = crate::mutate::run(&opts)?;
    print!("{}", crate::mutate::table(&report));
    println!("mutants: {}", opts.out.join("mutants.json").display());
    Ok(ExitCode::SUCCESS)
}
