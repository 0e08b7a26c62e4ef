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
    let served = worker::WorkerTarget::from_env(shader_dir(&target)?);
    worker::serve(target.device.as_deref(), served, !no_repeat, repeat_every)
        .map_err(|e| format!("worker: {e}"))?;
    Ok(ExitCode::SUCCESS)
}
