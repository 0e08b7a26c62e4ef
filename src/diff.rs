//! `vkdiff diff A/report.jsonl B/report.jsonl`: the cases whose outcome differs between two
//! runs with the same seed (the same cases on any tree or device), e.g. two ggml revisions: a
//! regression or a fix between them, the first step of a bisection.

use std::collections::BTreeMap;
use std::path::Path;

use crate::campaign::CaseRecord;
use crate::report::Line;

/// A case's identity across runs: kernel, variant, configuration (without the tree, so two
/// trees' runs line up) and the case itself.
type Key = (String, String, String, String);

/// The configuration name a record's label ends in (`ggml <tree> config cm2` → `cm2`).
fn config_name(label: &str) -> String {
    label
        .rsplit_once(" config ")
        .map_or(label, |(_, c)| c)
        .to_string()
}

/// The case records of a report.jsonl, by key (the first record of a key wins).
pub fn cases(path: &Path) -> Result<BTreeMap<Key, CaseRecord>, String> {
    let mut out = BTreeMap::new();
    for line in crate::report::read(path)? {
        if let Line::Case(c) = line {
            let key = (
                c.kernel.clone(),
                c.variant.clone(),
                config_name(&c.config),
                c.case.clone(),
            );
            out.entry(key).or_insert(c);
        }
    }
    Ok(out)
}

/// One differing case.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// kernel, variant, configuration, case.
    pub key: Key,
    /// Outcome in A ("absent" when A did not run it).
    pub a: String,
    /// Outcome in B.
    pub b: String,
    /// B's detail (failure, skip reason), else A's.
    pub detail: Option<String>,
}

/// The cases whose outcome differs between `a` and `b`, plus how many were compared.
pub fn diff(a: &Path, b: &Path) -> Result<(Vec<Change>, usize), String> {
    let (ra, rb) = (cases(a)?, cases(b)?);
    let mut changes = Vec::new();
    let mut common = 0;
    for key in ra.keys().chain(rb.keys().filter(|k| !ra.contains_key(*k))) {
        let (x, y) = (ra.get(key), rb.get(key));
        if x.is_some() && y.is_some() {
            common += 1;
        }
        let outcome =
            |r: Option<&CaseRecord>| r.map_or("absent".to_string(), |r| r.outcome.clone());
        if outcome(x) != outcome(y) {
            changes.push(Change {
                key: key.clone(),
                a: outcome(x),
                b: outcome(y),
                detail: y
                    .and_then(|r| r.detail.clone())
                    .or_else(|| x.and_then(|r| r.detail.clone())),
            });
        }
    }
    Ok((changes, common))
}
