//! The equivalence file: survivors that no input can kill, with their reasons.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::*;

/// A mutant known to be equivalent (or undetectable on the device), with the reason: one line
/// of the equivalence file,
///
/// ```text
/// wkv7.comp:68:30 `<` → `<=`: the extra element loaded is never read
/// ```
///
/// keyed by file, line, column, original and replacement text exactly as `vkdiff mutate`
/// prints a mutant. Blank lines and lines starting with `#` are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Equivalence {
    /// The file, relative to the shader tree.
    pub file: String,
    /// Line of the change.
    pub line: usize,
    /// Column of the change.
    pub column: usize,
    /// The text replaced.
    pub original: String,
    /// What replaces it.
    pub replacement: String,
    /// Why no case can (or this device cannot) tell it from the original.
    pub reason: String,
}

impl Equivalence {
    /// True when this entry names `m`.
    pub fn matches(&self, m: &Mutant) -> bool {
        self.file == m.file
            && self.line == m.line
            && self.column == m.column
            && self.original == m.original
            && self.replacement == m.replacement
    }

    /// The key as written in the file.
    pub fn key(&self) -> String {
        format!(
            "{}:{}:{} `{}` → `{}`",
            self.file, self.line, self.column, self.original, self.replacement
        )
    }
}

/// Parses an equivalence file (see [`Equivalence`]).
pub fn parse_equivalences(text: &str) -> Result<Vec<Equivalence>, String> {
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = || {
            format!(
                "line {}: expected `FILE:LINE:COL `from` → `to`: reason`, got {raw:?}",
                n + 1
            )
        };
        let (place, rest) = line.split_once(' ').ok_or_else(bad)?;
        let mut parts = place.rsplitn(3, ':');
        let column = parts.next().and_then(|c| c.parse().ok()).ok_or_else(bad)?;
        let line_no = parts.next().and_then(|c| c.parse().ok()).ok_or_else(bad)?;
        let file = parts.next().ok_or_else(bad)?.to_string();
        let rest = rest.trim_start().strip_prefix('`').ok_or_else(bad)?;
        let (original, rest) = rest.split_once("` → `").ok_or_else(bad)?;
        let (replacement, rest) = rest.split_once('`').ok_or_else(bad)?;
        let reason = rest.trim_start().strip_prefix(':').ok_or_else(bad)?.trim();
        if reason.is_empty() {
            return Err(format!("line {}: an equivalence needs a reason", n + 1));
        }
        out.push(Equivalence {
            file,
            line: line_no,
            column,
            original: original.to_string(),
            replacement: replacement.to_string(),
            reason: reason.to_string(),
        });
    }
    Ok(out)
}

/// The equivalence file that goes with a shader tree: `mutants-equivalent.txt` beside it.
pub fn default_equivalence_file(shaders: &Path) -> PathBuf {
    let dir = std::fs::canonicalize(shaders).unwrap_or_else(|_| shaders.to_path_buf());
    dir.parent()
        .unwrap_or(Path::new("."))
        .join("mutants-equivalent.txt")
}
