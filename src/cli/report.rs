//! `vkdiff report`: the HTML report (and the distinct findings) rebuilt from a report.jsonl.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{exit_status, load_known, own_shaders_run};
use crate::campaign::{self, VariantReport};
use crate::report::{self, Line};

/// `report`'s options (see [`super::Command::Report`]).
#[allow(missing_docs)]
pub struct Args {
    pub file: PathBuf,
    pub html: Option<PathBuf>,
    pub known: Option<PathBuf>,
}

/// Rebuilds the report; exits as `run` would have.
pub fn run(args: Args) -> Result<ExitCode, String> {
    let Args { file, html, known } = args;
    let mut lines = report::read(&file)?;
    // The findings are matched again against today's known list.
    let reports: Vec<VariantReport> = lines
        .iter()
        .filter_map(|l| match l {
            Line::Variant(v) => Some((**v).clone()),
            _ => None,
        })
        .collect();
    // As in `run`: the default known list is for upstream trees only.
    let known = if known.is_none() && own_shaders_run(&lines) {
        Vec::new()
    } else {
        load_known(known)?
    };
    let distinct = crate::findings::distinct(&reports, &known);
    let stale = crate::findings::stale(&known, &distinct, &reports);
    print!("{}", campaign::findings_summary(&distinct, &stale));
    let status = exit_status(&distinct, &reports);
    lines.retain(|l| !matches!(l, Line::Findings { .. }));
    lines.push(Line::Findings {
        distinct,
        stale: stale.into_iter().cloned().collect(),
    });
    let html = html.unwrap_or_else(|| file.with_extension("html"));
    std::fs::write(&html, report::html(&lines)).map_err(|e| format!("{}: {e}", html.display()))?;
    println!("wrote {}", html.display());
    Ok(ExitCode::from(status))
}
