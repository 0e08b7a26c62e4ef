//! `vkdiff replay`: one reproducer run again and explained, on the tree (and, for backend
//! mode, the ggml build and configuration) it records unless the command line names others.

use std::path::PathBuf;
use std::process::ExitCode;

use vkdiff_gpu::{Gpu, ShaderTree};

use super::{shader_dir, Target};
use crate::cases::Outcome;
use crate::repro::Reproducer;
use crate::worker::{Evaluator as _, Worker};

/// `replay`'s options (see [`super::Command::Replay`]).
#[allow(missing_docs)]
pub struct Args {
    pub file: PathBuf,
    pub target: Target,
    pub config: Option<String>,
}

/// Replays; exit status 1 when the case fails.
pub fn run(args: Args) -> Result<ExitCode, String> {
    let Args {
        file,
        mut target,
        config,
    } = args;
    target.apply();
    let repro = Reproducer::read(&file)?;
    // The recorded target unless the command line names another.
    if target.shaders.is_none()
        && !repro.shaders.is_empty()
        && target.ggml.is_none()
        && repro.ggml.is_none()
    {
        let recorded = PathBuf::from(&repro.shaders);
        if !recorded.is_dir() {
            return Err(format!(
                "the reproducer ran on shader tree {}, which is not here: pass --shaders DIR",
                recorded.display()
            ));
        }
        target.shaders = Some(recorded);
    }
    if target.ggml.is_none() {
        target.ggml = repro.ggml.as_ref().map(|g| PathBuf::from(&g.tree));
    }
    let outcome = if let Some(dir) = &target.ggml {
        let config = config
            .or_else(|| repro.ggml.as_ref().map(|g| g.config.clone()))
            .ok_or("this reproducer ran on vkdiff's runners: name the path with --config")?;
        let config = crate::ggml::Config::parse(&config)?;
        let build = crate::ggml::build::build(dir)?;
        let setup = crate::worker::Setup {
            ggml: Some(crate::ggml::GgmlSetup::of(&build, config)),
            ..Default::default()
        };
        let mut args = Vec::new();
        if let Some(d) = &target.device {
            args.extend(["--device".to_string(), d.clone()]);
        }
        // A worker process, as in the campaign: ggml reads its switches once per process
        // and aborts on errors, which the worker turns into a crash outcome.
        let mut w = Worker::new(
            crate::worker::own_executable()?,
            args,
            setup.clone(),
            String::new(),
        )?;
        println!(
            "replaying {} on {} through {}",
            repro.variant,
            w.caps().name,
            setup.label()
        );
        println!("case: {}", repro.case);
        let outcome = w.evaluate(&repro.case);
        if let Some(d) = w.take_dispatched() {
            // "Did the pipeline I changed run?"
            println!("pipelines dispatched: {}", d.pipelines.join(", "));
            if !d.overridden.is_empty() {
                println!("overridden by vkdiff's layer: {}", d.overridden.join(", "));
            }
        }
        outcome
    } else if config.is_some() {
        return Err("--config needs --ggml (or a backend-mode reproducer)".into());
    } else {
        let mut gpu = Gpu::open(target.device.as_deref()).map_err(|e| e.to_string())?;
        let mut tree = ShaderTree::new(shader_dir(&target)?);
        println!(
            "replaying {} on {} with {}",
            repro.variant,
            gpu.caps().name,
            tree.dir().display()
        );
        println!("case: {}", repro.case);
        crate::exec::own::evaluate(&repro.case, &mut gpu, &mut tree, true)
    };
    match outcome {
        Outcome::Pass { verdict, .. } => {
            println!(
                "PASS: {} elements, worst error/bound {:.3}",
                verdict.elements, verdict.worst_ratio
            );
            if let Some(w) = &verdict.worst {
                println!("worst element: {w}");
            }
            Ok(ExitCode::SUCCESS)
        }
        outcome if outcome.is_failure() => {
            print!("FAIL: {}", outcome.explain());
            Ok(ExitCode::FAILURE)
        }
        other => Err(other.explain().trim_end().to_string()),
    }
}
