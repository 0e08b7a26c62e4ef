//! `vkdiff report`: the HTML report (and the distinct findings) rebuilt from a report.jsonl, or
//! several merged into one (shards of a campaign, other devices, trees or configurations).

use std::path::PathBuf;
use std::process::ExitCode;

use super::run::{print_coverage_of, write_junit};
use super::{exit_status, load_known, own_shaders_run};
use crate::campaign::{self, VariantReport};
use crate::report::{self, Input, Line, Merged};

/// `report`'s options (see [`super::Command::Report`]).
#[allow(missing_docs)]
pub struct Args {
    /// At least one.
    pub files: Vec<PathBuf>,
    pub html: Option<PathBuf>,
    pub out: Option<PathBuf>,
    pub known: Option<PathBuf>,
    pub junit: Option<PathBuf>,
}

/// Rebuilds or merges the report; exits as `run` would have on all the variant runs together.
pub fn run(args: Args) -> Result<ExitCode, String> {
    let Args {
        files,
        html,
        out,
        known,
        junit,
    } = args;
    if let [file] = &files[..] {
        if out.is_none() {
            return single(file, html, known, junit);
        }
    }
    let html = match (html, &out) {
        (Some(h), _) => h,
        (None, Some(dir)) => dir.join("report.html"),
        (None, None) => {
            return Err(format!(
            "{} reports to merge: say where the merged page goes with --out DIR (or --html FILE)",
            files.len()
        ))
        }
    };
    let inputs = files
        .iter()
        .map(|f| Input::read(f))
        .collect::<Result<Vec<_>, _>>()?;
    // As in `run`: the default known list is for upstream trees only, so it applies unless
    // every input is a run of vkdiff's own shaders.
    let all: Vec<Line> = inputs
        .iter()
        .flat_map(|i| i.lines.iter().cloned())
        .collect();
    let known = if known.is_none() && own_shaders_run(&all) {
        Vec::new()
    } else {
        load_known(known)?
    };
    let merged = Merged::new(inputs, &known);
    print!("{}", merged.summary());
    let stale: Vec<&crate::findings::Known> = merged.stale.iter().collect();
    print!("{}", campaign::findings_summary(&merged.distinct, &stale));
    print!("{}", merged.places_summary());
    if let Some(dir) = html.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    print_coverage_of(&all, &html.with_file_name("coverage.txt"));
    std::fs::write(&html, merged.html()).map_err(|e| format!("{}: {e}", html.display()))?;
    println!("wrote {}", html.display());
    if let Some(path) = &junit {
        write_junit(
            path,
            &merged.reports,
            &merged.distinct,
            Some(&merged.sources()),
        )?;
    }
    Ok(ExitCode::from(exit_status(
        &merged.distinct,
        &merged.reports,
    )))
}

/// One report rebuilt in place: its page next to it unless `--html` says otherwise.
fn single(
    file: &std::path::Path,
    html: Option<PathBuf>,
    known: Option<PathBuf>,
    junit: Option<PathBuf>,
) -> Result<ExitCode, String> {
    let mut lines = report::read(file)?;
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
    print_coverage_of(&lines, &file.with_file_name("coverage.txt"));
    let status = exit_status(&distinct, &reports);
    if let Some(path) = &junit {
        write_junit(path, &reports, &distinct, None)?;
    }
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
