//! `vkdiff diff A/report.jsonl B/report.jsonl`: the cases whose outcome differs between two
//! runs with the same seed (the same cases on any tree or device), e.g. two ggml revisions: a
//! regression or a fix between them, the first step of a bisection.
//!
//! It also reports precision regressions that pass in both runs. Where vkdiff does not know a
//! path's arithmetic, backend mode judges it by the loosest candidate model (f32 or f16
//! arithmetic, several splits), so a tree that moves a path from f32 to f16 arithmetic still
//! passes; its error/bound ratios grow by about the ratio of the unit roundoffs, 2⁻¹¹/2⁻²⁴ =
//! 8192. The same seed gives both runs the same inputs, so in the same arithmetic a case's
//! ratio changes only with the summation order (a different tile or split), which moves a
//! rounding-error sum by a small factor (its random-walk size by √ of a tile ratio, 2–4× in
//! practice). A variant is flagged when, over at least [`MIN_CASES`] cases passing in both
//! runs, the median or the 90th percentile of its ratios grew by [`FACTOR`] = 8× or more: 2³,
//! well above a reordering and three orders of magnitude below a change of format. Ratios under
//! [`FLOOR`] count as [`FLOOR`] (an exact result against a tiny one is no regression).
//!
//! A variant whose cases dispatch several modules of their own (a backend case records them:
//! f16 or f32 accumulators by the precision request, say) is also compared per module, so that
//! one module's regression is not averaged away by the cases of the others.

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

/// The cases whose outcome differs between `a` and `b`, then the variants whose precision
/// regressed ([`precision_moves`], one line each, outcome "passes, error/bound ×N"), plus how
/// many cases were compared.
pub fn diff(a: &Path, b: &Path) -> Result<(Vec<Change>, usize), String> {
    let (ra, rb) = (cases(a)?, cases(b)?);
    let (mut changes, common) = outcome_changes(&ra, &rb);
    changes.extend(precision_moves(&ra, &rb).iter().map(Moved::change));
    Ok((changes, common))
}

/// Cases whose outcome differs, and how many both runs have.
fn outcome_changes(
    ra: &BTreeMap<Key, CaseRecord>,
    rb: &BTreeMap<Key, CaseRecord>,
) -> (Vec<Change>, usize) {
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
    (changes, common)
}

/// The fewest cases passing in both runs a variant needs before its ratios are compared.
pub const MIN_CASES: usize = 8;
/// How much the median or 90th percentile ratio must grow to flag a variant (see the module
/// doc for the choice).
pub const FACTOR: f64 = 8.0;
/// Ratios below this count as this.
pub const FLOOR: f64 = 1e-6;
/// How many of the cases that moved most a flagged variant lists.
pub const SHOWN: usize = 3;

/// One variant whose error/bound ratios moved up markedly between the runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Moved {
    /// kernel, variant, configuration.
    pub key: (String, String, String),
    /// Cases passing in both runs.
    pub cases: usize,
    /// Median ratio in A and in B.
    pub median: (f64, f64),
    /// 90th-percentile ratio in A and in B.
    pub p90: (f64, f64),
    /// The cases that moved most: case, ratio in A, in B, and the tightest candidate model
    /// each run's result fits (empty where the report does not say).
    pub top: Vec<(String, f64, f64, String, String)>,
}

impl Moved {
    /// As a diff line.
    fn change(&self) -> Change {
        let (k, v, c) = self.key.clone();
        let growth = (self.median.1 / self.median.0).max(self.p90.1 / self.p90.0);
        Change {
            key: (
                k,
                v,
                c,
                format!(
                    "precision, {} cases passing in both: error/bound median {:.1e} → {:.1e}, p90 {:.1e} → {:.1e}",
                    self.cases, self.median.0, self.median.1, self.p90.0, self.p90.1
                ),
            ),
            a: "passes".into(),
            b: format!("passes, error/bound ×{growth:.0}"),
            detail: Some(
                self.top
                    .iter()
                    .map(|(case, ra, rb, fa, fb)| {
                        let fits = if fa.is_empty() && fb.is_empty() {
                            String::new()
                        } else {
                            format!(
                                " (fits {} → {})",
                                if fa.is_empty() { "?" } else { fa },
                                if fb.is_empty() { "?" } else { fb }
                            )
                        };
                        format!("{case}: ratio {ra:.2e} → {rb:.2e}{fits}\n")
                    })
                    .collect(),
            ),
        }
    }
}

/// The q-quantile of sorted values (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// Helper modules that many variants share (split-k reduces, flash attention's mask and sparse
/// passes, q8_1 quantizers, expert counts): not what tells a variant's cases apart.
const SHARED_HELPERS: &[&str] = &["fa_", "split_k_reduce", "quantize_q8_1", "count_experts"];

/// The modules a case dispatched less the shared helpers, joined with `+` (empty where the
/// report does not say).
fn own_modules(r: &CaseRecord) -> String {
    let mut own: Vec<&str> = r
        .pipelines
        .iter()
        .map(String::as_str)
        .filter(|p| !SHARED_HELPERS.iter().any(|h| p.starts_with(h)))
        .collect();
    own.sort_unstable();
    own.join("+")
}

/// The variants (kernel, variant, configuration) whose error/bound ratios over the cases that
/// pass in both runs moved up by [`FACTOR`] or more in median or 90th percentile, with at least
/// [`MIN_CASES`] such cases; then, for the variants whose cases ran more than one module of
/// their own in run A, the same per module (the variant shown as `variant [module]`).
pub fn precision_moves(
    ra: &BTreeMap<Key, CaseRecord>,
    rb: &BTreeMap<Key, CaseRecord>,
) -> Vec<Moved> {
    type Pair<'a> = (&'a str, f64, f64, &'a CaseRecord, &'a CaseRecord);
    // Per variant: its pairs in key order, and the same split by the modules of their own.
    type Groups<'a> = (Vec<Pair<'a>>, BTreeMap<String, Vec<Pair<'a>>>);
    let mut by_variant: BTreeMap<(String, String, String), Groups> = BTreeMap::new();
    for (key, x) in ra {
        let Some(y) = rb.get(key) else { continue };
        if let (Some(p), Some(q)) = (x.ratio, y.ratio) {
            if x.outcome == "pass" && y.outcome == "pass" && p.is_finite() && q.is_finite() {
                let pair = (key.3.as_str(), p.max(FLOOR), q.max(FLOOR), x, y);
                let (all, modules) = by_variant
                    .entry((key.0.clone(), key.1.clone(), key.2.clone()))
                    .or_default();
                all.push(pair);
                modules.entry(own_modules(x)).or_default().push(pair);
            }
        }
    }
    // The variants, then their modules where a variant has several (one would repeat it).
    let mut by_module = Vec::new();
    let mut groups = Vec::new();
    for ((k, v, c), (all, modules)) in by_variant {
        if modules.len() > 1 {
            by_module.extend(
                modules
                    .into_iter()
                    .map(|(m, pairs)| ((k.clone(), format!("{v} [{m}]"), c.clone()), pairs)),
            );
        }
        groups.push(((k, v, c), all));
    }
    let mut out = Vec::new();
    for (key, mut pairs) in groups.into_iter().chain(by_module) {
        if pairs.len() < MIN_CASES {
            continue;
        }
        let sorted = |f: fn(&Pair) -> f64| {
            let mut v: Vec<f64> = pairs.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let (sa, sb) = (sorted(|p| p.1), sorted(|p| p.2));
        let median = (quantile(&sa, 0.5), quantile(&sb, 0.5));
        let p90 = (quantile(&sa, 0.9), quantile(&sb, 0.9));
        if median.1 < FACTOR * median.0 && p90.1 < FACTOR * p90.0 {
            continue;
        }
        pairs.sort_by(|x, y| (y.2 / y.1).total_cmp(&(x.2 / x.1)));
        out.push(Moved {
            key,
            cases: pairs.len(),
            median,
            p90,
            top: pairs
                .iter()
                .take(SHOWN)
                .map(|(case, p, q, x, y)| {
                    let fits = |r: &CaseRecord| r.fits.clone().unwrap_or_default();
                    (case.to_string(), *p, *q, fits(x), fits(y))
                })
                .collect(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(variant: &str, config: &str, case: usize, ratio: f64, fits: &str) -> CaseRecord {
        CaseRecord {
            kernel: "flash_attn".into(),
            variant: variant.into(),
            config: config.into(),
            case: format!("case {case}"),
            outcome: "pass".into(),
            ratio: Some(ratio),
            gpu_ns: None,
            detail: None,
            reach: Default::default(),
            fits: (!fits.is_empty()).then(|| fits.to_string()),
            pipelines: Vec::new(),
            overridden: Vec::new(),
        }
    }

    fn write(dir: &Path, name: &str, records: &[CaseRecord]) -> std::path::PathBuf {
        let p = dir.join(name);
        let text: String = records
            .iter()
            .map(|r| serde_json::to_string(&Line::Case(r.clone())).unwrap() + "\n")
            .collect();
        std::fs::write(&p, text).unwrap();
        p
    }

    /// Two runs of the same cases over two trees: one variant moved from f32 to f16
    /// arithmetic (ratios ×~5000, judged by the loosest candidate, so still passing), one only
    /// reordered its sums (×2), one moved ×100 but ran too few cases to say.
    #[test]
    fn flags_a_variant_whose_ratios_moved_up_markedly() {
        let dir = std::env::temp_dir().join(format!("vkdiff-diff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (old, new) = (
            "ggml /a/llama-cpp-sys-2-0.1.109/llama.cpp/ggml [x] config scalar-fp16",
            "ggml /b/llama.cpp/ggml [y] config scalar-fp16",
        );
        let mut a = Vec::new();
        let mut b = Vec::new();
        for i in 0..12 {
            let r = 1e-4 * (1.0 + i as f64 / 4.0);
            a.push(record("fa_f16", old, i, r, "f32 scalar"));
            b.push(record(
                "fa_f16",
                new,
                i,
                (r * 5000.0).min(0.9),
                "f16 scalar",
            ));
            a.push(record("fa_q4_0", old, i, r, ""));
            b.push(record("fa_q4_0", new, i, 2.0 * r, ""));
        }
        for i in 0..5 {
            a.push(record("fa_q8_0", old, i, 1e-4, ""));
            b.push(record("fa_q8_0", new, i, 1e-2, ""));
        }
        let (pa, pb) = (write(&dir, "a.jsonl", &a), write(&dir, "b.jsonl", &b));
        let (ra, rb) = (cases(&pa).unwrap(), cases(&pb).unwrap());
        let moved = precision_moves(&ra, &rb);
        assert_eq!(moved.len(), 1, "{moved:?}");
        let m = &moved[0];
        assert_eq!(m.key.1, "fa_f16");
        assert_eq!(m.cases, 12);
        assert!(m.median.1 / m.median.0 > 1000.0);
        assert_eq!(m.top.len(), SHOWN);
        assert_eq!(
            (m.top[0].3.as_str(), m.top[0].4.as_str()),
            ("f32 scalar", "f16 scalar")
        );
        // The same runs the other way round: nothing regressed.
        assert!(precision_moves(&rb, &ra).is_empty());
        // `diff` lists it after the outcome changes (none here), so it fails the comparison.
        let (changes, common) = diff(&pa, &pb).unwrap();
        assert_eq!(common, 29);
        assert_eq!(changes.len(), 1);
        assert!(
            changes[0].b.starts_with("passes, error/bound ×"),
            "{:?}",
            changes[0]
        );
        assert!(changes[0]
            .detail
            .as_ref()
            .unwrap()
            .contains("(fits f32 scalar → f16 scalar)"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A variant whose cases run two modules (by their precision request), one of which moved
    /// to f16 arithmetic in B: its 8 cases are too few to move the variant's median or 90th
    /// percentile among 80 others, but the module's own line flags them.
    #[test]
    fn flags_one_module_of_a_variant_that_the_others_would_hide() {
        let dir = std::env::temp_dir().join(format!("vkdiff-diff-mod-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let with = |mut r: CaseRecord, modules: &[&str]| {
            r.pipelines = modules.iter().map(|m| m.to_string()).collect();
            r
        };
        let (old, new) = ("ggml /a [x] config default", "ggml /b [y] config default");
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for i in 0..88 {
            let r = 1e-3 * (1.0 + i as f64 / 100.0);
            let (module, moved) = if i < 80 {
                ("flash_attn_f32_f16_f16acc", r)
            } else {
                ("flash_attn_f32_f16", r * 300.0)
            };
            let m = [module, "fa_split_k_reduce"];
            a.push(with(record("fa_f16", old, i, r, ""), &m));
            b.push(with(record("fa_f16", new, i, moved, ""), &m));
        }
        let (pa, pb) = (write(&dir, "a.jsonl", &a), write(&dir, "b.jsonl", &b));
        let moved = precision_moves(&cases(&pa).unwrap(), &cases(&pb).unwrap());
        assert_eq!(moved.len(), 1, "{moved:?}");
        assert_eq!(moved[0].key.1, "fa_f16 [flash_attn_f32_f16]");
        assert_eq!(moved[0].cases, 8);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
