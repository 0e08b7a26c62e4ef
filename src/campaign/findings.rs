//! Findings a ggml developer can act on: what a failing case is (its signature), whether a real
//! ggml graph can produce it (reachability), grouping the shrunk failures of a whole campaign
//! into distinct findings, and the checked-in list of findings already understood upstream.
//!
//! A signature is made of words, each type-independent, so one bug seen in many type variants
//! is one finding:
//! - the kernel and its path (`mul_mm/scalar`, `flash_attn/cm2`, …);
//! - the outcome kind: crash, nondeterministic, validation message, a write past dst, never
//!   written, NaN, ±inf, a finite value in a row ggml leaves NaN (fully masked), wrong value;
//! - where in dst the failing elements lie, per named axis (rows, columns, tokens, heads…):
//!   everywhere, a tail starting at a tile-aligned index, a head, the interior;
//! - the shape facts of the case, with types left out: sizes as buckets around the tile edges
//!   (1, 2–8, 9–32, 33–64, 65–128, > 128), K in BK steps or blocks, splits, batches, routing,
//!   masks;
//! - reachable, or forced-only with the reasons.
//!
//! A campaign's shrunk failures are then grouped into distinct findings, one per root cause:
//! [`FindingKey`] keeps the path, the symptom family, the cause facts (a split, a ragged split,
//! repeated experts) and reachability, and drops sizes, types, the outcome
//! kind within its family and where in dst; those stay inside the finding as evidence.
//!
//! Before shrinking, a variant's failures are grouped by a coarse key (path, primary outcome
//! kind, reachability and a few trigger facts); one representative of every group is shrunk,
//! and a shrink step is kept only when the candidate keeps that key, so one bug cannot slide
//! into (and hide) another (a forced-only case may become reachable, never the reverse).
//!
//! Everything here reads only the case and the outcome, so it is the same for every evaluator
//! (a backend evaluator, whose host chooses the configuration itself, overrides
//! [`crate::worker::Evaluator::reach`] with [`input_reach`]: only the inputs can make its cases
//! forced-only there).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::campaign::{Finding, VariantReport};
use crate::cases::{Case, Outcome};
use crate::compare::Spread;
pub use crate::model::facts::{
    bucket, host_cores, input_reach, k_fact, mm_path, primary_kind, reach_of, repeated_expert,
    repeated_forced, rows, Reach, AFTER_EARLIER_KIND, FULLY_MASKED, NO_CORES, RAGGED, REPEATED,
    REPEATED_FACT,
};

/// The coarse key a variant's failures are grouped by before shrinking, and which a shrink
/// step must keep.
pub fn group_key(case: &Case, outcome: &Outcome, reach: &Reach) -> String {
    format!(
        "{} | {} | {}{}",
        path_of(case),
        primary_kind(outcome),
        if reach.reachable() {
            "reachable"
        } else {
            "forced-only"
        },
        triggers(case)
            .iter()
            .map(|t| format!(" | {t}"))
            .collect::<String>()
    )
}

/// Whether a shrink candidate stays in the group it started from: same key, except that a
/// forced-only case may shrink into a reachable one (the finding gets stronger), never the
/// reverse (a reachable bug must not slide into a forced-only configuration).
pub fn keeps_group(key: &str, reach: &Reach, candidate_key: &str, candidate: &Reach) -> bool {
    let neutral = |k: &str| k.replacen("| forced-only", "| reachable", 1);
    neutral(key) == neutral(candidate_key) && (candidate.reachable() || !reach.reachable())
}

/// A finding's signature (see the module notes).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Signature {
    /// Kernel and path.
    pub path: String,
    /// The outcome kind.
    pub kind: String,
    /// Where in dst.
    pub location: String,
    /// The shape facts, types left out.
    pub shape: String,
    /// Reachability.
    pub reach: Reach,
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} | {} | at {} | {} | {}",
            self.path,
            self.kind,
            self.location,
            self.shape,
            if self.reach.reachable() {
                "reachable"
            } else {
                "forced-only"
            }
        )
    }
}

/// The signature of a failing (usually shrunk) case.
pub fn signature(case: &Case, outcome: &Outcome, reach: &Reach) -> Signature {
    let location = match outcome {
        Outcome::Fail { verdict } => location(&verdict.spread, axes(case)),
        _ => "-".into(),
    };
    Signature {
        path: path_of(case),
        kind: primary_kind(outcome),
        location,
        shape: facts(case).join(", "),
        reach: reach.clone(),
    }
}

/// The exit status of a run: 1 for new reachable findings, 4 for new forced-only ones, 8 for
/// cases that could not run, summed (the CLI's `EXIT_CODES` says the same to users).
pub fn exit_status(distinct: &[Distinct], reports: &[VariantReport]) -> u8 {
    let new = distinct.iter().filter(|d| d.known.is_none());
    let mut code = 0;
    for d in new {
        code |= if d.reachable() { 1 } else { 4 };
    }
    // Groups past --max-findings were not shrunk: count them by their key's reachability.
    for r in reports {
        for key in r.unshrunk.keys() {
            code |= if key.contains("| forced-only") { 4 } else { 1 };
        }
    }
    if reports.iter().any(|r| r.errored()) {
        code |= 8;
    }
    code
}

/// Kernel and path of a case.
pub fn path_of(case: &Case) -> String {
    let path = case.model().path();
    if path.is_empty() {
        case.kernel().to_string()
    } else {
        format!("{}/{path}", case.kernel())
    }
}

/// The names of dst's ggml axes for a case.
pub fn axes(case: &Case) -> [&'static str; 4] {
    case.model().axes()
}

/// Where the failing elements lie, per axis of extent > 1, relative to tile edges.
pub fn location(s: &Spread, axes: [&str; 4]) -> String {
    let mut parts = Vec::new();
    for (d, axis) in axes.iter().enumerate() {
        let ne = s.ne[d];
        if ne <= 1 {
            continue;
        }
        let (lo, hi) = (s.lo[d], s.hi[d]);
        let class = if lo == 0 && hi + 1 == ne {
            "all".to_string()
        } else if hi + 1 == ne {
            format!("tail from {}", edge(lo))
        } else if lo == 0 {
            format!("head to {}", edge(hi + 1))
        } else {
            format!("interior from {}", edge(lo))
        };
        parts.push(format!("{axis} {class}"));
    }
    for r in &s.regions {
        if !r.starts_with("fully masked") {
            parts.push(format!("in {r}"));
        }
    }
    if parts.is_empty() {
        "the only element".into()
    } else {
        parts.join(", ")
    }
}

/// An index described by its alignment: a multiple of 64/32/16/8, or an unaligned index.
fn edge(i: usize) -> String {
    match [64, 32, 16, 8].into_iter().find(|a| i % a == 0) {
        Some(a) => format!("a multiple of {a}"),
        None => "an unaligned index".into(),
    }
}

/// The few facts that mark a different failure mode, which shrinking must not remove (a
/// variant shrinks one representative per combination): a split, or fully masked rows, which
/// would otherwise shrink away into whatever simpler bug the same rows have (on the pinned tree,
/// every flash-attention case shrinks to the key-tile bound at KV = 1).
pub fn triggers(case: &Case) -> Vec<String> {
    case.model().triggers()
}

/// The shape facts of a case, types left out.
pub fn facts(case: &Case) -> Vec<String> {
    case.model().facts()
}

/// The symptom family of an outcome kind, which names a distinct finding: wrong, NaN, ±inf and
/// nondeterministic values are one family, because one root cause (a race, an unbounded read of
/// whatever memory holds) shows as any of them from case to case (on the H100 the MUL_MAT_ID
/// store race shrank to 39 fine signatures: 25 nondeterministic, 12 wrong, 1 NaN, 1 ±inf). Outputs
/// never written, writes past dst, finite rows where ggml gives NaN, finite values where ggml gives
/// NaN or ±∞ (a clamp), crashes, hangs and each validation message keep their own family: they
/// point at different code.
pub fn symptom(kind: &str) -> String {
    match kind {
        "wrong value" | "NaN" | "±inf" | "nondeterministic" => "wrong or unstable values".into(),
        k => k.into(),
    }
}

/// The configuration facts that name a cause apart from sizes: a split (and whether it is whole
/// BK steps), a token repeating an expert. Fully masked rows are not one: a row the mask empties
/// fails as its own symptom ([`symptom`]), and a value failure in a case that also has fully
/// masked rows lies in the other rows, so the mask did not cause it.
pub fn cause(case: &Case) -> Vec<String> {
    let mut t: Vec<String> = triggers(case)
        .into_iter()
        .filter(|w| w != FULLY_MASKED)
        .collect();
    case.model().cause(&mut t);
    t
}

/// What one distinct finding is: one root cause. Its kernel path, its symptom family, the
/// configuration facts of its cause and its reachability; sizes, types, the outcome kind within
/// the family and where in dst are evidence listed inside it, not part of its identity. A
/// reachable and a forced-only finding stay apart even with the same cause, so a known
/// forced-only entry never excuses a reachable bug and the exit status keeps them apart.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FindingKey {
    /// Kernel and path.
    pub path: String,
    /// The symptom family ([`symptom`]).
    pub symptom: String,
    /// The cause facts ([`cause`]), empty when none.
    pub cause: Vec<String>,
    /// Reachable from a real graph.
    pub reachable: bool,
}

impl FindingKey {
    /// The key of a shrunk finding.
    pub fn of(f: &Finding) -> Self {
        FindingKey {
            path: f.signature.path.clone(),
            symptom: symptom(&f.signature.kind),
            // Such a crash's cause is what ran before it, not this case's configuration.
            cause: if f.signature.kind == AFTER_EARLIER_KIND {
                vec!["earlier cases in the same worker".into()]
            } else {
                cause(&f.case)
            },
            reachable: f.signature.reach.reachable(),
        }
    }
}

impl fmt::Display for FindingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} | {} | {} | {}",
            self.path,
            self.symptom,
            if self.cause.is_empty() {
                "no trigger".into()
            } else {
                self.cause.join("; ")
            },
            if self.reachable {
                "reachable"
            } else {
                "forced-only"
            }
        )
    }
}

/// One shrunk failure group of one variant run, inside a distinct finding.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Member {
    /// Variant.
    pub variant: String,
    /// Device configuration.
    pub config: String,
    /// The Vulkan driver it ran on ([`VariantReport::driver`]).
    #[serde(default)]
    pub driver: String,
    /// The variant's failing cases in the group.
    pub cases: u32,
    /// The fine signature of the group's shrunk case.
    pub signature: Signature,
    /// The group's shrunk case.
    pub case: Case,
    /// Its reproducer, when written.
    #[serde(default)]
    pub repro: Option<std::path::PathBuf>,
}

/// One distinct finding of a campaign: every variant's shrunk failure group with its key, and
/// the smallest of those shrunk cases as its representative.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Distinct {
    /// What the finding is.
    pub key: FindingKey,
    /// Each shrunk group it covers, in order of appearance.
    pub members: Vec<Member>,
    /// The smallest shrunk case among the members.
    pub representative: Finding,
    /// The known-findings entry that explains every member, if any.
    pub known: Option<Known>,
    /// A known entry that explains only some members (how many), when none explains all: the
    /// rest is a bug the entry does not cover, so the finding counts as new.
    pub partly_known: Option<(Known, usize)>,
}

impl Distinct {
    /// Reachable from a real graph.
    pub fn reachable(&self) -> bool {
        self.key.reachable
    }

    /// Failing cases over every variant it covers.
    pub fn cases(&self) -> u32 {
        self.members.iter().map(|m| m.cases).sum()
    }

    /// (variant, configuration, failing cases) per variant run it covers.
    pub fn variants(&self) -> Vec<(String, String, u32)> {
        let mut out: Vec<(String, String, u32)> = Vec::new();
        for m in &self.members {
            match out.iter_mut().find(|v| v.0 == m.variant && v.1 == m.config) {
                Some(v) => v.2 += m.cases,
                None => out.push((m.variant.clone(), m.config.clone(), m.cases)),
            }
        }
        out
    }

    /// The evidence behind the finding, one line each: outcome kinds, where in dst, the ranges
    /// of the shrunk cases' sizes, and (forced-only) why the configurations are forced.
    pub fn evidence(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let count = |items: Vec<String>| {
            let mut c: Vec<(String, usize)> = Vec::new();
            for i in items {
                match c.iter_mut().find(|e| e.0 == i) {
                    Some(e) => e.1 += 1,
                    None => c.push((i, 1)),
                }
            }
            c.sort_by_key(|e| std::cmp::Reverse(e.1));
            c
        };
        let n = self.members.len();
        let kinds = count(
            self.members
                .iter()
                .map(|m| m.signature.kind.clone())
                .collect(),
        );
        lines.push(format!(
            "outcomes in {n} shrunk groups: {}",
            kinds
                .iter()
                .map(|(k, c)| format!("{k} ×{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        let places = count(
            self.members
                .iter()
                .filter(|m| m.signature.location != "-")
                .map(|m| m.signature.location.clone())
                .collect(),
        );
        if !places.is_empty() {
            let shown: Vec<String> = places.iter().take(3).map(|(p, _)| p.clone()).collect();
            let more = places.len().saturating_sub(3);
            lines.push(format!(
                "where in dst: {}{}",
                shown.join("; "),
                if more > 0 {
                    format!("; and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        let mut ranges: Vec<(&'static str, usize, usize)> = Vec::new();
        for m in &self.members {
            for (name, v) in dims(&m.case) {
                match ranges.iter_mut().find(|r| r.0 == name) {
                    Some(r) => {
                        r.1 = r.1.min(v);
                        r.2 = r.2.max(v);
                    }
                    None => ranges.push((name, v, v)),
                }
            }
        }
        lines.push(format!(
            "shrunk sizes: {}",
            ranges
                .iter()
                .map(|(name, lo, hi)| if lo == hi {
                    format!("{name} {lo}")
                } else {
                    format!("{name} {lo}–{hi}")
                })
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if !self.key.reachable {
            let why = count(
                self.members
                    .iter()
                    .flat_map(|m| m.signature.reach.forced.clone())
                    .collect(),
            );
            lines.push(format!(
                "forced because: {}",
                why.iter()
                    .map(|(w, _)| w.clone())
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        lines
    }
}

impl Distinct {
    /// The smallest member of every outcome kind other than the representative's: each
    /// kind's own reproducer, so a second bug that shares the key still gets one.
    pub fn other_kinds(&self) -> Vec<&Member> {
        let mut out: Vec<&Member> = Vec::new();
        for m in &self.members {
            if m.signature.kind == self.representative.signature.kind {
                continue;
            }
            match out
                .iter_mut()
                .find(|o| o.signature.kind == m.signature.kind)
            {
                Some(o) if size(&m.case) < size(&o.case) => *o = m,
                Some(_) => {}
                None => out.push(m),
            }
        }
        out
    }
}

/// The sizes of a case, named, for the evidence ranges of a finding.
pub fn dims(case: &Case) -> Vec<(&'static str, usize)> {
    case.model().dims()
}

/// Groups the shrunk findings of every variant report into distinct findings by
/// [`FindingKey`] (order: reachable first, then by first appearance), takes the smallest shrunk
/// case of each as its representative, and matches each against the known list.
pub fn distinct(reports: &[VariantReport], known: &[Known]) -> Vec<Distinct> {
    let mut by_key: BTreeMap<FindingKey, usize> = BTreeMap::new();
    let mut out: Vec<Distinct> = Vec::new();
    for r in reports {
        for f in &r.findings {
            // The shape facts with today's rules, so an older report groups as a new run would.
            let mut f = f.clone();
            f.signature.shape = facts(&f.case).join(", ");
            let f = &f;
            let key = FindingKey::of(f);
            let member = Member {
                variant: r.variant.clone(),
                config: r.config.clone(),
                driver: r.driver.clone(),
                cases: f.cases,
                signature: f.signature.clone(),
                case: f.case.clone(),
                repro: f.repro.clone(),
            };
            match by_key.get(&key) {
                Some(&i) => {
                    let d = &mut out[i];
                    if size(&f.case) < size(&d.representative.case) {
                        d.representative = f.clone();
                    }
                    d.members.push(member);
                }
                None => {
                    by_key.insert(key.clone(), out.len());
                    out.push(Distinct {
                        key,
                        members: vec![member],
                        representative: f.clone(),
                        known: None,
                        partly_known: None,
                    });
                }
            }
        }
    }
    for d in out.iter_mut() {
        d.known = known.iter().find(|k| k.explains(d)).cloned();
        if d.known.is_none() {
            d.partly_known = known
                .iter()
                .map(|k| {
                    (
                        k,
                        d.members
                            .iter()
                            .filter(|m| k.matches_member(&d.key, m))
                            .count(),
                    )
                })
                .filter(|(_, n)| *n > 0)
                .max_by_key(|(_, n)| *n)
                .map(|(k, n)| (k.clone(), n));
        }
    }
    out.sort_by_key(|d| !d.reachable());
    out
}

/// A case's size for picking the smallest representative: the sum of its sizes.
fn size(case: &Case) -> usize {
    dims(case).iter().map(|d| d.1).sum()
}

/// An entry of the known-findings file: every pattern must occur in the finding's key or in the
/// fine signature of each of its members (the whole finding is explained, or it is new).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Known {
    /// Substrings of the key or of each member's signature, all required.
    pub patterns: Vec<String>,
    /// Which runs the entry is about (`@…` patterns): each must hold for the run's target, one
    /// of its comma-separated alternatives holding ([`scope_term_holds`]: `has:CHANGE`,
    /// `lacks:CHANGE`, `ggml-version:V`, `git:PREFIX`, else a substring of [`run_target`]
    /// outside its identity, e.g. `@shaders`, `@ggml`, `@shaders,0.1.109`; and `driver:TEXT`,
    /// [`Known::applies_to`]). Empty: every run.
    #[serde(default)]
    pub scope: Vec<String>,
    /// What the bug is.
    pub explanation: String,
    /// The upstream change that fixed it, or "not fixed".
    pub fix: String,
}

/// What a known entry's scope is matched against: `ggml <tree> [<identity>] config <name>` for
/// a backend run (its report config; reports written before trees had an identity lack the
/// bracket), `shaders <config>` for shader mode.
pub fn run_target(config: &str) -> String {
    if config.starts_with("ggml ") {
        config.to_string()
    } else {
        format!("shaders {config}")
    }
}

pub use crate::exec::ggml::identity::{ggml_version, tree_identity, Marker, CHANGES};

/// A backend run's target split into the part outside its identity bracket and the identity
/// (empty when the target has none: shader mode, or a report from before identities).
fn split_identity(target: &str) -> (String, &str) {
    if let (Some(open), Some(close)) = (target.find(" ["), target.rfind("] config ")) {
        if open < close {
            return (
                format!("{}{}", &target[..open], &target[close + 1..]),
                &target[open + 2..close],
            );
        }
    }
    (target.to_string(), "")
}

/// The words of one identity field (`has`, `lacks`, `git`, `ggml-version`), if present.
fn identity_field<'a>(identity: &'a str, field: &str) -> Option<Vec<&'a str>> {
    identity.split("; ").find_map(|p| {
        let rest = p.strip_prefix(field)?;
        (rest.is_empty() || rest.starts_with(' ')).then(|| rest.split_whitespace().collect())
    })
}

/// Whether one alternative of a scope pattern holds for a run's target:
/// - `has:CHANGE` / `lacks:CHANGE`: the tree's identity says it has (lacks) that [`CHANGES`]
///   entry. A target without an identity (shader mode, older reports) satisfies neither;
/// - `ggml-version:V`: the tree's GGML_VERSION is V or starts with `V.` (`none`: the tree sets
///   none);
/// - `git:PREFIX`: the tree is a git checkout at a commit starting with PREFIX;
/// - anything else: a substring of the target outside its identity bracket (`shaders`, `ggml`,
///   a folder name: the meaning scope words had before identities).
pub fn scope_term_holds(term: &str, target: &str) -> bool {
    let (outside, identity) = split_identity(target);
    let field = |f: &str| identity_field(identity, f).unwrap_or_default();
    if let Some(c) = term.strip_prefix("has:") {
        field("has").contains(&c)
    } else if let Some(c) = term.strip_prefix("lacks:") {
        field("lacks").contains(&c)
    } else if let Some(v) = term.strip_prefix("ggml-version:") {
        field("ggml-version")
            .first()
            .is_some_and(|x| *x == v || x.starts_with(&format!("{v}.")))
    } else if let Some(p) = term.strip_prefix("git:") {
        field("git").first().is_some_and(|x| x.starts_with(p))
    } else {
        outside.contains(term)
    }
}

impl Known {
    /// True when the entry is about runs like the one whose report config is `config` on the
    /// Vulkan driver `driver` (a `driver:TEXT` term holds where the driver's name and version
    /// contain TEXT; the other terms: [`scope_term_holds`]).
    pub fn applies_to(&self, config: &str, driver: &str) -> bool {
        let target = run_target(config);
        self.scope.iter().all(|s| {
            s.split(',')
                .map(str::trim)
                .any(|alt| match alt.strip_prefix("driver:") {
                    Some(text) => driver.contains(text),
                    None => scope_term_holds(alt, &target),
                })
        })
    }

    /// True when every pattern occurs in the text.
    pub fn matches(&self, text: &str) -> bool {
        self.patterns.iter().all(|p| text.contains(p.as_str()))
    }

    /// True when the entry is about the member's run and every pattern occurs in the
    /// finding's key or in the member's fine signature.
    pub fn matches_member(&self, key: &FindingKey, m: &Member) -> bool {
        self.applies_to(&m.config, &m.driver) && self.matches(&format!("{key} || {}", m.signature))
    }

    /// True when the entry explains the whole finding: it matches with every member.
    pub fn explains(&self, d: &Distinct) -> bool {
        !d.members.is_empty() && d.members.iter().all(|m| self.matches_member(&d.key, m))
    }

    /// The kernel or kernel/path the entry is about: its first pattern (up to a ` | `, when
    /// the pattern is a whole key).
    pub fn kernel(&self) -> &str {
        self.patterns
            .first()
            .and_then(|p| p.split(" | ").next())
            .unwrap_or("")
    }

    /// True when a case ran on `path` (kernel/path) of the entry's kernel or kernel/path.
    pub fn covers(&self, path: &str) -> bool {
        let k = self.kernel();
        path == k || path.split('/').next() == Some(k)
    }
}

/// Parses the known-findings file: one entry a line, `PATTERN & PATTERN … :: explanation ::
/// fix`; `#` starts a comment line.
pub fn parse_known(text: &str) -> Result<Vec<Known>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parts: Vec<&str> = line.split(" :: ").collect();
        let [pat, explanation, fix] = parts[..] else {
            return Err(format!(
                "line {}: expected `PATTERN & PATTERN :: explanation :: fix`",
                n + 1
            ));
        };
        let (scope, patterns): (Vec<String>, Vec<String>) = pat
            .split(" & ")
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .partition(|p| p.starts_with('@'));
        if patterns.is_empty() {
            return Err(format!("line {}: no pattern", n + 1));
        }
        for alt in scope.iter().flat_map(|s| s[1..].split(',')) {
            let alt = alt.trim();
            if let Some(c) = alt
                .strip_prefix("has:")
                .or_else(|| alt.strip_prefix("lacks:"))
            {
                if !CHANGES.iter().any(|(name, ..)| *name == c) {
                    return Err(format!(
                        "line {}: unknown change {c:?} in @{alt} (known: {})",
                        n + 1,
                        CHANGES.iter().map(|c| c.0).collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
        out.push(Known {
            scope: scope.iter().map(|s| s[1..].to_string()).collect(),
            patterns,
            explanation: explanation.trim().into(),
            fix: fix.trim().into(),
        });
    }
    Ok(out)
}

/// Known entries that matched no shrunk group at all although cases ran on their kernel and
/// path: the bug no longer reproduces (fixed, or the entry's signature drifted). An entry that
/// explains part of a finding still reproduces: it is not stale.
pub fn stale<'a>(
    known: &'a [Known],
    found: &[Distinct],
    reports: &[VariantReport],
) -> Vec<&'a Known> {
    known
        .iter()
        .filter(|k| {
            let covered = reports
                .iter()
                .any(|r| k.applies_to(&r.config, &r.driver) && r.paths.iter().any(|p| k.covers(p)));
            covered
                && !found
                    .iter()
                    .any(|d| d.members.iter().any(|m| k.matches_member(&d.key, m)))
        })
        .collect()
}

/// The known-findings list this binary was built with (an installed binary, away from its
/// checkout, still knows the list of its release).
pub const BUILTIN_KNOWN: &str = include_str!("../../known-findings.txt");

/// The default known-findings file: `known-findings.txt` at the checkout's root.
pub fn default_known_file() -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/known-findings.txt"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_known_list_parses() {
        assert!(!parse_known(BUILTIN_KNOWN).unwrap().is_empty());
    }

    #[test]
    fn location_names_tails_by_alignment() {
        let s = Spread {
            ne: [40, 3, 1, 1],
            lo: [32, 0, 0, 0],
            hi: [39, 2, 0, 0],
            wrong: 5,
            ..Default::default()
        };
        assert_eq!(
            location(&s, ["rows", "columns", "b", "c"]),
            "rows tail from a multiple of 32, columns all"
        );
    }

    #[test]
    fn known_entries_parse_and_match() {
        let k =
            parse_known("# comment\nmul_mm_id/scalar & never written :: a bug :: PR 1\n").unwrap();
        assert_eq!(k.len(), 1);
        assert_eq!(k[0].kernel(), "mul_mm_id/scalar");
        assert!(k[0].covers("mul_mm_id/scalar") && !k[0].covers("mul_mm_id/cm2"));
        assert!(k[0].matches("mul_mm_id/scalar | never written | at x"));
        assert!(!k[0].matches("mul_mm_id/scalar | wrong value | at x"));
        assert!(parse_known("no separators").is_err());
    }

    /// `@driver:` scopes an entry by the Vulkan driver a run used, not by what it ran.
    #[test]
    fn driver_scoped_entries_apply_only_on_that_driver() {
        let k = parse_known("@ggml & @driver:Mesa 22.3 & crash after earlier cases :: x :: -\n")
            .unwrap();
        let run = "ggml /t/ggml [ggml-version 0.26.0; has ; lacks ] config default";
        assert!(k[0].applies_to(run, "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)"));
        assert!(!k[0].applies_to(run, "llvmpipe Mesa 25.0.7-1~bpo12+1 (LLVM 19.1.7)"));
        assert!(!k[0].applies_to(run, ""), "a report without a driver");
        assert!(
            !k[0].applies_to("", "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)"),
            "shader mode"
        );
        // Through a whole finding: the entry explains it on Mesa 22.3 only.
        let f = |driver: &str| {
            let mut r = report(
                "rwkv_wkv7_f32",
                vec![finding(AFTER_EARLIER_KIND, Reach::default())],
            );
            (r.config, r.driver) = (run.into(), driver.into());
            distinct(&[r], &k)[0].known.is_some()
        };
        assert!(f("llvmpipe Mesa 22.3.6 (LLVM 15.0.6)"));
        assert!(!f("NVIDIA 580.95.05"));
    }

    #[test]
    fn scoped_entries_apply_only_to_their_runs() {
        let k = parse_known(
            "@shaders,0.1.109 & wkv7 & NaN :: pinned :: fixed\n@ggml & wkv7 :: backend :: -\n",
        )
        .unwrap();
        assert_eq!(k[0].patterns, ["wkv7", "NaN"]);
        let (shaders, lp, old, new) = (
            "",
            "LP_NATIVE_VECTOR_WIDTH=128",
            "ggml /x/llama-cpp-sys-2-0.1.109/llama.cpp/ggml config cm2",
            "ggml .devbin/ggml-0.1.161 config cm2",
        );
        assert!(
            k[0].applies_to(shaders, "") && k[0].applies_to(lp, "") && k[0].applies_to(old, "")
        );
        assert!(!k[0].applies_to(new, ""));
        assert!(
            !k[1].applies_to(shaders, "") && k[1].applies_to(old, "") && k[1].applies_to(new, "")
        );
        // A backend run over the recent tree: the pinned entry neither matches nor goes stale.
        let mut r = report("a", vec![finding("NaN", Reach::default())]);
        r.config = new.into();
        let d = distinct(std::slice::from_ref(&r), &k);
        assert_eq!(
            d[0].known.as_ref().map(|k| k.explanation.as_str()),
            Some("backend")
        );
        r.findings.clear();
        let s = stale(&k, &[], std::slice::from_ref(&r));
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].explanation, "backend");
    }

    /// A temp folder holding a ggml tree's marker files: `fixed` picks the post-change text of
    /// every [`CHANGES`] entry, else the pre-change one.
    fn marker_tree(name: &str, fixed: bool) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("vkdiff-identity-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut files: BTreeMap<&str, String> = BTreeMap::new();
        for (_, _, paths, marker) in CHANGES {
            let text = match (*marker, fixed) {
                (Marker::Present(m), true) | (Marker::Absent(m), false) => m,
                (Marker::Present(_), false) | (Marker::Absent(_), true) => "",
                (Marker::Either { has, .. }, true) => has,
                (Marker::Either { lacks, .. }, false) => lacks,
            };
            let f = files.entry(paths[0]).or_default();
            f.push_str(text);
            f.push('\n');
        }
        for (path, text) in files {
            let p = dir.join("ggml").join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        std::fs::write(
            dir.join("ggml/CMakeLists.txt"),
            "set(GGML_VERSION_MAJOR 0)\nset(GGML_VERSION_MINOR 9)\nset(GGML_VERSION_PATCH 4)\n",
        )
        .unwrap();
        dir.join("ggml")
    }

    #[test]
    fn known_entries_scope_by_what_a_tree_is_not_by_its_folder_name() {
        let known = parse_known(
            "@ggml & @lacks:fa-kv-bounds & flash_attn/scalar :: partial tile :: PR 16160\n\
             @ggml & @has:acc-clamp & mul_mm :: clamp :: PR 15652\n\
             @ggml & @ggml-version:0.9 & wkv7 :: by version :: -\n\
             @ggml & @0.1.109 & wkv7 :: by folder name :: -\n",
        )
        .unwrap();
        // The same old revision in two folders of different names, and a fixed one.
        let (a, b, new) = (
            marker_tree("llama-cpp-sys-2-0.1.109", false),
            marker_tree("some-checkout", false),
            marker_tree("other", true),
        );
        let id = |d: &std::path::Path| tree_identity(d).unwrap();
        assert_eq!(id(&a), id(&b));
        assert!(
            id(&a).starts_with("ggml-version 0.9.4; has ; lacks mmid-split"),
            "{}",
            id(&a)
        );
        assert!(
            id(&new).contains("; has mmid-split dequant-batched-k"),
            "{}",
            id(&new)
        );
        assert!(id(&new).ends_with("; lacks "), "{}", id(&new));
        let target =
            |d: &std::path::Path| format!("ggml {} [{}] config scalar-fp16", d.display(), id(d));
        let verdicts = |t: &str| {
            known
                .iter()
                .map(|k| k.applies_to(t, ""))
                .collect::<Vec<_>>()
        };
        assert_eq!(verdicts(&target(&a))[..3], verdicts(&target(&b))[..3]);
        assert_eq!(verdicts(&target(&a))[..3], [true, false, true]);
        assert_eq!(verdicts(&target(&new))[..3], [false, true, true]);
        // A plain folder-name word keeps its old meaning: the path, never the identity.
        assert_eq!(
            (verdicts(&target(&a))[3], verdicts(&target(&b))[3]),
            (true, false)
        );
        // Without an identity (shader mode, an older report) has/lacks/version never hold.
        for t in ["", "ggml .devbin/ggml-0.1.109 config cm2"] {
            assert_eq!(verdicts(t)[..3], [false, false, false], "{t}");
        }
        assert!(parse_known("@lacks:no-such-change & wkv7 :: x :: y\n").is_err());
        for d in [a, b, new] {
            let _ = std::fs::remove_dir_all(d.parent().unwrap());
        }
    }

    #[test]
    fn ggml_version_comes_from_cmake() {
        let t = "project(\"ggml\")\nset(GGML_VERSION_MAJOR 0)\nset(GGML_VERSION_MINOR 26)\nset(GGML_VERSION_PATCH 0)\n";
        assert_eq!(ggml_version(t).as_deref(), Some("0.26.0"));
        assert_eq!(ggml_version("set(GGML_VERSION_MAJOR 0)\n"), None);
        let target = "ggml /t [ggml-version 0.26.0; has acc-clamp; lacks ] config cm2";
        assert!(scope_term_holds("ggml-version:0.26", target));
        assert!(scope_term_holds("ggml-version:0", target));
        assert!(!scope_term_holds("ggml-version:0.2", target));
        assert!(
            scope_term_holds("has:acc-clamp", target)
                && !scope_term_holds("lacks:acc-clamp", target)
        );
    }

    /// The pinned revision's identity, from a tree on disk (`VKDIFF_IDENTITY_TREES`: paths
    /// separated by `:`), must be the same under any folder name: run with
    /// `--ignored` after copying a tree elsewhere.
    #[test]
    #[ignore]
    fn identities_of_real_trees() {
        let trees = std::env::var("VKDIFF_IDENTITY_TREES").unwrap_or_default();
        for t in trees.split(':').filter(|t| !t.is_empty()) {
            println!("{t}: {:?}", tree_identity(std::path::Path::new(t)));
        }
    }

    fn moe(routing: crate::cases::mul_mat_vec_id::Routing) -> Case {
        use crate::cases::data::{Blocks, Dist};
        Case::MulMmId(crate::cases::mul_mm_id::MulMmIdCase {
            a_type: vkdiff_reference::DType::F32,
            b_type: vkdiff_reference::DType::F32,
            k: 4,
            m: 3,
            n_as: 5,
            n_used: 3,
            ne11: 1,
            n_tokens: 4,
            routing,
            b_row_pad: 0,
            b_batch_pad: 0,
            prec: vkdiff_gpu::runners::mul_mm::Prec::F32,
            a_blocks: Blocks::Quantized(Dist::Normal),
            b_dist: Dist::Normal,
            seed: 3,
            cm2: false,
            cm1: false,
        })
    }

    #[test]
    fn repeated_experts_are_forced_only_in_both_modes() {
        use crate::cases::mul_mat_vec_id::Routing;
        let caps = crate::cases::model_devices::lavapipe();
        let repeated = moe(Routing::AllToOne);
        // Shader mode (the host model plus the inputs) and backend mode (the inputs alone).
        assert_eq!(reach_of(&repeated, &caps).forced, [REPEATED]);
        assert_eq!(input_reach(&repeated).forced, [REPEATED]);
        let distinct = moe(Routing::Distinct);
        assert!(reach_of(&distinct, &caps).reachable() && input_reach(&distinct).reachable());
        // The same failure is then a forced-only finding, apart from a reachable one.
        let key = |c: &Case| {
            FindingKey::of(&Finding {
                signature: signature(c, &Outcome::Error(String::new()), &input_reach(c)),
                ..finding_of(c.clone(), "never written", input_reach(c))
            })
        };
        assert!(!key(&repeated).reachable && key(&distinct).reachable);
    }

    #[test]
    fn a_forced_group_may_shrink_into_a_reachable_case_not_back() {
        let forced = Reach {
            forced: vec!["x".into()],
        };
        let (f, r) = ("p | NaN | forced-only", "p | NaN | reachable");
        assert!(keeps_group(f, &forced, r, &Reach::default()));
        assert!(!keeps_group(r, &Reach::default(), f, &forced));
        assert!(!keeps_group(
            f,
            &forced,
            "p | wrong value | forced-only",
            &forced
        ));
    }

    #[test]
    fn repeated_experts_are_per_token() {
        assert!(!repeated_expert(&[0, 1, 1, 0], 2));
        assert!(repeated_expert(&[0, 1, 2, 2], 2));
    }

    fn wkv7(head_size: usize) -> Case {
        Case::Wkv7(crate::cases::wkv7::Wkv7Case {
            head_size,
            heads: 1,
            tokens_per_seq: 1,
            seqs: 1,
            dist: crate::cases::data::Dist::Normal,
            free_ab: false,
            seed: 0,
        })
    }

    fn finding_of(case: Case, kind: &str, reach: Reach) -> Finding {
        Finding {
            signature: Signature {
                path: "wkv7".into(),
                kind: kind.into(),
                location: "i0 all".into(),
                shape: facts(&case).join(", "),
                reach,
            },
            group: String::new(),
            cases: 3,
            case: case.clone(),
            original: case,
            shrink_steps: 0,
            shrink_cut: false,
            explanation: String::new(),
            repro: None,
        }
    }

    fn finding(kind: &str, reach: Reach) -> Finding {
        finding_of(wkv7(64), kind, reach)
    }

    fn report(variant: &str, findings: Vec<Finding>) -> VariantReport {
        VariantReport {
            kernel: "wkv7".into(),
            paths: vec!["wkv7".into()],
            variant: variant.into(),
            cases: 10,
            passed: 7,
            failed: 3,
            findings,
            ..Default::default()
        }
    }

    #[test]
    fn same_key_merges_across_variants_and_families_stay_apart() {
        let forced = Reach {
            forced: vec!["test".into()],
        };
        let reports = [
            report("a", vec![finding("wrong value", forced.clone())]),
            report(
                "b",
                vec![
                    finding("wrong value", forced),
                    finding("never written", Reach::default()),
                ],
            ),
        ];
        let known = parse_known("wkv7 & never written :: a known bug :: PR 1\nwkv7 & NaN :: gone :: -\nmul_mm & NaN :: not run :: -\nmul_mm_id/cm2 & NaN :: not run :: -\n").unwrap();
        let d = distinct(&reports, &known);
        assert_eq!(d.len(), 2, "{d:#?}");
        // Reachable first.
        assert!(d[0].reachable() && d[0].known.is_some());
        assert_eq!(d[1].variants().len(), 2);
        assert_eq!(d[1].cases(), 6);
        assert!(d[1].known.is_none());
        // The NaN entry did not reproduce although wkv7 ran; mul_mm and the cm2 path did not
        // run: not stale.
        let s = stale(&known, &d, &reports);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].explanation, "gone");
        // New forced-only findings only: exit status 4; an error adds 8.
        assert_eq!(exit_status(&d, &reports), 4);
        let mut errored = reports.to_vec();
        errored[0].missing = Some("no file".into());
        assert_eq!(exit_status(&d, &errored), 12);
        assert_eq!(exit_status(&d[..1], &reports[..0]), 0, "known only");
    }

    #[test]
    fn one_cause_in_several_kinds_and_sizes_is_one_finding_with_evidence() {
        // A race shows as nondeterministic, NaN or wrong values at whatever sizes shrinking
        // stopped: one finding, the kinds and size ranges listed inside it, the smallest case
        // its representative.
        let reports = [
            report(
                "a",
                vec![finding_of(wkv7(36), "nondeterministic", Reach::default())],
            ),
            report(
                "b",
                vec![
                    finding_of(wkv7(2), "NaN", Reach::default()),
                    finding_of(wkv7(76), "wrong value", Reach::default()),
                ],
            ),
        ];
        let d = distinct(&reports, &[]);
        assert_eq!(d.len(), 1, "{d:#?}");
        assert_eq!(d[0].members.len(), 3);
        assert_eq!(d[0].cases(), 9);
        assert_eq!(
            d[0].key.to_string(),
            "wkv7 | wrong or unstable values | no trigger | reachable"
        );
        let ev = d[0].evidence().join("\n");
        assert!(
            ev.contains("nondeterministic ×1") && ev.contains("NaN ×1"),
            "{ev}"
        );
        assert!(ev.contains("head size 2–76"), "{ev}");
        assert_eq!(d[0].representative.case, wkv7(2));
    }

    #[test]
    fn a_known_entry_must_explain_every_member() {
        let reports = [report(
            "a",
            vec![
                finding_of(wkv7(64), "NaN", Reach::default()),
                finding_of(wkv7(2), "wrong value", Reach::default()),
            ],
        )];
        let known = parse_known("wkv7 & head size 64 :: the S = 64 bug :: -\n").unwrap();
        let d = distinct(&reports, &known);
        assert_eq!(d.len(), 1);
        assert!(d[0].known.is_none(), "head size 2 is not explained");
        assert_eq!(d[0].partly_known.as_ref().map(|p| p.1), Some(1));
        // Its bug still reproduces in part: not stale.
        assert!(stale(&known, &d, &reports).is_empty());
        let whole = parse_known("wkv7 & | reachable :: any reachable wkv7 :: -\n").unwrap();
        assert!(distinct(&reports, &whole)[0].known.is_some());
    }

    /// 0.1.161's f16-accumulator clamp (F26): NaN and −∞ come out as −65504. That is its own
    /// symptom, apart from values that are merely inaccurate.
    #[test]
    fn finite_values_where_nan_or_inf_is_due_are_their_own_kind() {
        let flat = |i: usize| [i, 0, 0, 0];
        let kind = |got: &[f32], want: &[f64]| {
            let bounds = vec![1.0; got.len()];
            let verdict = crate::compare::compare(got, want, &bounds, flat, |_| "").unwrap();
            primary_kind(&Outcome::Fail { verdict })
        };
        let clamped = kind(
            &[-65504.0, -65504.0, 1.0],
            &[f64::NAN, f64::NEG_INFINITY, 1.0],
        );
        assert_eq!(clamped, "finite where ggml gives NaN or ±inf");
        assert_ne!(symptom(&clamped), symptom("wrong value"));
        // One inaccurate finite value among them: a value failure, not this kind.
        assert_eq!(kind(&[-65504.0, 5.0], &[f64::NAN, 1.0]), "wrong value");
    }

    #[test]
    fn a_crash_after_earlier_cases_is_its_own_kind_and_cause() {
        use crate::model::cases::CrashKind;
        let own = Outcome::crash(
            CrashKind::Died,
            "the worker process died inside this case (signal: 6)",
        );
        let after = Outcome::crash(
            CrashKind::AfterEarlier,
            format!(
                "{} (4 before it, the last: …); alone in a fresh worker it gave a pass",
                crate::worker::AFTER_EARLIER
            ),
        );
        assert_eq!(primary_kind(&own), "crash");
        assert_eq!(primary_kind(&after), AFTER_EARLIER_KIND);
        let (r, sym) = (Reach::default(), symptom(AFTER_EARLIER_KIND));
        let own = FindingKey::of(&finding_of(wkv7(5), "crash", r.clone()));
        let after = FindingKey::of(&finding_of(wkv7(5), AFTER_EARLIER_KIND, r));
        assert_ne!(own, after);
        assert_eq!(after.symptom, sym);
        // Its cause is the worker's history, not the case's head size.
        assert_eq!(own.cause, cause(&wkv7(5)));
        assert_eq!(
            after.cause,
            vec!["earlier cases in the same worker".to_string()]
        );
    }

    #[test]
    fn a_ragged_split_is_its_own_cause() {
        use vkdiff_gpu::runners::mul_mm::Prec;
        let mm = |k: usize| {
            Case::MulMm(crate::cases::mul_mm::MulMmCase {
                a_type: vkdiff_reference::DType::Q4_0,
                b_type: vkdiff_reference::DType::F32,
                k,
                m: 1,
                n: 9,
                ne02: 1,
                r2: 1,
                ne03: 1,
                b_row_pad: 0,
                b_batch_pad: 0,
                prec: Prec::Default,
                force_split_k: Some(2),
                a_blocks: crate::cases::data::Blocks::Quantized(crate::cases::data::Dist::Normal),
                b_dist: crate::cases::data::Dist::Normal,
                seed: 0,
                cm2: false,
                cm1: false,
                scale_log2: 0,
            })
        };
        assert_eq!(cause(&mm(96)), vec![RAGGED.to_string()]);
        assert_eq!(cause(&mm(64)), vec!["split".to_string()]);
    }

    #[test]
    fn a_host_converted_a_is_a_fact() {
        // The host dequantizes a quantized A to f16 when B is f16 or not dim01-contiguous
        // (no quant × f16 pipeline off cm2): the dequant shaders' bugs carry this fact.
        use vkdiff_reference::DType;
        let mm = |a, b, pad, cm2| {
            Case::MulMm(crate::cases::mul_mm::MulMmCase {
                a_type: a,
                b_type: b,
                k: 256,
                m: 7,
                n: 37,
                ne02: 1,
                r2: 1,
                ne03: 1,
                b_row_pad: pad,
                b_batch_pad: 0,
                prec: vkdiff_gpu::runners::mul_mm::Prec::Default,
                force_split_k: None,
                a_blocks: crate::cases::data::Blocks::Quantized(crate::cases::data::Dist::Normal),
                b_dist: crate::cases::data::Dist::Normal,
                seed: 0,
                cm2,
                cm1: false,
                scale_log2: 0,
            })
        };
        let has = |c: &Case| facts(c).iter().any(|f| f == "A converted to f16 first");
        assert!(has(&mm(DType::Iq3S, DType::F16, 0, false)));
        assert!(has(&mm(DType::Q3_K, DType::F32, 1, false)));
        assert!(!has(&mm(DType::Q3_K, DType::F32, 0, false)));
        assert!(!has(&mm(DType::Iq3S, DType::F16, 0, true)));
        assert!(!has(&mm(DType::F16, DType::F16, 0, false)));
    }
}
