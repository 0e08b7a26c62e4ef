//! What a kernel is. A kernel is one module under `src/model/cases/` that implements
//! [`KernelDef`] (its variants with its own parameter type, its case type and strategy, the
//! device features a variant needs, its bench rows) and `CaseModel` for its case type (how a
//! case is evaluated and judged, and the words its findings are described by). One line in the
//! `registry!` of `src/model/cases/mod.rs` adds it to the registry's `KERNELS`, from which
//! `vkdiff list`/`run`, the differential tests, the fuzz target, mutation testing, the bench and
//! the CLI's `--op` list are derived. This module knows no kernel and no case type: the
//! registry wraps each kernel's case type into its `Case` enum.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use proptest::strategy::BoxedStrategy;
use vkdiff_gpu::DeviceCaps;

use crate::model::work::BenchShapes;

/// What a kernel module implements (the registry turns it into a `Kernel` row).
pub trait KernelDef: 'static {
    /// What distinguishes this kernel's variants (types, path, accumulator…).
    type Params: fmt::Debug + Clone + PartialEq + Send + Sync + 'static;
    /// The kernel's case type (one variant of the registry's `Case`).
    type Case: fmt::Debug + Clone + 'static;
    /// Name used by `--op`, in reports and as the `op` tag of reproducers (the module's stem).
    const NAME: &'static str;
    /// Main shader file.
    const SHADER: &'static str;
    /// One line on what it computes.
    const SUMMARY: &'static str;
    /// One line on its error model (details beside the case model).
    const ERROR_MODEL: &'static str;
    /// Every variant upstream compiles and selects: (upstream's SPIR-V name, parameters).
    fn variants() -> Vec<(String, Self::Params)>;
    /// Case generator for a variant.
    fn strategy(params: &Self::Params) -> BoxedStrategy<Self::Case>;
    /// Why this device cannot run the variant (a missing feature), or None.
    fn requires(_params: &Self::Params, _caps: &DeviceCaps) -> Option<String> {
        None
    }
    /// Where the kernel's rows come in `vkdiff bench` (lower first).
    const BENCH_ORDER: u8 = u8::MAX;
    /// Realistic LLM-shape cases for `vkdiff bench`, each with its label (none by default: the
    /// kernel is then tested everywhere but not benched).
    fn bench_rows(_shapes: &BenchShapes) -> Vec<(String, Self::Case)> {
        Vec::new()
    }
    /// Why ggml's own host, running shader family `family`, does not run the variant (another
    /// path), or None.
    fn ggml_skip(_params: &Self::Params, _family: crate::model::config::Family) -> Option<String> {
        None
    }
}

/// A kernel's variant parameters, type-erased (each kernel reads back its own type).
#[derive(Clone)]
pub struct Params(Arc<dyn DynParams>);

impl Params {
    /// Erases `params`' type.
    pub fn new<T: Any + fmt::Debug + PartialEq + Send + Sync>(params: T) -> Params {
        Params(Arc::new(params))
    }
}

trait DynParams: Any + fmt::Debug + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn eq_dyn(&self, other: &dyn DynParams) -> bool;
}

impl<T: Any + fmt::Debug + PartialEq + Send + Sync> DynParams for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn eq_dyn(&self, other: &dyn DynParams) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
}

impl fmt::Debug for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for Params {
    fn eq(&self, other: &Self) -> bool {
        self.0.eq_dyn(&*other.0)
    }
}

/// One compiled variant of a kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// The kernel's name.
    pub kernel: &'static str,
    /// Upstream's SPIR-V name, e.g. `mul_mat_vec_q4_0_f32_f32`.
    pub name: String,
    /// Its parameters (the kernel's [`KernelDef::Params`]).
    pub params: Params,
}

impl Variant {
    /// The parameters as `T`, when they are of that type.
    pub fn params<T: Any>(&self) -> Option<&T> {
        self.params.0.as_any().downcast_ref::<T>()
    }
}

/// " of kernel(s) …" for an `--op` list, for messages (empty when every kernel is selected).
pub fn ops_scope(ops: &[String]) -> String {
    match ops {
        [] => String::new(),
        [one] => format!(" of kernel {one}"),
        many => format!(" of kernels {}", many.join(", ")),
    }
}

/// Err when `filter` (a `--variant`-style filter, see [`name_matches`]) matches none of
/// `names`: the message names the flag, each part that matched nothing, and the closest names.
/// `scope` says which names were searched (e.g. " of kernel wkv7").
pub fn check_filter(
    flag: &str,
    filter: Option<&str>,
    names: &[&str],
    scope: &str,
) -> Result<(), String> {
    let Some(filter) = filter else { return Ok(()) };
    if names.iter().any(|n| name_matches(Some(filter), n)) {
        return Ok(());
    }
    let parts: Vec<&str> = filter.split(',').collect();
    let closest: Vec<&str> = {
        // The nearest names to any part, best first, without repeats.
        let mut scored: Vec<(usize, usize, &str)> = Vec::new();
        for part in &parts {
            let part = part.strip_suffix('$').unwrap_or(part);
            scored.extend(
                closest_names(part, names.iter().copied())
                    .into_iter()
                    .map(|(d, n)| (d, n.len(), n)),
            );
        }
        scored.sort();
        let mut out: Vec<&str> = Vec::new();
        for (_, _, n) in scored {
            if !out.contains(&n) && out.len() < CLOSEST {
                out.push(n);
            }
        }
        out
    };
    let what = if parts.len() > 1 {
        "none of its parts matches"
    } else {
        "it matches"
    };
    let hint = if closest.is_empty() {
        "; no name is close (`vkdiff list` lists them)".to_string()
    } else {
        format!("; closest: {}", closest.join(", "))
    };
    Err(format!(
        "{flag} {filter:?} selects nothing: {what} no variant name{scope} ({} names){hint}",
        names.len()
    ))
}

/// How many close names a message lists.
const CLOSEST: usize = 5;

/// " (did you mean X?)" for the closest of `names` to `wanted`, or "".
pub fn did_you_mean<'a>(wanted: &str, names: impl IntoIterator<Item = &'a str>) -> String {
    let close: Vec<&str> = closest_names(wanted, names)
        .into_iter()
        .map(|(_, n)| n)
        .take(CLOSEST)
        .collect();
    if close.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", close.join(" or "))
    }
}

/// The names close to `wanted`, nearest first, with their distance: the fewest edits that turn
/// `wanted` into some part of the name (0 for a substring), kept when at most a third of
/// `wanted`'s length (at least 1) so an unrelated word gets no suggestions.
pub fn closest_names<'a>(
    wanted: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> Vec<(usize, &'a str)> {
    let limit = (wanted.chars().count() / 3).max(1);
    let mut close: Vec<(usize, &str)> = names
        .into_iter()
        .map(|n| (infix_distance(wanted, n), n))
        .filter(|(d, _)| *d <= limit)
        .collect();
    close.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(a.1.len().cmp(&b.1.len()))
            .then(a.1.cmp(b.1))
    });
    close.dedup();
    close
}

/// The edit distance (insertions, deletions, substitutions) from `pattern` to the closest
/// substring of `text` (Sellers' variant of Levenshtein: a match may start and end anywhere).
pub fn infix_distance(pattern: &str, text: &str) -> usize {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // row[j]: the distance of the pattern's first i chars to the best substring ending at j.
    let mut row = vec![0usize; t.len() + 1];
    for (i, pc) in p.iter().enumerate() {
        let mut next = vec![i + 1; t.len() + 1];
        for (j, tc) in t.iter().enumerate() {
            next[j + 1] = (row[j] + usize::from(pc != tc))
                .min(row[j + 1] + 1)
                .min(next[j] + 1);
        }
        row = next;
    }
    row.into_iter().min().unwrap_or(p.len())
}

/// Whether a variant name passes a `--variant` filter: it contains the filter, or one of its
/// comma-separated parts (no filter: every name).
pub fn name_matches(filter: Option<&str>, name: &str) -> bool {
    // A part ending in `$` must end the name: `f32_f16_f16$` picks the scalar flash-attention
    // variant and not its `_cm1` / `_cm2` siblings.
    filter.is_none_or(|f| {
        f.split(',').any(|f| match f.strip_suffix('$') {
            Some(end) => name.ends_with(end),
            None => name.contains(f),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::{infix_distance, name_matches};

    #[test]
    fn infix_distance_counts_edits_to_the_closest_part_of_the_name() {
        assert_eq!(infix_distance("q4_0", "matmul_q4_0_f32"), 0);
        assert_eq!(infix_distance("q4_O", "matmul_q4_0_f32"), 1);
        assert_eq!(infix_distance("wvk7", "rwkv_wkv7"), 2);
        assert_eq!(infix_distance("zzz", "abc"), 3);
        assert_eq!(infix_distance("", "abc"), 0);
    }

    #[test]
    fn a_variant_filter_takes_comma_separated_parts() {
        assert!(name_matches(None, "matmul_q8_0_f32"));
        assert!(name_matches(Some("q4_0,q8_0"), "matmul_q8_0_f32"));
        assert!(!name_matches(Some("q4_0,q4_1"), "matmul_q8_0_f32"));
        assert!(name_matches(Some("f16_f16$"), "flash_attn_f32_f16_f16"));
        assert!(!name_matches(
            Some("f16_f16$"),
            "flash_attn_f32_f16_f16_cm1"
        ));
    }
}
