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
    /// The run's distinct findings, matched against the known list (written last).
    Findings {
        /// Distinct findings, reachable first.
        distinct: Vec<Distinct>,
        /// Known entries that did not reproduce.
        stale: Vec<Known>,
    },
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

/// The distinct findings section: new reachable, new forced-only, then known; stale entries.
fn findings_html(distinct: &[Distinct], stale: &[Known]) -> String {
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
            Line::Findings { distinct, stale } => found = Some((distinct.clone(), stale.clone())),
        }
    }
    let total: u32 = variants.iter().map(|v| v.cases).sum();
    let bad = variants.iter().filter(|v| !v.ok()).count();
    let mut s = String::from("<!doctype html><html><head><meta charset=\"utf-8\"><title>vkdiff report</title><style>\nbody{font-family:system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse}td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}td.l,th.l{text-align:left}.ok{color:#2a7a2a}.bad{color:#b00020;font-weight:bold}pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:12px}h2{margin-top:1.4em}.muted{color:#777}\n</style></head><body>");
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
    s.push_str(&findings_html(&distinct, &stale));
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
    for v in &variants {
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
    s.push_str("</body></html>\n");
    s
}
