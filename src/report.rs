//! Campaign reports. `report.jsonl` is written line by line as results arrive (flushed after
//! each), so a crash of anything loses at most the case in flight; `report.html` is built from
//! it, at the end of a run or later with `vkdiff report FILE`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::campaign::{CaseRecord, VariantReport};
use crate::findings::{self, Distinct, Known};

/// One line of `report.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line {
    /// A campaign (or one device configuration of it) starts.
    Start {
        /// Device name.
        device: String,
        /// Device configuration (empty when not swept).
        config: String,
        /// Shader tree.
        shaders: String,
        /// Master seed.
        seed: u64,
        /// vkdiff's version.
        version: String,
    },
    /// One judged case.
    Case(CaseRecord),
    /// A variant finished (boxed: it is much larger than the other lines).
    Variant(Box<VariantReport>),
    /// Backend mode: the pipelines a tree × configuration × device can use (the coverage
    /// denominator), written when the configuration's first worker is up.
    Coverage(Box<Coverage>),
    /// The run's distinct findings, matched against the known list (written last).
    Findings {
        /// Distinct findings, reachable first.
        distinct: Vec<Distinct>,
        /// Known entries that did not reproduce.
        stale: Vec<Known>,
    },
}

/// The pipelines one backend-mode configuration can use ([`crate::ggml::modules::possible`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Coverage {
    /// The report config (`ggml <tree> [...] config <name>`), as case lines carry it.
    pub config: String,
    /// The module names in the denominator.
    pub possible: Vec<String>,
    /// Modules of the four ops left out, by rule.
    pub excluded: BTreeMap<String, u32>,
    /// Why there is no denominator (a stripped library, no layer), when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Pipeline coverage of one configuration: the [`Coverage`] line joined with the judged
/// (pass or fail) case lines of the same config.
#[derive(Debug, Clone, Default)]
pub struct Covered {
    /// The report config.
    pub config: String,
    /// The denominator's size.
    pub possible: usize,
    /// Modules of the denominator at least one judged case dispatched.
    pub dispatched: Vec<String>,
    /// Modules of the denominator no judged case dispatched.
    pub never: Vec<String>,
    /// Modules judged cases dispatched outside the denominator (helpers such as copies and
    /// dequantizers, or a module a rule wrongly excluded).
    pub outside: Vec<String>,
    /// See [`Coverage::note`].
    pub note: Option<String>,
}

impl Covered {
    /// Dispatched / possible, in percent.
    pub fn percent(&self) -> f64 {
        100.0 * self.dispatched.len() as f64 / self.possible.max(1) as f64
    }

    /// One line: `N of M pipelines dispatched (P%)`.
    pub fn line(&self) -> String {
        format!(
            "{} of {} pipelines dispatched by judged cases ({:.1}%)",
            self.dispatched.len(),
            self.possible,
            self.percent()
        )
    }
}

/// Pipeline coverage per backend-mode configuration of a report.
pub fn coverage(lines: &[Line]) -> Vec<Covered> {
    let mut by_config: BTreeMap<String, (std::collections::BTreeSet<String>, Option<String>)> =
        BTreeMap::new();
    for l in lines {
        if let Line::Coverage(c) = l {
            let e = by_config.entry(c.config.clone()).or_default();
            e.0.extend(c.possible.iter().cloned());
            if c.note.is_some() {
                e.1.clone_from(&c.note);
            }
        }
    }
    let mut used: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for l in lines {
        if let Line::Case(c) = l {
            // A crash after earlier cases whose fresh-worker rerun was judged counts too (its
            // pipelines are the rerun's).
            let judged = matches!(c.outcome.as_str(), "pass" | "fail")
                || (c.outcome == "crash"
                    && c.detail.as_deref().is_some_and(crate::worker::judged_alone));
            if judged {
                used.entry(c.config.as_str())
                    .or_default()
                    .extend(c.pipelines.iter().map(String::as_str));
            }
        }
    }
    by_config
        .into_iter()
        .map(|(config, (possible, note))| {
            let used = used.get(config.as_str()).cloned().unwrap_or_default();
            let (dispatched, never) = possible
                .iter()
                .cloned()
                .partition(|p| used.contains(p.as_str()));
            let outside = used
                .iter()
                .filter(|u| !possible.contains(**u))
                .map(|u| u.to_string())
                .collect();
            Covered {
                possible: possible.len(),
                config,
                dispatched,
                never,
                outside,
                note,
            }
        })
        .collect()
}

/// The run summary's coverage lines: per configuration the count, percentage and the first
/// few never-dispatched modules (the full list is in `coverage.txt`).
pub fn coverage_summary(covered: &[Covered]) -> String {
    const FIRST: usize = 5;
    let mut s = String::new();
    for c in covered {
        let _ = writeln!(s, "pipelines {}: {}", c.config, c.line());
        if let Some(n) = &c.note {
            let _ = writeln!(s, "  ({n})");
        }
        if !c.never.is_empty() {
            let more = c.never.len().saturating_sub(FIRST);
            let _ = writeln!(
                s,
                "  never dispatched: {}{}",
                c.never[..c.never.len().min(FIRST)].join(", "),
                if more > 0 {
                    format!(" and {more} more (coverage.txt)")
                } else {
                    String::new()
                }
            );
        }
    }
    s
}

/// `coverage.txt`: every configuration's dispatched, never-dispatched and outside modules.
pub fn coverage_text(covered: &[Covered]) -> String {
    let mut s = String::new();
    for c in covered {
        let _ = writeln!(
            s,
            "# {}
# {}",
            c.config,
            c.line()
        );
        if let Some(n) = &c.note {
            let _ = writeln!(s, "# {n}");
        }
        for (label, names) in [
            ("dispatched", &c.dispatched),
            ("never", &c.never),
            ("outside", &c.outside),
        ] {
            for n in names {
                let _ = writeln!(s, "{label} {n}");
            }
        }
        s.push('\n');
    }
    s
}

fn coverage_html(covered: &[Covered]) -> String {
    if covered.is_empty() {
        return String::new();
    }
    let mut s = String::from("<h2>Pipeline coverage</h2><table><tr><th class=\"l\">config</th><th>possible</th><th>dispatched</th><th>%</th><th class=\"l\">never dispatched</th></tr>");
    for c in covered {
        let _ = write!(
            s,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td class=\"l\"><details><summary>{} modules</summary>{}</details>{}</td></tr>",
            esc(&c.config),
            c.possible,
            c.dispatched.len(),
            c.percent(),
            c.never.len(),
            esc(&c.never.join(", ")),
            c.note.as_deref().map(|n| format!("<br>{}", esc(n))).unwrap_or_default()
        );
    }
    s.push_str("</table>");
    s
}

/// The streaming writer.
pub struct JsonReport {
    out: std::fs::File,
}

impl JsonReport {
    /// Creates (truncates) the report file, creating its folder.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        Ok(JsonReport {
            out: std::fs::File::create(path)?,
        })
    }

    /// Appends one line and flushes it to the file.
    pub fn write(&mut self, line: &Line) -> std::io::Result<()> {
        let mut json = serde_json::to_string(line).map_err(std::io::Error::other)?;
        json.push('\n');
        self.out.write_all(json.as_bytes())?;
        self.out.flush()
    }
}

/// Reads a report back; a truncated last line (a run killed mid-write) is ignored.
pub fn read(path: &Path) -> Result<Vec<Line>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = Vec::new();
    for (n, text) in std::io::BufReader::new(file).lines().enumerate() {
        let text = text.map_err(|e| format!("{}: {e}", path.display()))?;
        match serde_json::from_str(&text) {
            Ok(l) => lines.push(l),
            Err(e) if text.trim().is_empty() || e.is_eof() => {}
            // An older run's findings line: `vkdiff report` groups the variants again anyway.
            Err(_) if is_findings_line(&text) => {}
            Err(e) => {
                return Err(format!(
                    "{}:{}: not a report line: {e}",
                    path.display(),
                    n + 1
                ))
            }
        }
    }
    Ok(lines)
}

/// Whether a line is a findings line (of any format).
fn is_findings_line(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .is_ok_and(|v| v.get("type").and_then(|t| t.as_str()) == Some("findings"))
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The places of a finding's members, each once, in order of appearance.
fn places_of(d: &Distinct, places: Places) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in &d.members {
        for p in places(m) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// Error/bound histogram bins of passing cases: [0, 0.1), [0.1, 0.2), … [0.9, 1].
const BINS: usize = 10;

fn histogram_svg(ratios: &[f64]) -> String {
    let mut counts = [0usize; BINS];
    for r in ratios {
        counts[((r * BINS as f64) as usize).min(BINS - 1)] += 1;
    }
    let max = counts.iter().copied().max().unwrap_or(0).max(1);
    let (w, h) = (22, 60);
    let mut svg = format!(
        "<svg width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"error/bound histogram\">",
        w * BINS + 2,
        h + 14
    );
    for (i, c) in counts.iter().enumerate() {
        let bar = (c * h) / max;
        let _ = write!(svg, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{bar}\" fill=\"#4a7fb5\"><title>{:.1}–{:.1}: {c} cases</title></rect>", 1 + i * w, h - bar, w - 2, i as f64 / BINS as f64, (i + 1) as f64 / BINS as f64);
    }
    let _ = write!(svg, "<text x=\"0\" y=\"{}\" font-size=\"10\">0</text><text x=\"{}\" y=\"{}\" font-size=\"10\">1</text></svg>", h + 12, w * BINS - 4, h + 12);
    svg
}

/// Where each member of a finding appeared (a merged report's inputs), one label each; empty
/// for a single report.
type Places<'a> = &'a dyn Fn(&findings::Member) -> Vec<String>;

/// The distinct findings section: new reachable, new forced-only, then known; stale entries.
fn findings_html(distinct: &[Distinct], stale: &[Known], places: Places) -> String {
    let mut s = String::new();
    let new: Vec<&Distinct> = distinct.iter().filter(|d| d.known.is_none()).collect();
    let reachable = new.iter().filter(|d| d.reachable()).count();
    let _ = write!(
        s,
        "<h2>{} distinct findings</h2><p><span class=\"bad\">{reachable} new reachable</span>, {} new forced-only, {} known</p>",
        distinct.len(),
        new.len() - reachable,
        distinct.len() - new.len()
    );
    type Pick = Box<dyn Fn(&Distinct) -> bool>;
    let groups: [(&str, Pick); 3] = [
        (
            "Reachable",
            Box::new(|d: &Distinct| d.known.is_none() && d.reachable()),
        ),
        (
            "Forced-only",
            Box::new(|d: &Distinct| d.known.is_none() && !d.reachable()),
        ),
        ("Known", Box::new(|d: &Distinct| d.known.is_some())),
    ];
    let mut n = 0;
    for (title, pick) in &groups {
        let list: Vec<&Distinct> = distinct.iter().filter(|d| pick(d)).collect();
        if list.is_empty() {
            continue;
        }
        let _ = write!(s, "<h3>{title}</h3>");
        for d in list {
            n += 1;
            let f = &d.representative;
            let variants: Vec<String> = d
                .variants()
                .iter()
                .map(|(v, c, k)| format!("<a href=\"#{}\">{}</a> {} ({k})", esc(v), esc(v), esc(c)))
                .collect();
            let members: String = d
                .members
                .iter()
                .map(|m| format!("{} {}: {}\n", m.variant, m.config, m.signature))
                .collect();
            let _ = write!(
                s,
                "<h4>#{n} {}</h4><p>{} failing cases in {}</p><p>{}</p><pre>{}\n\n{}\n\n{}</pre><details><summary>{} shrunk groups</summary><pre>{}</pre></details>",
                esc(&d.key.to_string()),
                d.cases(),
                variants.join(", "),
                esc(&f.signature.reach.to_string()),
                esc(&d.evidence().join("\n")),
                esc(&f.case.to_string()),
                esc(&f.explanation),
                d.members.len(),
                esc(&members)
            );
            let seen = places_of(d, places);
            if !seen.is_empty() {
                let _ = write!(
                    s,
                    "<p>Seen in:</p><ul>{}</ul>",
                    seen.iter()
                        .map(|p| format!("<li>{}</li>", esc(p)))
                        .collect::<String>()
                );
            }
            if let Some(k) = &d.known {
                let _ = write!(
                    s,
                    "<p>Known: {} (fix: {})</p>",
                    esc(&k.explanation),
                    esc(&k.fix)
                );
            } else if let Some((k, n)) = &d.partly_known {
                let _ = write!(
                    s,
                    "<p class=\"bad\">Partly known: {n} of {} groups match <code>{}</code>; the others do not, so the finding is new.</p>",
                    d.members.len(),
                    esc(&k.patterns.join(" & "))
                );
            }
            for m in d.other_kinds() {
                let _ = write!(
                    s,
                    "<p>Also {}: <code>{}</code> ({}){}</p>",
                    esc(&m.signature.kind),
                    esc(&m.case.to_string()),
                    esc(&m.variant),
                    m.repro
                        .as_ref()
                        .map(|p| format!(
                            ", replay: <code>vkdiff replay {}</code>",
                            esc(&p.display().to_string())
                        ))
                        .unwrap_or_default()
                );
            }
            if let Some(p) = &f.repro {
                let _ = write!(
                    s,
                    "<p>Replay: <code>vkdiff replay {}</code></p>",
                    esc(&p.display().to_string())
                );
            }
        }
    }
    for k in stale {
        let _ = write!(
            s,
            "<p class=\"bad\">Stale known finding (no longer reproduces): <code>{}</code>: {}</p>",
            esc(&k.patterns.join(" & ")),
            esc(&k.explanation)
        );
    }
    s
}

/// The page's head and style, up to `<body>`.
const HEAD: &str = "<!doctype html><html><head><meta charset=\"utf-8\"><title>vkdiff report</title><style>\nbody{font-family:system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse}td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}td.l,th.l{text-align:left}.ok{color:#2a7a2a}.bad{color:#b00020;font-weight:bold}pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:12px}h2{margin-top:1.4em}.muted{color:#777}\n</style></head><body>";

/// The HTML report: the distinct findings first, then per kernel and variant the outcome counts, the distribution of error/bound
/// over passing cases, the worst case, skip reasons, and each finding with its replay command.
pub fn html(lines: &[Line]) -> String {
    let mut ratios: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    let mut starts = Vec::new();
    let mut variants = Vec::new();
    let mut found = None;
    for l in lines {
        match l {
            Line::Start {
                device,
                config,
                shaders,
                seed,
                version,
            } => starts.push(format!(
                "{} {} — shaders {} — seed {seed} — vkdiff {version}",
                esc(device),
                esc(config),
                esc(shaders)
            )),
            Line::Case(c) => {
                if let Some(r) = c.ratio {
                    ratios
                        .entry((c.variant.clone(), c.config.clone()))
                        .or_default()
                        .push(r);
                }
            }
            Line::Variant(v) => variants.push(v.as_ref()),
            Line::Coverage(_) => {}
            Line::Findings { distinct, stale } => found = Some((distinct.clone(), stale.clone())),
        }
    }
    let total: u32 = variants.iter().map(|v| v.cases).sum();
    let bad = variants.iter().filter(|v| !v.ok()).count();
    let mut s = String::from(HEAD);
    let _ = write!(s, "<h1>vkdiff report</h1><p>{}</p>", starts.join("<br>"));
    let verdict = if bad == 0 {
        "<span class=\"ok\">all variants passed</span>".to_string()
    } else {
        format!("<span class=\"bad\">{bad} variant(s) with failures or errors</span>")
    };
    let _ = write!(
        s,
        "<p>{total} cases over {} variants: {verdict}</p>",
        variants.len()
    );
    // A report cut short has no findings line: group what it has, without the known list.
    let (distinct, stale) = found.unwrap_or_else(|| {
        let owned: Vec<VariantReport> = variants.iter().map(|v| (*v).clone()).collect();
        (findings::distinct(&owned, &[]), Vec::new())
    });
    s.push_str(&findings_html(&distinct, &stale, &|_| Vec::new()));
    s.push_str("<h2>Variants</h2><table><tr><th class=\"l\">kernel</th><th class=\"l\">variant</th><th class=\"l\">config</th><th>cases</th><th>pass</th><th>fail</th><th>errors</th><th>skip</th><th>worst error/bound</th><th>time</th><th class=\"l\">error/bound of passing cases</th></tr>");
    for v in &variants {
        let skipped: u32 = v.skipped.values().sum();
        let class = if v.ok() { "ok" } else { "bad" };
        let r = ratios
            .get(&(v.variant.clone(), v.config.clone()))
            .map(|r| histogram_svg(r))
            .unwrap_or_default();
        let _ = write!(
            s,
            "<tr><td class=\"l\">{}</td><td class=\"l {class}\"><a href=\"#{}\">{}</a></td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{skipped}</td><td>{:.3}</td><td>{:.1}s</td><td class=\"l\">{r}</td></tr>",
            esc(&v.kernel),
            esc(&v.variant),
            esc(&v.variant),
            esc(&v.config),
            v.cases,
            v.passed,
            v.failed,
            v.errors,
            v.worst_ratio,
            v.seconds
        );
    }
    s.push_str("</table>");
    s.push_str(&coverage_html(&coverage(lines)));
    s.push_str(&variant_sections(&variants));
    s.push_str("</body></html>\n");
    s
}

/// Per variant run: its findings with replay commands, errors, skips and worst passing case.
fn variant_sections(variants: &[&VariantReport]) -> String {
    let mut s = String::new();
    for v in variants {
        let _ = write!(
            s,
            "<h2 id=\"{}\">{} <span class=\"muted\">{}</span></h2>",
            esc(&v.variant),
            esc(&v.variant),
            esc(&v.config)
        );
        for f in &v.findings {
            let _ = write!(s, "<p class=\"bad\">Finding: {} ({} cases, shrunk in {} steps{})</p><pre>{}\nshrunk from: {}\n\n{}</pre>", esc(&f.signature.to_string()), f.cases, f.shrink_steps, if f.shrink_cut { ", cut at the time share" } else { "" }, esc(&f.case.to_string()), esc(&f.original.to_string()), esc(&f.explanation));
            if let Some(p) = &f.repro {
                let _ = write!(
                    s,
                    "<p>Replay: <code>vkdiff replay {}</code></p>",
                    esc(&p.display().to_string())
                );
            }
        }
        if let Some(e) = &v.first_error {
            let _ = write!(
                s,
                "<p class=\"bad\">{} error(s); first:</p><pre>{}</pre>",
                v.errors,
                esc(e)
            );
        }
        if let Some(m) = &v.missing {
            let _ = write!(s, "<p class=\"bad\">Missing: {}</p>", esc(m));
        }
        for (reason, n) in &v.skipped {
            let _ = write!(s, "<p>Skipped {n}: {}</p>", esc(reason));
        }
        if let Some(c) = &v.worst_case {
            let _ = write!(
                s,
                "<p>Worst passing case ({:.3} of the bound): <code>{}</code></p>",
                v.worst_ratio,
                esc(&c.to_string())
            );
        }
    }
    s
}

/// One input of a merged report: a report.jsonl (a shard, another device, another tree or
/// configuration) and its lines.
pub struct Input {
    /// The file, as named on the command line.
    pub file: String,
    /// Its lines ([`read`]).
    pub lines: Vec<Line>,
}

impl Input {
    /// Reads one report.jsonl.
    pub fn read(path: &Path) -> Result<Input, String> {
        Ok(Input {
            file: path.display().to_string(),
            lines: read(path)?,
        })
    }

    /// Its variant lines.
    pub fn variants(&self) -> impl Iterator<Item = &VariantReport> {
        self.lines.iter().filter_map(|l| match l {
            Line::Variant(v) => Some(v.as_ref()),
            _ => None,
        })
    }

    /// The shader tree a variant run of this input used: the start line of its device and
    /// configuration (a file with one start line: that one).
    fn tree(&self, device: &str, config: &str) -> String {
        let starts: Vec<(&String, &String, &String)> = self
            .lines
            .iter()
            .filter_map(|l| match l {
                Line::Start {
                    device,
                    config,
                    shaders,
                    ..
                } => Some((device, config, shaders)),
                _ => None,
            })
            .collect();
        starts
            .iter()
            .find(|(d, c, _)| *d == device && *c == config)
            .or_else(|| starts.iter().find(|(_, c, _)| *c == config))
            .or(starts.first())
            .map(|(_, _, s)| s.to_string())
            .unwrap_or_default()
    }

    /// "device [config] tree (file)": where a variant run of this input ran.
    fn place(&self, r: &VariantReport) -> String {
        let config = if r.config.is_empty() {
            String::new()
        } else {
            format!(" [{}]", r.config)
        };
        format!(
            "{}{config} shaders {} ({})",
            r.device,
            self.tree(&r.device, &r.config),
            self.file
        )
    }
}

/// Several reports taken as one: every variant run of every input, the distinct findings across
/// all of them (grouped by [`findings::distinct`]'s keys, so a bug seen in two shards, on two
/// devices or two trees is one finding), and where each was seen.
pub struct Merged {
    /// The inputs, in command-line order.
    pub inputs: Vec<Input>,
    /// Every input's variant runs, in order.
    pub reports: Vec<VariantReport>,
    /// Input index of each of `reports`.
    origin: Vec<usize>,
    /// Distinct findings across all inputs.
    pub distinct: Vec<Distinct>,
    /// Known entries that reproduced in none of the inputs although their paths ran.
    pub stale: Vec<Known>,
}

/// Per-variant counts summed over the inputs that ran the same variant on the same device and
/// configuration.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Summed {
    /// Kernel.
    pub kernel: String,
    /// Variant.
    pub variant: String,
    /// Device.
    pub device: String,
    /// Configuration (empty when not swept).
    pub config: String,
    /// The files it came from.
    pub files: Vec<String>,
    /// Cases generated, passed, failed, that could not run, skipped.
    pub cases: u32,
    /// See `cases`.
    pub passed: u32,
    /// See `cases`.
    pub failed: u32,
    /// See `cases`.
    pub errors: u32,
    /// See `cases`.
    pub skipped: u32,
    /// A shader was missing in one of the runs.
    pub missing: bool,
    /// Worst error/bound of passing cases over the runs.
    pub worst_ratio: f64,
    /// Seconds, summed.
    pub seconds: f64,
}

impl Summed {
    /// Nothing failed or errored.
    pub fn ok(&self) -> bool {
        self.failed == 0 && self.errors == 0 && !self.missing
    }
}

impl Merged {
    /// Merges the inputs, matching the findings against `known`.
    pub fn new(inputs: Vec<Input>, known: &[Known]) -> Merged {
        let mut reports = Vec::new();
        let mut origin = Vec::new();
        for (i, input) in inputs.iter().enumerate() {
            for v in input.variants() {
                reports.push(v.clone());
                origin.push(i);
            }
        }
        let distinct = findings::distinct(&reports, known);
        let stale = findings::stale(known, &distinct, &reports)
            .into_iter()
            .cloned()
            .collect();
        Merged {
            inputs,
            reports,
            origin,
            distinct,
            stale,
        }
    }

    /// Where a finding's member appeared: each variant run with that variant, configuration and
    /// shrunk case, as "device [config] shaders TREE (FILE)".
    pub fn places(&self, m: &findings::Member) -> Vec<String> {
        let case = m.case.to_string();
        let mut out: Vec<String> = Vec::new();
        for (r, &i) in self.reports.iter().zip(&self.origin) {
            if r.variant == m.variant
                && r.config == m.config
                && r.findings.iter().any(|f| f.case.to_string() == case)
            {
                let p = self.inputs[i].place(r);
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        out
    }

    /// The file each of [`Merged::reports`] came from.
    pub fn sources(&self) -> Vec<String> {
        self.origin
            .iter()
            .map(|&i| self.inputs[i].file.clone())
            .collect()
    }

    /// The variant runs summed by (kernel, variant, device, configuration), in order of first
    /// appearance.
    pub fn summed(&self) -> Vec<Summed> {
        let mut out: Vec<Summed> = Vec::new();
        for (r, &i) in self.reports.iter().zip(&self.origin) {
            let at = out.iter().position(|s| {
                s.kernel == r.kernel
                    && s.variant == r.variant
                    && s.device == r.device
                    && s.config == r.config
            });
            let s = match at {
                Some(at) => &mut out[at],
                None => {
                    out.push(Summed {
                        kernel: r.kernel.clone(),
                        variant: r.variant.clone(),
                        device: r.device.clone(),
                        config: r.config.clone(),
                        ..Default::default()
                    });
                    out.last_mut().expect("pushed")
                }
            };
            let file = &self.inputs[i].file;
            if !s.files.contains(file) {
                s.files.push(file.clone());
            }
            s.cases += r.cases;
            s.passed += r.passed;
            s.failed += r.failed;
            s.errors += r.errors;
            s.skipped += r.skipped.values().sum::<u32>();
            s.missing |= r.missing.is_some();
            s.worst_ratio = s.worst_ratio.max(r.worst_ratio);
            s.seconds += r.seconds;
        }
        out
    }

    /// The text summary: one line per input, then the summed table.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        for input in &self.inputs {
            let runs = input.variants().count();
            let cases: u32 = input.variants().map(|v| v.cases).sum();
            let _ = writeln!(s, "{}: {runs} variant runs, {cases} cases", input.file);
        }
        let _ = writeln!(
            s,
            "\n{:<12} {:<30} {:<34} {:>6} {:>6} {:>5} {:>5} {:>5} {:>7}  files",
            "kernel", "variant", "device [config]", "cases", "pass", "fail", "err", "skip", "worst"
        );
        for r in self.summed() {
            let device = if r.config.is_empty() {
                r.device.clone()
            } else {
                format!("{} [{}]", r.device, r.config)
            };
            let _ = writeln!(
                s,
                "{:<12} {:<30} {:<34} {:>6} {:>6} {:>5} {:>5} {:>5} {:>7.3}  {}",
                r.kernel,
                r.variant,
                device,
                r.cases,
                r.passed,
                r.failed,
                r.errors,
                r.skipped,
                r.worst_ratio,
                r.files.len()
            );
        }
        s
    }

    /// For each distinct finding (numbered as [`crate::campaign::findings_summary`] numbers them:
    /// new first, then known), where it was seen.
    pub fn places_summary(&self) -> String {
        let mut s = String::new();
        let (new, known): (Vec<_>, Vec<_>) = self.distinct.iter().partition(|d| d.known.is_none());
        for (i, d) in new.iter().chain(known.iter()).enumerate() {
            let seen = places_of(d, &|m| self.places(m));
            let _ = writeln!(s, "finding {} ({}) seen in:", i + 1, d.key);
            for p in seen {
                let _ = writeln!(s, "    {p}");
            }
        }
        s
    }

    /// The merged HTML page: the inputs, the distinct findings with where each was seen, the
    /// summed per-variant table, then each input's variant sections.
    pub fn html(&self) -> String {
        let mut ratios: BTreeMap<(usize, String, String), Vec<f64>> = BTreeMap::new();
        let mut s = String::from(HEAD);
        let _ = write!(
            s,
            "<h1>vkdiff report: {} reports merged</h1><ul>",
            self.inputs.len()
        );
        for (i, input) in self.inputs.iter().enumerate() {
            let starts: Vec<String> = input
                .lines
                .iter()
                .filter_map(|l| match l {
                    Line::Start {
                        device,
                        config,
                        shaders,
                        seed,
                        version,
                    } => Some(format!(
                        "{} {} — shaders {} — seed {seed} — vkdiff {version}",
                        esc(device),
                        esc(config),
                        esc(shaders)
                    )),
                    Line::Case(c) => {
                        if let Some(r) = c.ratio {
                            ratios
                                .entry((i, c.variant.clone(), c.config.clone()))
                                .or_default()
                                .push(r);
                        }
                        None
                    }
                    _ => None,
                })
                .collect();
            let _ = write!(
                s,
                "<li><code>{}</code>: {}</li>",
                esc(&input.file),
                starts.join("<br>")
            );
        }
        s.push_str("</ul>");
        let summed = self.summed();
        let total: u32 = summed.iter().map(|v| v.cases).sum();
        let bad = summed.iter().filter(|v| !v.ok()).count();
        let verdict = if bad == 0 {
            "<span class=\"ok\">all variants passed</span>".to_string()
        } else {
            format!("<span class=\"bad\">{bad} variant(s) with failures or errors</span>")
        };
        let _ = write!(
            s,
            "<p>{total} cases over {} variant runs: {verdict}</p>",
            summed.len()
        );
        s.push_str(&findings_html(&self.distinct, &self.stale, &|m| {
            self.places(m)
        }));
        s.push_str("<h2>Variants</h2><table><tr><th class=\"l\">kernel</th><th class=\"l\">variant</th><th class=\"l\">device</th><th class=\"l\">config</th><th>files</th><th>cases</th><th>pass</th><th>fail</th><th>errors</th><th>skip</th><th>worst error/bound</th><th>time</th><th class=\"l\">error/bound of passing cases</th></tr>");
        for v in &summed {
            let class = if v.ok() { "ok" } else { "bad" };
            // The passing cases' ratios of every input that ran this variant on this device.
            let mut r: Vec<f64> = Vec::new();
            for (rep, &i) in self.reports.iter().zip(&self.origin) {
                if rep.variant == v.variant && rep.device == v.device && rep.config == v.config {
                    if let Some(x) = ratios.get(&(i, v.variant.clone(), v.config.clone())) {
                        r.extend(x);
                    }
                }
            }
            let hist = if r.is_empty() {
                String::new()
            } else {
                histogram_svg(&r)
            };
            let _ = write!(
                s,
                "<tr><td class=\"l\">{}</td><td class=\"l {class}\"><a href=\"#{}\">{}</a></td><td class=\"l\">{}</td><td class=\"l\">{}</td><td title=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.1}s</td><td class=\"l\">{hist}</td></tr>",
                esc(&v.kernel),
                esc(&v.variant),
                esc(&v.variant),
                esc(&v.device),
                esc(&v.config),
                esc(&v.files.join("\n")),
                v.files.len(),
                v.cases,
                v.passed,
                v.failed,
                v.errors,
                v.skipped,
                v.worst_ratio,
                v.seconds
            );
        }
        s.push_str("</table>");
        for input in &self.inputs {
            let variants: Vec<&VariantReport> = input.variants().collect();
            if variants.is_empty() {
                continue;
            }
            let _ = write!(s, "<h2>From <code>{}</code></h2>", esc(&input.file));
            s.push_str(&variant_sections(&variants));
        }
        s.push_str("</body></html>\n");
        s
    }
}

/// Text made safe for XML content and attribute values: the five special characters escaped,
/// line breaks kept as character references (attributes would fold them to spaces), and the
/// characters XML 1.0 forbids (control characters, U+FFFE, U+FFFF) replaced by U+FFFD.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// A JUnit test case: the variant run, its name, its verdict and its `<system-out>`.
type TestCase<'a> = (&'a VariantReport, &'a str, Verdict, String);

/// How a variant run reads as a JUnit test case.
enum Verdict {
    Passed,
    /// Wrong results not on the known list (message, details).
    Failed(String, String),
    /// Cases that could not run, and no new wrong result (message, details).
    Error(String, String),
    /// No case ran (the reasons).
    Skipped(String),
}

/// JUnit XML of variant runs, for CI test reporters: one `<testsuite>` per kernel, one
/// `<testcase>` per variant run (classname the kernel, name the variant with its configuration
/// and, when the runs span several devices, its device; time its wall time). A run with new
/// wrong results (a finding not on the known list, or failure groups left unshrunk) has a
/// `<failure>` with each finding's signature, case, explanation and replay command; one whose
/// cases could not run (compile or Vulkan errors, a missing shader) an `<error>`; one that ran
/// no case a `<skipped>` with the reasons. Known findings are passes, quoted in `<system-out>`,
/// as they do not fail `vkdiff run` either.
/// `sources`, when given, names where each report came from (a merged report's files): it is
/// added to the names that would otherwise repeat.
pub fn junit(
    reports: &[VariantReport],
    distinct: &[Distinct],
    sources: Option<&[String]>,
) -> String {
    // The (variant, configuration, shrunk case) of every member of a known finding.
    let known: std::collections::BTreeSet<(String, String, String)> = distinct
        .iter()
        .filter(|d| d.known.is_some())
        .flat_map(|d| {
            d.members
                .iter()
                .map(|m| (m.variant.clone(), m.config.clone(), m.case.to_string()))
        })
        .collect();
    let several_devices = reports.iter().any(|r| r.device != reports[0].device);
    let name_of = |r: &VariantReport| {
        let mut name = r.variant.clone();
        if !r.config.is_empty() {
            let _ = write!(name, " [{}]", r.config);
        }
        if several_devices {
            let _ = write!(name, " on {}", r.device);
        }
        name
    };
    let mut names: Vec<String> = reports.iter().map(name_of).collect();
    let repeated: Vec<bool> = names
        .iter()
        .zip(reports)
        .map(|(n, r)| {
            names
                .iter()
                .zip(reports)
                .filter(|(m, q)| *m == n && q.kernel == r.kernel)
                .count()
                > 1
        })
        .collect();
    for (i, name) in names.iter_mut().enumerate() {
        if let (true, Some(s)) = (repeated[i], sources.and_then(|s| s.get(i))) {
            let _ = write!(name, " from {s}");
        }
    }
    let mut suites: Vec<(&str, Vec<TestCase>)> = Vec::new();
    for (r, name) in reports.iter().zip(&names) {
        let mut new = String::new();
        let mut known_text = String::new();
        let mut new_count = 0;
        for f in &r.findings {
            let key = (r.variant.clone(), r.config.clone(), f.case.to_string());
            let text = format!(
                "{}\n{} failing cases; shrunk case: {}\n{}\n{}",
                f.signature,
                f.cases,
                f.case,
                f.explanation.trim_end(),
                f.repro
                    .as_ref()
                    .map(|p| format!("replay: vkdiff replay {}\n", p.display()))
                    .unwrap_or_default()
            );
            if known.contains(&key) {
                known_text.push_str("known finding: ");
                known_text.push_str(&text);
                known_text.push('\n');
            } else {
                new_count += 1;
                new.push_str(&text);
                new.push('\n');
            }
        }
        for (key, n) in &r.unshrunk {
            new_count += 1;
            let _ = writeln!(
                new,
                "{n} failing cases not shrunk (past --max-findings): {key}\n"
            );
        }
        let mut error = String::new();
        if let Some(m) = &r.missing {
            let _ = writeln!(error, "missing: {m}");
        }
        if let Some(e) = &r.first_error {
            let _ = writeln!(error, "{} cases could not run; the first: {e}", r.errors);
        }
        let skips: Vec<String> = r
            .skipped
            .iter()
            .map(|(reason, n)| format!("{n} skipped: {reason}"))
            .collect();
        let verdict = if new_count > 0 {
            let first = new.lines().next().unwrap_or_default().to_string();
            Verdict::Failed(
                format!(
                    "{} of {} cases failed; {new_count} new findings; first: {first}",
                    r.failed, r.cases
                ),
                new + &error,
            )
        } else if r.errored() {
            Verdict::Error(
                format!("{} of {} cases could not run", r.errors, r.cases),
                error,
            )
        } else if r.passed + r.failed + r.errors == 0 {
            Verdict::Skipped(if skips.is_empty() {
                "no case ran".to_string()
            } else {
                skips.join("; ")
            })
        } else {
            Verdict::Passed
        };
        let mut out = known_text;
        if !skips.is_empty() && !matches!(verdict, Verdict::Skipped(_)) {
            out.push_str(&skips.join("\n"));
            out.push('\n');
        }
        match suites.iter_mut().find(|s| s.0 == r.kernel) {
            Some(s) => s.1.push((r, name, verdict, out)),
            None => suites.push((&r.kernel, vec![(r, name, verdict, out)])),
        }
    }
    let count = |cases: &[TestCase], pick: fn(&Verdict) -> bool| {
        cases.iter().filter(|c| pick(&c.2)).count()
    };
    let failed: fn(&Verdict) -> bool = |v| matches!(v, Verdict::Failed(..));
    let errored: fn(&Verdict) -> bool = |v| matches!(v, Verdict::Error(..));
    let skipped: fn(&Verdict) -> bool = |v| matches!(v, Verdict::Skipped(_));
    let all: Vec<&TestCase> = suites.iter().flat_map(|s| &s.1).collect();
    let total_time: f64 = reports.iter().map(|r| r.seconds).sum();
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        s,
        "<testsuites name=\"vkdiff\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{total_time:.3}\">",
        all.len(),
        all.iter().filter(|c| failed(&c.2)).count(),
        all.iter().filter(|c| errored(&c.2)).count(),
        all.iter().filter(|c| skipped(&c.2)).count(),
    );
    for (kernel, cases) in &suites {
        let time: f64 = cases.iter().map(|c| c.0.seconds).sum();
        let _ = writeln!(
            s,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{time:.3}\">",
            xml_escape(kernel),
            cases.len(),
            count(cases, failed),
            count(cases, errored),
            count(cases, skipped),
        );
        for (r, name, verdict, out) in cases {
            let _ = write!(
                s,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\">",
                xml_escape(&r.kernel),
                xml_escape(name),
                r.seconds
            );
            match verdict {
                Verdict::Passed => {}
                Verdict::Failed(message, text) => {
                    let _ = write!(
                        s,
                        "\n      <failure type=\"wrong result\" message=\"{}\">{}</failure>",
                        xml_escape(message),
                        xml_escape(text)
                    );
                }
                Verdict::Error(message, text) => {
                    let _ = write!(
                        s,
                        "\n      <error type=\"could not run\" message=\"{}\">{}</error>",
                        xml_escape(message),
                        xml_escape(text)
                    );
                }
                Verdict::Skipped(message) => {
                    let _ = write!(s, "\n      <skipped message=\"{}\"/>", xml_escape(message));
                }
            }
            if !out.is_empty() {
                let _ = write!(s, "\n      <system-out>{}</system-out>", xml_escape(out));
            }
            s.push_str(if matches!(verdict, Verdict::Passed) && out.is_empty() {
                "</testcase>\n"
            } else {
                "\n    </testcase>\n"
            });
        }
        s.push_str("  </testsuite>\n");
    }
    s.push_str("</testsuites>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_counts_the_modules_judged_cases_dispatched() {
        let config = "ggml T config scalar-fp32";
        let crashed = |gave: &str| {
            format!(
                "{} (3 before it, the last: x); alone in a fresh worker it gave {gave}. The \
                 crash: signal 6",
                crate::worker::AFTER_EARLIER
            )
        };
        let case = |outcome: &str, pipelines: &[&str], config: &str, detail: Option<String>| {
            let mut c: CaseRecord = serde_json::from_value(serde_json::json!({
                "kernel": "mul_mat_vec", "variant": "v", "config": config, "case": "c",
                "outcome": outcome, "ratio": null, "gpu_ns": null, "detail": detail,
            }))
            .unwrap();
            c.pipelines = pipelines.iter().map(|p| p.to_string()).collect();
            Line::Case(c)
        };
        let lines = vec![
            Line::Coverage(Box::new(Coverage {
                config: config.into(),
                possible: vec!["a".into(), "b".into(), "c".into(), "d".into(), "e".into()],
                ..Default::default()
            })),
            case("pass", &["a", "cpy"], config, None),
            case("fail", &["b"], config, None),
            // A crash after earlier cases whose rerun alone was judged: counted.
            case("crash", &["e"], config, Some(crashed("never written"))),
            // Not judged, or another configuration: not counted.
            case("crash", &["c"], config, None),
            case("crash", &["c"], config, Some(crashed("no result (lost)"))),
            case("pass", &["d"], "ggml T config scalar-fp16", None),
        ];
        let covered = coverage(&lines);
        assert_eq!(covered.len(), 1);
        let c = &covered[0];
        assert_eq!(
            (c.possible, c.dispatched.clone()),
            (5, vec!["a".to_string(), "b".into(), "e".into()])
        );
        assert_eq!(c.never, ["c", "d"]);
        assert_eq!(c.outside, ["cpy"]);
        assert_eq!(
            c.line(),
            "3 of 5 pipelines dispatched by judged cases (60.0%)"
        );
        let summary = coverage_summary(&covered);
        assert!(summary.contains("never dispatched: c, d\n"), "{summary}");
        assert!(coverage_text(&covered).contains("outside cpy\n"));
        assert!(html(&lines).contains("Pipeline coverage"));
    }

    #[test]
    fn xml_escape_leaves_nothing_a_parser_would_reject_or_change() {
        assert_eq!(
            xml_escape("a<b>&\"c\"'d'\n\t\u{1b}[0m\u{FFFF}"),
            "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;&#10;&#9;\u{FFFD}[0m\u{FFFD}"
        );
        assert_eq!(xml_escape("× ≤ 1"), "× ≤ 1");
    }

    #[test]
    fn junit_counts_errors_and_skips_per_kernel() {
        let run = |kernel: &str, variant: &str| VariantReport {
            kernel: kernel.into(),
            variant: variant.into(),
            device: "dev".into(),
            cases: 4,
            passed: 4,
            seconds: 1.5,
            ..Default::default()
        };
        let pass = run("k1", "a");
        let mut error = run("k1", "b<&>");
        error.passed = 3;
        error.errors = 1;
        error.first_error = Some("compile error: \"x\" < y".into());
        let mut skip = run("k2", "c");
        skip.passed = 0;
        skip.skipped.insert("needs coopmat2".into(), 4);
        let xml = junit(&[pass, error, skip], &[], None);
        assert!(xml.contains("<testsuites name=\"vkdiff\" tests=\"3\" failures=\"0\" errors=\"1\" skipped=\"1\" time=\"4.500\">"), "{xml}");
        assert!(xml.contains("<testsuite name=\"k1\" tests=\"2\" failures=\"0\" errors=\"1\" skipped=\"0\" time=\"3.000\">"), "{xml}");
        assert!(
            xml.contains("<testcase classname=\"k1\" name=\"b&lt;&amp;&gt;\" time=\"1.500\">"),
            "{xml}"
        );
        assert!(xml.contains("compile error: &quot;x&quot; &lt; y"), "{xml}");
        assert!(
            xml.contains("<skipped message=\"4 skipped: needs coopmat2\"/>"),
            "{xml}"
        );
        assert!(
            xml.contains("<testcase classname=\"k1\" name=\"a\" time=\"1.500\"></testcase>"),
            "{xml}"
        );
    }
}
