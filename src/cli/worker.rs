//! `vkdiff worker` (hidden): the worker process a campaign starts, in shader or backend mode.

use std::process::ExitCode;

use super::{shader_dir, Target};
use crate::worker;

/// `worker`'s options (see [`super::Command::Worker`]).
#[allow(missing_docs)]
pub struct Args {
    pub target: Target,
    pub no_repeat: bool,
    pub repeat_every: Option<u64>,
}

/// Serves cases on stdin until it closes.
pub fn run(args: Args) -> Result<ExitCode, String> {
    let Args {
        target,
        no_repeat,
        repeat_every,
    } = args;
    worker::exit_when_orphaned();
    let env = vkdiff_gpu::env::env();
    if let Some(lib) = &env.ggml_lib {
        let config = &env.ggml_config;
        crate::ggml::serve(
            target.device.as_deref(),
            lib.into(),
            config,
            !no_repeat,
            repeat_every,
        )
        .map_err(|e| format!("ggml worker: {e}"))?;
        return Ok(ExitCode::SUCCESS);
    }
    worker::serve(
        target.device.as_deref(),
        shader_dir(&target)?,
        !no_repeat,
        repeat_every,
    )
    .map_err(|e| format!("worker: {e}"))?;
    Ok(ExitCode::SUCCESS)
}
