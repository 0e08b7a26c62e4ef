//! `vkdiff mutate`: how strong is the differential suite? Mutation testing of a shader tree.
//!
//! Every `.comp` file the selected variants compile (their main files and what those
//! `#include`) is scanned for small, plausible bugs, one per mutant:
//!
//! | operator | what changes |
//! |---|---|
//! | `relational` | `<` ↔ `<=`, `>` ↔ `>=`, `==` ↔ `!=` |
//! | `arithmetic` | binary `+` ↔ `-`, `*` ↔ `/`, `+=` ↔ `-=`, `*=` ↔ `/=`, `++` ↔ `--` (unary minus is left alone) |
//! | `constant` | an integer literal ± 1 (decimal or hex, suffix kept) |
//! | `barrier` | `barrier();` or `memoryBarrierShared();` dropped |
//! | `min_max` | `min(` ↔ `max(` |
//! | `swap_operands` | `a - b` → `b - a` for postfix operands whose precedence makes that exact; in an index `[…]`, the first factors of two adjacent `+` terms exchanged (`[r * D + d]` → `[d * D + r]`, a transposed index) |
//!
//! Comments, preprocessor lines (`#define`, `#include`, `#if`, …) and `layout(...)`
//! declarations are never mutated. The list is deterministic: files by name, then position.
//!
//! Each mutant is judged per kernel. The original tree is run first (the baseline, in this
//! process): it must pass every selected variant, and it records which shader variants (file +
//! defines) each kernel variant compiles. A mutant is then compiled for every such shader
//! variant whose sources include the mutated file:
//! - a compile error makes it **stillborn** (counted apart);
//! - SPIR-V identical to the original's for every variant of the kernel makes it **unchanged**
//!   (the mutation sits in a branch the defines exclude, or the optimiser erased it: it cannot
//!   be detected, so it is left out of the score);
//! - otherwise the changed variants run their campaign cases (same seed, same cases as the
//!   baseline) in a worker process with a per-case timeout, stopping at the first failing case:
//!   **killed** (a failure, crash, timeout, race, validation message or error) or, when every
//!   variant passes every case, **survived**.
//!
//! A survivor that no input can kill (an **equivalent** mutant, or one this device cannot tell
//! apart) is listed, with the reason, in an equivalence file (`mutants-equivalent.txt` beside
//! the shader tree; see [`Equivalence`]). Such a mutant still runs: listed and surviving it
//! counts as `equivalent` for the kernels it survives, out of the score (another kernel may
//! kill it: a file can be compiled with other defines there); listed and killed by every
//! kernel, the entry is wrong and the report says so. Entries that match no generated mutant
//! are reported as stale.
//!
//! Score per kernel = killed / (killed + survived), equivalents excluded. Results go to
//! `DIR/mutants.json` (rewritten after every mutant, so a run cut short keeps what it found).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use vkdiff_gpu::{DeviceCaps, Gpu, GpuError, ShaderTree, ShaderVariant};

use crate::campaign::{self, Settings};
use crate::cases::{Case, Outcome};
use crate::kernels::{self, Kernel, Variant, KERNELS};
use crate::worker::{Evaluator, InProcess, Worker};

// ---------------------------------------------------------------------------------------------
// Mutants
// ---------------------------------------------------------------------------------------------

/// The kinds of mutation (see the module table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    /// `<` ↔ `<=`, `>` ↔ `>=`, `==` ↔ `!=`.
    Relational,
    /// `+` ↔ `-`, `*` ↔ `/` and their compound and increment forms.
    Arithmetic,
    /// An integer literal ± 1.
    Constant,
    /// A dropped `barrier();` or `memoryBarrierShared();`.
    Barrier,
    /// `min` ↔ `max`.
    MinMax,
    /// Exchanged operands of a binary `-`, or of two `+` terms of an index.
    SwapOperands,
}

impl Operator {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Operator::Relational => "relational",
            Operator::Arithmetic => "arithmetic",
            Operator::Constant => "constant",
            Operator::Barrier => "barrier",
            Operator::MinMax => "min_max",
            Operator::SwapOperands => "swap_operands",
        }
    }
}

/// One mutation: in `file`, the text `original` at byte range `start..end` (line and column
/// 1-based, the column counted in characters) becomes `replacement`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mutant {
    /// The file, relative to the shader tree.
    pub file: String,
    /// Line of the change.
    pub line: usize,
    /// Column of the change.
    pub column: usize,
    /// What kind of mutation.
    pub operator: Operator,
    /// The text replaced.
    pub original: String,
    /// What replaces it (empty: deleted).
    pub replacement: String,
    /// Byte offset of `original` in the file.
    pub start: usize,
    /// Byte offset just past `original`.
    pub end: usize,
}

impl Mutant {
    /// The mutated source.
    pub fn apply(&self, source: &str) -> String {
        format!(
            "{}{}{}",
            &source[..self.start],
            self.replacement,
            &source[self.end..]
        )
    }

    /// The changed line before and after, trimmed.
    pub fn lines(&self, source: &str) -> (String, String) {
        let line_start = source[..self.start].rfind('\n').map_or(0, |p| p + 1);
        let line_end = source[self.end..]
            .find('\n')
            .map_or(source.len(), |p| self.end + p);
        let before = source[line_start..line_end].trim().to_string();
        let after = format!(
            "{}{}{}",
            &source[line_start..self.start],
            self.replacement,
            &source[self.end..line_end]
        )
        .trim()
        .to_string();
        (before, after)
    }

    /// One line: `file:line: `before` → `after``.
    pub fn describe(&self, source: &str) -> String {
        let (before, after) = self.lines(source);
        format!("{}:{}: `{before}` → `{after}`", self.file, self.line)
    }
}

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ident,
    Int,
    Float,
    Op,
}

#[derive(Debug, Clone, Copy)]
struct Tok<'s> {
    kind: Kind,
    text: &'s str,
    start: usize,
    end: usize,
    line: usize,
}

/// Multi-character operators, longest first.
const OPS: [&str; 21] = [
    "<<=", ">>=", "<=", ">=", "==", "!=", "&&", "||", "^^", "++", "--", "+=", "-=", "*=", "/=",
    "%=", "&=", "|=", "^=", "<<", ">>",
];

/// Words after which `-` or `+` is unary.
const KEYWORDS: [&str; 4] = ["return", "case", "else", "do"];

/// GLSL tokens outside comments and preprocessor lines.
fn lex(src: &str) -> Vec<Tok<'_>> {
    let b = src.as_bytes();
    let (mut i, mut line, mut line_start) = (0usize, 1usize, true);
    let mut toks = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            line_start = true;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'#' && line_start {
            // A preprocessor line, with its backslash continuations.
            while i < b.len() && b[i] != b'\n' {
                if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
                    line += 1;
                    i += 2;
                } else {
                    i += 1;
                }
            }
            continue;
        }
        line_start = false;
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if b[i..].starts_with(b"/*") {
            let end = src[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2);
            line += src[i..end].matches('\n').count();
            i = end;
            continue;
        }
        let start = i;
        let kind = if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            Kind::Ident
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let hex = b[i..].starts_with(b"0x") || b[i..].starts_with(b"0X");
            i += 1;
            while i < b.len()
                && (b[i].is_ascii_alphanumeric()
                    || b[i] == b'.'
                    || (!hex && matches!(b[i], b'+' | b'-') && matches!(b[i - 1], b'e' | b'E')))
            {
                i += 1;
            }
            if int_value(&src[start..i]).is_some() {
                Kind::Int
            } else {
                Kind::Float
            }
        } else if !c.is_ascii() {
            i += 1;
            continue;
        } else {
            i += OPS
                .iter()
                .find(|op| b[i..].starts_with(op.as_bytes()))
                .map_or(1, |op| op.len());
            Kind::Op
        };
        toks.push(Tok {
            kind,
            text: &src[start..i],
            start,
            end: i,
            line,
        });
    }
    toks
}

/// An integer literal's value, base (10 or 16) and suffix; None for other numbers and for
/// octal literals.
fn int_value(text: &str) -> Option<(u64, u32, &str)> {
    let (body, suffix) = match text.strip_suffix(['u', 'U']) {
        Some(b) => (b, &text[b.len()..]),
        None => (text, ""),
    };
    if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).ok().map(|v| (v, 16, suffix));
    }
    if body.is_empty() || !body.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if body.len() > 1 && body.starts_with('0') {
        return None;
    }
    body.parse().ok().map(|v| (v, 10, suffix))
}

/// For every bracket token, the index of its partner (None when unbalanced).
fn partners(toks: &[Tok]) -> Vec<Option<usize>> {
    let mut partner = vec![None; toks.len()];
    let mut stack: Vec<usize> = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        match t.text {
            "(" | "[" | "{" => stack.push(k),
            ")" | "]" | "}" => {
                let open = match t.text {
                    ")" => "(",
                    "]" => "[",
                    _ => "{",
                };
                if stack.last().is_some_and(|&o| toks[o].text == open) {
                    let o = stack.pop().unwrap();
                    partner[o] = Some(k);
                    partner[k] = Some(o);
                }
            }
            _ => {}
        }
    }
    partner
}

/// Tokens of `layout(...) ...;` declarations, which are never mutated.
fn layout_tokens(toks: &[Tok]) -> Vec<bool> {
    let mut skip = vec![false; toks.len()];
    let mut k = 0;
    while k < toks.len() {
        let at_statement = k == 0 || matches!(toks[k - 1].text, ";" | "}" | "{");
        if toks[k].text == "layout" && at_statement {
            let mut depth = 0i32;
            while k < toks.len() {
                skip[k] = true;
                match toks[k].text {
                    "(" | "{" => depth += 1,
                    ")" | "}" => depth -= 1,
                    ";" if depth <= 0 => break,
                    _ => {}
                }
                k += 1;
            }
        }
        k += 1;
    }
    skip
}

fn is_operand_word(t: &Tok) -> bool {
    match t.kind {
        Kind::Ident => !KEYWORDS.contains(&t.text),
        Kind::Int | Kind::Float => true,
        Kind::Op => false,
    }
}

/// True when the `+` or `-` at `k` is binary (it follows an operand).
fn is_binary(toks: &[Tok], k: usize) -> bool {
    k > 0 && (is_operand_word(&toks[k - 1]) || matches!(toks[k - 1].text, ")" | "]"))
}

/// Start of the postfix expression (name, literal, call, group, indexing, member access) that
/// ends at token `j`.
fn postfix_start(toks: &[Tok], partner: &[Option<usize>], mut j: usize) -> Option<usize> {
    loop {
        let t = &toks[j];
        if matches!(t.text, ")" | "]") {
            let open = partner[j]?;
            if t.text == "]" {
                j = open.checked_sub(1)?;
                continue;
            }
            if open > 0 && toks[open - 1].kind == Kind::Ident && is_operand_word(&toks[open - 1]) {
                j = open - 1; // a call: continue at its name
            } else {
                return Some(open); // a parenthesised group
            }
        } else if !is_operand_word(t) {
            return None;
        }
        // A name, literal or call name: part of a member access when a dot precedes it.
        if j >= 2 && toks[j - 1].text == "." {
            j -= 2;
            continue;
        }
        return Some(j);
    }
}

/// End (inclusive) of the postfix expression that starts at token `j`.
fn postfix_end(toks: &[Tok], partner: &[Option<usize>], j: usize) -> Option<usize> {
    let t = toks.get(j)?;
    let mut end = if t.text == "(" {
        partner[j]?
    } else if is_operand_word(t) {
        if t.kind == Kind::Ident && toks.get(j + 1).is_some_and(|n| n.text == "(") {
            partner[j + 1]?
        } else {
            j
        }
    } else {
        return None;
    };
    loop {
        match toks.get(end + 1).map(|t| t.text) {
            Some("[") => end = partner[end + 1]?,
            Some(".") if toks.get(end + 2).is_some_and(|t| t.kind == Kind::Ident) => end += 2,
            _ => return Some(end),
        }
    }
}

/// Tokens that may precede the left operand of a binary `-` for `a - b` → `b - a` to swap
/// exactly the two operands (all bind more loosely than `-`, none is additive).
const BEFORE_LEFT: [&str; 35] = [
    "(", ",", "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "[", "?", ":",
    "{", ";", "<", "<=", ">", ">=", "==", "!=", "&&", "||", "^^", "&", "|", "^", "<<", ">>",
    "return", "}", "else",
];
/// Tokens that may follow the right operand (looser than `-`, or additive: `-` is
/// left-associative).
const AFTER_RIGHT: [&str; 24] = [
    ")", ",", ";", "]", "?", ":", "<", "<=", ">", ">=", "==", "!=", "&&", "||", "^^", "&", "|",
    "^", "<<", ">>", "+", "-", "}", "=",
];

struct Gen<'s> {
    file: &'s str,
    src: &'s str,
    out: Vec<Mutant>,
}

impl Gen<'_> {
    fn push(&mut self, operator: Operator, start: usize, end: usize, replacement: String) {
        let original = &self.src[start..end];
        if original == replacement {
            return;
        }
        let line_start = self.src[..start].rfind('\n').map_or(0, |p| p + 1);
        self.out.push(Mutant {
            file: self.file.to_string(),
            line: self.src[..start].matches('\n').count() + 1,
            column: self.src[line_start..start].chars().count() + 1,
            operator,
            original: original.to_string(),
            replacement,
            start,
            end,
        });
    }

    /// `a - b` → `b - a` for the binary minus at `k`.
    fn swap_minus(&mut self, toks: &[Tok], partner: &[Option<usize>], k: usize) {
        let Some(ls) = postfix_start(toks, partner, k - 1) else {
            return;
        };
        let Some(re) = postfix_end(toks, partner, k + 1) else {
            return;
        };
        let before_ok = ls == 0 || BEFORE_LEFT.contains(&toks[ls - 1].text);
        let after_ok = toks
            .get(re + 1)
            .is_some_and(|t| AFTER_RIGHT.contains(&t.text));
        if !(before_ok && after_ok) || toks[ls].line != toks[re].line {
            return;
        }
        let (l, r) = (
            &self.src[toks[ls].start..toks[k - 1].end],
            &self.src[toks[k + 1].start..toks[re].end],
        );
        let mid = &self.src[toks[k - 1].end..toks[k + 1].start];
        self.push(
            Operator::SwapOperands,
            toks[ls].start,
            toks[re].end,
            format!("{r}{mid}{l}"),
        );
    }

    /// In the index `[...]` opening at `k`: for two adjacent `+` terms (products of postfix
    /// factors), one of which has several factors, exchange their first factors.
    fn swap_index_terms(&mut self, toks: &[Tok], partner: &[Option<usize>], k: usize) {
        let Some(close) = partner[k] else { return };
        // terms[i] = the (first, last) token of each factor of term i.
        let mut terms: Vec<Vec<(usize, usize)>> = vec![Vec::new()];
        let mut j = k + 1;
        while j < close {
            let Some(end) = postfix_end(toks, partner, j) else {
                return;
            };
            if end >= close {
                return;
            }
            terms.last_mut().unwrap().push((j, end));
            match toks[end + 1].text {
                "*" => {}
                "+" => terms.push(Vec::new()),
                "]" if end + 1 == close => break,
                _ => return,
            }
            j = end + 2;
        }
        if terms.iter().any(Vec::is_empty) {
            return;
        }
        for pair in terms.windows(2) {
            if pair[0].len() + pair[1].len() < 3 {
                continue; // a + b → b + a is the same sum
            }
            let (a, b) = (pair[0][0], pair[1][0]);
            if toks[a.0].line != toks[b.1].line {
                continue;
            }
            let (ta, tb) = (
                &self.src[toks[a.0].start..toks[a.1].end],
                &self.src[toks[b.0].start..toks[b.1].end],
            );
            if ta == tb {
                continue;
            }
            let mid = &self.src[toks[a.1].end..toks[b.0].start];
            self.push(
                Operator::SwapOperands,
                toks[a.0].start,
                toks[b.1].end,
                format!("{tb}{mid}{ta}"),
            );
        }
    }
}

/// Every mutant of one file, in source order.
pub fn generate(file: &str, src: &str) -> Vec<Mutant> {
    let toks = lex(src);
    let partner = partners(&toks);
    let skip = layout_tokens(&toks);
    let mut g = Gen {
        file,
        src,
        out: Vec::new(),
    };
    for k in 0..toks.len() {
        if skip[k] {
            continue;
        }
        let t = toks[k];
        let next = |n: usize| toks.get(k + n).map(|t| t.text);
        match t.kind {
            Kind::Op => {
                let relational = match t.text {
                    "<" => Some("<="),
                    "<=" => Some("<"),
                    ">" => Some(">="),
                    ">=" => Some(">"),
                    "==" => Some("!="),
                    "!=" => Some("=="),
                    _ => None,
                };
                if let Some(r) = relational {
                    g.push(Operator::Relational, t.start, t.end, r.into());
                }
                let arithmetic = match t.text {
                    "+" if is_binary(&toks, k) => Some("-"),
                    "-" if is_binary(&toks, k) => Some("+"),
                    "*" => Some("/"),
                    "/" => Some("*"),
                    "+=" => Some("-="),
                    "-=" => Some("+="),
                    "*=" => Some("/="),
                    "/=" => Some("*="),
                    "++" => Some("--"),
                    "--" => Some("++"),
                    _ => None,
                };
                if let Some(r) = arithmetic {
                    g.push(Operator::Arithmetic, t.start, t.end, r.into());
                }
                if t.text == "-" && is_binary(&toks, k) {
                    g.swap_minus(&toks, &partner, k);
                }
                if t.text == "[" && k > 0 && is_binary(&toks, k) {
                    g.swap_index_terms(&toks, &partner, k);
                }
            }
            Kind::Int => {
                let (value, base, suffix) = int_value(t.text).expect("lexed as an integer");
                let upper = t.text.bytes().any(|c| c.is_ascii_uppercase() && c != b'X');
                let show = |v: u64| match (base, upper) {
                    (16, true) => format!("{}{v:X}{suffix}", &t.text[..2]),
                    (16, false) => format!("{}{v:x}{suffix}", &t.text[..2]),
                    _ => format!("{v}{suffix}"),
                };
                g.push(Operator::Constant, t.start, t.end, show(value + 1));
                if value > 0 {
                    g.push(Operator::Constant, t.start, t.end, show(value - 1));
                }
            }
            Kind::Ident => match t.text {
                "barrier" | "memoryBarrierShared"
                    if next(1) == Some("(") && next(2) == Some(")") && next(3) == Some(";") =>
                {
                    g.push(Operator::Barrier, t.start, toks[k + 3].end, String::new());
                }
                "min" | "max" if next(1) == Some("(") => {
                    let other = if t.text == "min" { "max" } else { "min" };
                    g.push(Operator::MinMax, t.start, t.end, other.into());
                }
                _ => {}
            },
            Kind::Float => {}
        }
    }
    g.out
}

/// The file and every file it includes, transitively (`#include "name"`, resolved in the tree
/// root as the compiler does for a flat tree), whatever the preprocessor conditions.
pub fn include_closure(dir: &Path, file: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![file.to_string()];
    while let Some(f) = todo.pop() {
        if !seen.insert(f.clone()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(dir.join(&f)) else {
            continue;
        };
        for line in text.lines() {
            let line = line.trim_start();
            let Some(rest) = line.strip_prefix('#') else {
                continue;
            };
            if let Some(name) = rest.trim_start().strip_prefix("include") {
                if let Some(name) = name
                    .trim()
                    .strip_prefix('"')
                    .and_then(|n| n.split('"').next())
                {
                    todo.push(name.to_string());
                }
            }
        }
    }
    seen
}

// ---------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------

/// What `vkdiff mutate` does.
#[derive(Debug, Clone)]
pub struct Options {
    /// The tree to mutate.
    pub shaders: PathBuf,
    /// The device (index or name substring).
    pub device: Option<String>,
    /// Only these kernels (empty: all).
    pub ops: Vec<String>,
    /// Only variants whose name contains this.
    pub variant: Option<String>,
    /// Only files whose name contains one of these (empty: all); `name:LINE` keeps only that
    /// line's mutants (to re-judge survivors, say with more cases).
    pub files: Vec<String>,
    /// Cases per variant.
    pub cases: u32,
    /// At most this many mutants (a seeded sample, spread over the files).
    pub budget: Option<usize>,
    /// Start no mutant after this long.
    pub time: Option<Duration>,
    /// Seed of the cases (as `vkdiff run --seed`) and of the sample.
    pub seed: u64,
    /// Output folder (mutants.json; a scratch folder while running).
    pub out: PathBuf,
    /// Per-case time limit (default: 10 × the slowest baseline case, at least 10 s).
    pub case_timeout: Option<Duration>,
    /// Run each kernel twice and require identical bits, as `vkdiff run` does.
    pub repeat: bool,
    /// Mutants known to be equivalent, with reasons.
    pub equivalent: Vec<Equivalence>,
}

/// How one kernel judged one mutant.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Verdict {
    /// A case of `variant` failed (or crashed, timed out, raced, errored).
    Killed {
        /// The variant that caught it.
        variant: String,
        /// The failing case.
        case: String,
        /// What went wrong, first line.
        how: String,
        /// Cases of that variant run up to and including the failing one.
        cases_run: u32,
    },
    /// Every changed variant passed every case.
    Survived {
        /// The variants whose SPIR-V changed (all ran their cases).
        variants: Vec<String>,
        /// Cases run in all.
        cases: u32,
    },
    /// The mutant does not compile.
    Stillborn {
        /// The compiler's first error line.
        message: String,
    },
    /// Every variant's SPIR-V is identical to the original's: undetectable by construction.
    Unchanged,
}

/// A mutant and its verdicts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MutantResult {
    /// The mutation.
    #[serde(flatten)]
    pub mutant: Mutant,
    /// The changed line, before.
    pub before: String,
    /// The changed line, after.
    pub after: String,
    /// Per kernel whose variants compile the file.
    pub verdicts: BTreeMap<String, Verdict>,
    /// The equivalence file's reason, when it lists this mutant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalent: Option<String>,
    /// Wall time spent on it.
    pub seconds: f64,
}

/// A kernel's totals.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KernelScore {
    /// Kernel name.
    pub kernel: String,
    /// Variants that took part (their baseline passed).
    pub variants: usize,
    /// Mutants of files its variants compile.
    pub mutants: u32,
    /// Caught.
    pub killed: u32,
    /// Not caught, and not listed as equivalent.
    pub survived: u32,
    /// Not caught, listed as equivalent (out of the score).
    #[serde(default)]
    pub equivalent: u32,
    /// Caught although listed as equivalent, and no kernel let it live: the entry is wrong.
    #[serde(default)]
    pub killed_equivalent: u32,
    /// Did not compile.
    pub stillborn: u32,
    /// Same SPIR-V as the original.
    pub unchanged: u32,
    /// killed / (killed + survived), equivalents excluded.
    pub score: Option<f64>,
}

/// A variant left out, and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Excluded {
    /// The variant.
    pub variant: String,
    /// Why (its baseline failed, was skipped, or is missing).
    pub reason: String,
}

/// Everything `vkdiff mutate` found; `DIR/mutants.json` holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MutationReport {
    /// The tree mutated.
    pub shaders: String,
    /// The device.
    pub device: String,
    /// Seed of cases and sample.
    pub seed: u64,
    /// Cases per variant.
    pub cases: u32,
    /// Mutants generated from the files.
    pub generated: usize,
    /// Mutants generated, per file.
    pub generated_per_file: BTreeMap<String, usize>,
    /// Mutants chosen (all, or the --budget sample).
    pub sampled: usize,
    /// Mutants judged (fewer when --time ran out).
    pub judged: usize,
    /// Per-case timeout in seconds.
    pub case_timeout: f64,
    /// Variants left out.
    pub excluded: Vec<Excluded>,
    /// Equivalence entries for the files scanned that match no generated mutant (the source
    /// moved on: re-key or drop them).
    #[serde(default)]
    pub stale_equivalences: Vec<String>,
    /// Totals per kernel.
    pub kernels: Vec<KernelScore>,
    /// Each judged mutant, in file and line order.
    pub mutants: Vec<MutantResult>,
    /// Wall time.
    pub seconds: f64,
}

/// One kernel variant that takes part: its baseline passed.
struct Target {
    kernel: &'static Kernel,
    variant: Variant,
    /// The shader variants it compiled in the baseline.
    shaders: Vec<ShaderVariant>,
}

/// Times each case (for the default timeout).
struct Timed<'a> {
    inner: InProcess<'a>,
    slowest: Duration,
}

impl Evaluator for Timed<'_> {
    fn evaluate(&mut self, case: &Case) -> Outcome {
        let t = Instant::now();
        let o = self.inner.evaluate(case);
        self.slowest = self.slowest.max(t.elapsed());
        o
    }
    fn caps(&self) -> &DeviceCaps {
        self.inner.caps()
    }
    fn shaders(&self) -> String {
        self.inner.shaders()
    }
}

/// Passes cases to the worker until one kills the mutant, then skips the rest.
struct UntilKilled<'a> {
    inner: &'a mut Worker,
    ran: u32,
    kill: Option<(String, String, u32)>,
}

impl Evaluator for UntilKilled<'_> {
    fn evaluate(&mut self, case: &Case) -> Outcome {
        if self.kill.is_some() {
            return Outcome::Skip("mutant already killed".into());
        }
        self.ran += 1;
        let o = self.inner.evaluate(case);
        if o.is_failure() || matches!(o, Outcome::Error(_) | Outcome::DeviceLost(_)) {
            let how = o.explain().lines().next().unwrap_or("").to_string();
            let how = match &o {
                Outcome::Fail { .. } => format!("fail: {how}"),
                _ => how,
            };
            self.kill = Some((case.to_string(), how, self.ran));
        }
        o
    }
    fn caps(&self) -> &DeviceCaps {
        self.inner.caps()
    }
    fn shaders(&self) -> String {
        self.inner.shaders()
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let path = entry.path();
        if path.is_dir() {
            copy_tree(&path, &to.join(entry.file_name()))?;
        } else {
            std::fs::copy(&path, to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// The seeded run order: each file's mutants shuffled, then taken from the files in turn, so a
/// budget or a time limit still covers every file.
fn run_order(mutants: &[Mutant], seed: u64) -> Vec<usize> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut per_file: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, m) in mutants.iter().enumerate() {
        per_file.entry(&m.file).or_default().push(i);
    }
    let mut lists: Vec<Vec<usize>> = per_file
        .into_values()
        .map(|mut v| {
            v.shuffle(&mut rng);
            v.reverse(); // popped from the end
            v
        })
        .collect();
    let mut order = Vec::with_capacity(mutants.len());
    while order.len() < mutants.len() {
        for l in lists.iter_mut() {
            if let Some(i) = l.pop() {
                order.push(i);
            }
        }
    }
    order
}

/// The file part of a `--file` filter (`name` or `name:LINE`).
fn file_part(filter: &str) -> &str {
    match filter.rsplit_once(':') {
        Some((f, line)) if line.parse::<usize>().is_ok() => f,
        _ => filter,
    }
}

/// True when `m` passes the `--file` filters (none: all).
fn wanted(filters: &[String], m: &Mutant) -> bool {
    filters.is_empty()
        || filters.iter().any(|s| {
            let line = s
                .rsplit_once(':')
                .and_then(|(_, l)| l.parse::<usize>().ok());
            m.file.contains(file_part(s)) && line.is_none_or(|l| l == m.line)
        })
}

/// The compiler's first error line, without the tree's path.
fn first_error(message: &str) -> String {
    let line = message
        .lines()
        .find(|l| l.contains(": error:"))
        .or_else(|| message.lines().find(|l| l.contains("error")))
        .unwrap_or("")
        .trim();
    // "/path/to/tree/file.comp:15: error: ..." → "file.comp:15: error: ...".
    match line.find(": error:") {
        Some(at) => {
            let place = &line[..at];
            let short = place.rsplit('/').next().unwrap_or(place);
            format!("{short}{}", &line[at..])
        }
        None => line.to_string(),
    }
}

/// Runs every selected variant on the original tree (in this process): those that pass take
/// part, with the shader variants they compiled. Returns the device name, the participants,
/// the variants left out, and the slowest case.
#[allow(clippy::type_complexity)]
fn baseline(
    opts: &Options,
    selected: &[(&'static Kernel, Variant)],
    settings: &Settings,
) -> Result<(String, Vec<Target>, Vec<Excluded>, Duration), String> {
    let mut gpu = Gpu::open(opts.device.as_deref()).map_err(|e| e.to_string())?;
    let device = gpu.caps().name.clone();
    println!(
        "baseline: {} variants × {} cases on {device}, shaders {}",
        selected.len(),
        opts.cases,
        opts.shaders.display()
    );
    let mut targets = Vec::new();
    let mut excluded = Vec::new();
    let mut slowest = Duration::ZERO;
    for (kernel, variant) in selected {
        let mut tree = ShaderTree::new(&opts.shaders);
        let mut timed = Timed {
            inner: InProcess {
                gpu: &mut gpu,
                tree: &mut tree,
                repeat: opts.repeat,
            },
            slowest: Duration::ZERO,
        };
        let r = campaign::run_variant(&mut timed, kernel, variant, settings);
        slowest = slowest.max(timed.slowest);
        let reason = if let Some(m) = &r.missing {
            Some(format!("missing: {m}"))
        } else if !r.ok() {
            Some(format!(
                "the original tree does not pass ({} failed, {} errors): {}",
                r.failed,
                r.errors,
                r.findings
                    .first()
                    .map(|f| f.explanation.lines().next().unwrap_or("").to_string())
                    .or(r.first_error.clone())
                    .unwrap_or_default()
            ))
        } else if r.passed == 0 {
            Some(format!(
                "no case ran: {}",
                r.skipped.keys().cloned().collect::<Vec<_>>().join("; ")
            ))
        } else {
            None
        };
        match reason {
            Some(reason) => {
                println!("  left out {}: {reason}", variant.name);
                excluded.push(Excluded {
                    variant: variant.name.clone(),
                    reason,
                });
            }
            None => targets.push(Target {
                kernel,
                variant: variant.clone(),
                shaders: tree.variants(),
            }),
        }
    }
    if targets.is_empty() {
        return Err("no selected variant passes on the original tree".into());
    }
    Ok((device, targets, excluded, slowest))
}

/// Runs the mutation campaign; progress goes to stdout, the report to `out/mutants.json`.
pub fn run(opts: &Options) -> Result<MutationReport, String> {
    let started = Instant::now();
    let selected = kernels::select(&opts.ops, opts.variant.as_deref())?;
    if selected.is_empty() {
        return Err("no variant matches the selection".into());
    }
    let settings = Settings {
        cases: opts.cases,
        seed: opts.seed,
        shrink_budget: 0,
        repro_dir: None,
        time_budget: None,
        max_findings: 1,
    };

    // 1. Baseline on the original tree: every variant must pass; learn what each compiles.
    let (device, targets, excluded, slowest) = baseline(opts, &selected, &settings)?;
    let timeout = opts
        .case_timeout
        .unwrap_or_else(|| (slowest * 10).max(Duration::from_secs(10)));

    // 2. The files those variants compile, and their mutants.
    let mut closures: HashMap<ShaderVariant, BTreeSet<String>> = HashMap::new();
    for t in &targets {
        for sv in &t.shaders {
            closures
                .entry(sv.clone())
                .or_insert_with(|| include_closure(&opts.shaders, &sv.file));
        }
    }
    let files: BTreeSet<String> = closures
        .values()
        .flatten()
        .filter(|f| opts.files.is_empty() || opts.files.iter().any(|s| f.contains(file_part(s))))
        .cloned()
        .collect();
    let mut sources = BTreeMap::new();
    let mut mutants = Vec::new();
    let mut generated_per_file = BTreeMap::new();
    let mut stale_equivalences = Vec::new();
    for f in &files {
        let src = std::fs::read_to_string(opts.shaders.join(f))
            .map_err(|e| format!("{}: {e}", opts.shaders.join(f).display()))?;
        let all = generate(f, &src);
        for e in opts.equivalent.iter().filter(|e| &e.file == f) {
            if !all.iter().any(|m| e.matches(m)) {
                stale_equivalences.push(e.key());
            }
        }
        let ms: Vec<Mutant> = all.into_iter().filter(|m| wanted(&opts.files, m)).collect();
        generated_per_file.insert(f.clone(), ms.len());
        mutants.extend(ms);
        sources.insert(f.clone(), src);
    }
    let mut order = run_order(&mutants, opts.seed);
    if let Some(b) = opts.budget {
        order.truncate(b);
    }
    println!(
        "{} mutants in {} files; judging {}{} (per-case timeout {:.0}s)",
        mutants.len(),
        files.len(),
        order.len(),
        if order.len() < mutants.len() {
            " (a seeded sample spread over the files)"
        } else {
            ""
        },
        timeout.as_secs_f64()
    );

    // 3. A scratch tree (one path for every mutant, so SPIR-V is comparable) and its cache,
    //    shared with the workers.
    let scratch = opts.out.join("mutate-scratch");
    let _ = std::fs::remove_dir_all(&scratch);
    let tree_dir = scratch.join("tree");
    let cache_dir = scratch.join("spirv");
    copy_tree(&opts.shaders, &tree_dir).map_err(|e| format!("{}: {e}", tree_dir.display()))?;
    let tree_dir = std::fs::canonicalize(&tree_dir).map_err(|e| e.to_string())?;
    let mut reference = HashMap::new();
    {
        let mut tree = ShaderTree::with_cache(&tree_dir, Some(cache_dir.clone()));
        for sv in closures.keys() {
            let s = tree
                .spirv(sv)
                .map_err(|e| format!("the original tree: {e}"))?;
            reference.insert(sv.clone(), s.hash);
        }
    }
    let exe = crate::cli::own_executable()?;
    let mut args = vec!["--shaders".to_string(), tree_dir.display().to_string()];
    if let Some(d) = &opts.device {
        args.extend(["--device".to_string(), d.clone()]);
    }
    if !opts.repeat {
        args.push("--no-repeat".into());
    }
    let env = vec![(
        "VKDIFF_CACHE_DIR".to_string(),
        cache_dir.display().to_string(),
    )];

    let mut report = MutationReport {
        shaders: opts.shaders.display().to_string(),
        device,
        seed: opts.seed,
        cases: opts.cases,
        generated: mutants.len(),
        generated_per_file,
        sampled: order.len(),
        judged: 0,
        case_timeout: timeout.as_secs_f64(),
        excluded,
        stale_equivalences,
        kernels: Vec::new(),
        mutants: Vec::new(),
        seconds: 0.0,
    };
    let json_path = opts.out.join("mutants.json");
    let total = order.len();
    for (n, &i) in order.iter().enumerate() {
        if opts.time.is_some_and(|t| started.elapsed() >= t) {
            println!(
                "time is up: {} of {total} mutants judged",
                report.mutants.len()
            );
            break;
        }
        let m = &mutants[i];
        let t0 = Instant::now();
        let src = &sources[&m.file];
        let path = tree_dir.join(&m.file);
        std::fs::write(&path, m.apply(src)).map_err(|e| format!("{}: {e}", path.display()))?;
        let verdicts = judge(
            m,
            &targets,
            &closures,
            &reference,
            &tree_dir,
            &cache_dir,
            (&exe, args.as_slice(), env.as_slice()),
            timeout,
            &settings,
        );
        std::fs::write(&path, src).map_err(|e| format!("{}: {e}", path.display()))?;
        let verdicts = verdicts?;
        let (before, after) = m.lines(src);
        let equivalent = opts
            .equivalent
            .iter()
            .find(|e| e.matches(m))
            .map(|e| e.reason.clone());
        let summary: Vec<String> = verdicts
            .iter()
            .map(|(k, v)| match v {
                Verdict::Killed {
                    variant, cases_run, ..
                } => format!("{k} killed ({variant}, case {cases_run})"),
                Verdict::Survived { variants, cases } if equivalent.is_some() => format!(
                    "{k} survived, listed equivalent ({} variants, {cases} cases)",
                    variants.len()
                ),
                Verdict::Survived { variants, cases } => {
                    format!("{k} SURVIVED ({} variants, {cases} cases)", variants.len())
                }
                Verdict::Stillborn { .. } => format!("{k} stillborn"),
                Verdict::Unchanged => format!("{k} unchanged"),
            })
            .collect();
        println!(
            "[{}/{total}] {}:{}:{} {} `{}` → `{}`: {} ({:.1}s)",
            n + 1,
            m.file,
            m.line,
            m.column,
            m.operator.name(),
            m.original,
            m.replacement,
            summary.join(", "),
            t0.elapsed().as_secs_f64()
        );
        report.mutants.push(MutantResult {
            mutant: m.clone(),
            before,
            after,
            verdicts,
            equivalent,
            seconds: t0.elapsed().as_secs_f64(),
        });
        report.judged = report.mutants.len();
        finish(&mut report, &targets, started);
        if let Err(e) = write_json(&json_path, &report) {
            eprintln!("vkdiff: {}: {e}", json_path.display());
        }
    }
    finish(&mut report, &targets, started);
    write_json(&json_path, &report).map_err(|e| format!("{}: {e}", json_path.display()))?;
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(report)
}

fn write_json(path: &Path, report: &MutationReport) -> std::io::Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    let tmp = path.with_extension("json.tmp");
    std::fs::write(
        &tmp,
        serde_json::to_string_pretty(report).map_err(std::io::Error::other)?,
    )?;
    std::fs::rename(&tmp, path)
}

/// True when some kernel let `m` live. (An equivalence entry speaks for those kernels: a
/// mutant may be equivalent for one kernel's variants and killed by another's.)
fn survives(m: &MutantResult) -> bool {
    m.verdicts
        .values()
        .any(|v| matches!(v, Verdict::Survived { .. }))
}

/// Recomputes the per-kernel totals and sorts the mutants by place.
fn finish(report: &mut MutationReport, targets: &[Target], started: Instant) {
    report
        .mutants
        .sort_by(|a, b| (&a.mutant.file, a.mutant.start).cmp(&(&b.mutant.file, b.mutant.start)));
    report.kernels = KERNELS
        .iter()
        .filter(|k| targets.iter().any(|t| t.kernel.name == k.name))
        .map(|k| {
            let mut s = KernelScore {
                kernel: k.name.to_string(),
                variants: targets.iter().filter(|t| t.kernel.name == k.name).count(),
                ..Default::default()
            };
            for m in &report.mutants {
                let Some(v) = m.verdicts.get(k.name) else {
                    continue;
                };
                s.mutants += 1;
                let listed = m.equivalent.is_some();
                match v {
                    Verdict::Killed { .. } => {
                        s.killed += 1;
                        s.killed_equivalent += u32::from(listed && !survives(m));
                    }
                    Verdict::Survived { .. } if listed => s.equivalent += 1,
                    Verdict::Survived { .. } => s.survived += 1,
                    Verdict::Stillborn { .. } => s.stillborn += 1,
                    Verdict::Unchanged => s.unchanged += 1,
                }
            }
            let judged = s.killed + s.survived;
            s.score = (judged > 0).then(|| s.killed as f64 / judged as f64);
            s
        })
        .collect();
    report.seconds = started.elapsed().as_secs_f64();
}

/// Judges one mutant (already written into the scratch tree) for every kernel whose variants
/// compile its file.
#[allow(clippy::too_many_arguments)]
fn judge(
    m: &Mutant,
    targets: &[Target],
    closures: &HashMap<ShaderVariant, BTreeSet<String>>,
    reference: &HashMap<ShaderVariant, [u8; 32]>,
    tree_dir: &Path,
    cache_dir: &Path,
    (exe, args, env): (&PathBuf, &[String], &[(String, String)]),
    timeout: Duration,
    settings: &Settings,
) -> Result<BTreeMap<String, Verdict>, String> {
    let mut tree = ShaderTree::with_cache(tree_dir, Some(cache_dir.to_path_buf()));
    let mut worker: Option<Worker> = None;
    let mut verdicts = BTreeMap::new();
    for kernel in KERNELS {
        let mine: Vec<&Target> = targets
            .iter()
            .filter(|t| t.kernel.name == kernel.name)
            .filter(|t| t.shaders.iter().any(|sv| closures[sv].contains(&m.file)))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let mut stillborn = None;
        let mut changed = Vec::new();
        'targets: for t in &mine {
            let mut differs = false;
            for sv in t
                .shaders
                .iter()
                .filter(|sv| closures[*sv].contains(&m.file))
            {
                match tree.spirv(sv) {
                    Ok(s) => differs |= s.hash != reference[sv],
                    Err(GpuError::Compile { message, .. }) => {
                        stillborn = Some(format!("{}: {}", sv.name, first_error(&message)));
                        break 'targets;
                    }
                    Err(e) => return Err(format!("compiling a mutant of {}: {e}", m.file)),
                }
            }
            if differs {
                changed.push(*t);
            }
        }
        let verdict = if let Some(message) = stillborn {
            Verdict::Stillborn { message }
        } else if changed.is_empty() {
            Verdict::Unchanged
        } else {
            if worker.is_none() {
                // A fresh worker per mutant: a worker's tree memoises SPIR-V by variant.
                let mut w = Worker::new(
                    exe.clone(),
                    args.to_vec(),
                    env.to_vec(),
                    tree_dir.display().to_string(),
                )?;
                w.set_timeout(Some(timeout));
                worker = Some(w);
            }
            let w = worker.as_mut().expect("started above");
            let mut cases = 0;
            let mut killed = None;
            for t in &changed {
                let mut eval = UntilKilled {
                    inner: &mut *w,
                    ran: 0,
                    kill: None,
                };
                campaign::run_variant(&mut eval, t.kernel, &t.variant, settings);
                cases += eval.ran;
                if let Some((case, how, cases_run)) = eval.kill {
                    killed = Some(Verdict::Killed {
                        variant: t.variant.name.clone(),
                        case,
                        how,
                        cases_run,
                    });
                    break;
                }
            }
            killed.unwrap_or_else(|| Verdict::Survived {
                variants: changed.iter().map(|t| t.variant.name.clone()).collect(),
                cases,
            })
        };
        verdicts.insert(kernel.name.to_string(), verdict);
    }
    Ok(verdicts)
}

/// The summary: one row per kernel, then every survivor with its one-line diff.
pub fn table(report: &MutationReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<16} {:>8} {:>8} {:>7} {:>8} {:>10} {:>9} {:>9} {:>7}",
        "kernel",
        "variants",
        "mutants",
        "killed",
        "survived",
        "equivalent",
        "stillborn",
        "unchanged",
        "score"
    );
    for k in &report.kernels {
        let score = k
            .score
            .map_or("-".to_string(), |s| format!("{:.1}%", 100.0 * s));
        let _ = writeln!(
            s,
            "{:<16} {:>8} {:>8} {:>7} {:>8} {:>10} {:>9} {:>9} {:>7}",
            k.kernel,
            k.variants,
            k.mutants,
            k.killed,
            k.survived,
            k.equivalent,
            k.stillborn,
            k.unchanged,
            score
        );
    }
    let _ = writeln!(
        s,
        "(score = killed / (killed + survived); equivalent: survived and listed in the \
         equivalence file; stillborn: does not compile; unchanged: same SPIR-V as the original \
         for every variant)"
    );
    let _ = writeln!(
        s,
        "{} of {} generated mutants judged ({} cases per variant, seed {}), {:.0}s",
        report.judged, report.generated, report.cases, report.seed, report.seconds
    );
    for e in &report.excluded {
        let _ = writeln!(s, "left out {}: {}", e.variant, e.reason);
    }
    let surviving = |m: &MutantResult| -> Vec<String> {
        m.verdicts
            .iter()
            .filter(|(_, v)| matches!(v, Verdict::Survived { .. }))
            .map(|(k, _)| k.clone())
            .collect()
    };
    let line = |m: &MutantResult, kernels: &[String]| {
        format!(
            "{}:{}:{}: `{}` → `{}` [{}; {}]",
            m.mutant.file,
            m.mutant.line,
            m.mutant.column,
            m.before,
            m.after,
            m.mutant.operator.name(),
            kernels.join(", ")
        )
    };
    let mut survivors = String::new();
    let mut equivalents = String::new();
    let mut wrong = String::new();
    for m in &report.mutants {
        let kernels = surviving(m);
        match &m.equivalent {
            None if !kernels.is_empty() => {
                let _ = writeln!(survivors, "  {}", line(m, &kernels));
            }
            Some(reason) if !kernels.is_empty() => {
                let _ = writeln!(equivalents, "  {}\n      {reason}", line(m, &kernels));
            }
            Some(_) if kernels.is_empty() => {
                let killers: Vec<String> = m
                    .verdicts
                    .iter()
                    .filter(|(_, v)| matches!(v, Verdict::Killed { .. }))
                    .map(|(k, _)| k.clone())
                    .collect();
                if !killers.is_empty() {
                    let _ = writeln!(wrong, "  {}", line(m, &killers));
                }
            }
            _ => {}
        }
    }
    if !survivors.is_empty() {
        let _ = write!(s, "survivors:\n{survivors}");
    }
    if !equivalents.is_empty() {
        let _ = write!(s, "equivalent (listed, out of the score):\n{equivalents}");
    }
    if !wrong.is_empty() {
        let _ = write!(
            s,
            "KILLED although listed equivalent (the entry is wrong):\n{wrong}"
        );
    }
    for e in &report.stale_equivalences {
        let _ = writeln!(s, "stale equivalence entry (matches no mutant): {e}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn muts(src: &str) -> Vec<(Operator, String, String)> {
        generate("t.comp", src)
            .into_iter()
            .map(|m| (m.operator, m.original, m.replacement))
            .collect()
    }

    fn has(ms: &[(Operator, String, String)], op: Operator, from: &str, to: &str) -> bool {
        ms.iter().any(|(o, f, t)| *o == op && f == from && t == to)
    }

    #[test]
    fn comments_directives_and_layouts_are_left_alone() {
        let src = "#version 450\n#define N 4 + 1\n// a < b\n/* x - 1\n */\nlayout(local_size_x = 32) in;\nlayout(push_constant) uniform P { uint n; } p;\n";
        assert!(muts(src).is_empty(), "{:?}", muts(src));
    }

    #[test]
    fn relational_arithmetic_and_constants() {
        let ms = muts("void f() { for (uint i = 0; i < n; ++i) { x += a * b - c / 2u; } }");
        assert!(has(&ms, Operator::Relational, "<", "<="));
        assert!(has(&ms, Operator::Arithmetic, "++", "--"));
        assert!(has(&ms, Operator::Arithmetic, "+=", "-="));
        assert!(has(&ms, Operator::Arithmetic, "*", "/"));
        assert!(has(&ms, Operator::Arithmetic, "-", "+"));
        assert!(has(&ms, Operator::Arithmetic, "/", "*"));
        assert!(has(&ms, Operator::Constant, "0", "1"));
        assert!(has(&ms, Operator::Constant, "2u", "3u"));
        assert!(has(&ms, Operator::Constant, "2u", "1u"));
        // 0 has no -1 mutant; `a * b - c / 2u` is not a simple `x - y`.
        assert!(!ms.iter().any(|(_, _, t)| t == "-1"));
        assert!(!ms.iter().any(|(o, _, _)| *o == Operator::SwapOperands));
    }

    #[test]
    fn unary_minus_and_float_exponents_are_not_arithmetic() {
        let ms = muts("void f() { float x = -a + 1.0e-5; y = -(b); return -c; }");
        let arith: Vec<_> = ms
            .iter()
            .filter(|(o, _, _)| *o == Operator::Arithmetic)
            .collect();
        assert_eq!(arith.len(), 1, "{arith:?}"); // only the binary +
        assert!(has(&ms, Operator::Arithmetic, "+", "-"));
    }

    #[test]
    fn hex_constants_keep_their_form() {
        let ms = muts("void f() { x = y & 0xFu; z = 0x7fc00000u; }");
        assert!(has(&ms, Operator::Constant, "0xFu", "0x10u"));
        assert!(has(&ms, Operator::Constant, "0xFu", "0xEu"));
        assert!(has(&ms, Operator::Constant, "0x7fc00000u", "0x7fc00001u"));
    }

    #[test]
    fn barriers_and_min_max() {
        let ms = muts("void f() { barrier(); memoryBarrierShared(); x = min(a, max(b, c)); }");
        assert!(has(&ms, Operator::Barrier, "barrier();", ""));
        assert!(has(&ms, Operator::Barrier, "memoryBarrierShared();", ""));
        assert!(has(&ms, Operator::MinMax, "min", "max"));
        assert!(has(&ms, Operator::MinMax, "max", "min"));
    }

    #[test]
    fn minus_operands_swap_only_where_exact() {
        let ms = muts(
            "void f() { x = exp(s[i] - m.x); y = num_rows - 1; z = 2 * a - b; w = a - b * c; v = (a + b) - f(c); }",
        );
        assert!(has(&ms, Operator::SwapOperands, "s[i] - m.x", "m.x - s[i]"));
        assert!(has(
            &ms,
            Operator::SwapOperands,
            "num_rows - 1",
            "1 - num_rows"
        ));
        assert!(has(
            &ms,
            Operator::SwapOperands,
            "(a + b) - f(c)",
            "f(c) - (a + b)"
        ));
        let swaps = ms
            .iter()
            .filter(|(o, _, _)| *o == Operator::SwapOperands)
            .count();
        assert_eq!(swaps, 3, "{ms:?}");
    }

    #[test]
    fn index_terms_are_transposed() {
        let ms =
            muts("void f() { x = buf[o * BLOCK + tid] + buf[a + b] + q[(r * B + c) * S + lane]; }");
        assert!(has(
            &ms,
            Operator::SwapOperands,
            "o * BLOCK + tid",
            "tid * BLOCK + o"
        ));
        assert!(has(
            &ms,
            Operator::SwapOperands,
            "(r * B + c) * S + lane",
            "lane * S + (r * B + c)"
        ));
        // Inside the parenthesised group nothing is swapped, and a + b is commutative.
        assert!(!has(&ms, Operator::SwapOperands, "a + b", "b + a"));
    }

    #[test]
    fn positions_and_apply() {
        let src = "void f()\n{\n    if (a < b) {}\n}\n";
        let m = generate("t.comp", src)
            .into_iter()
            .find(|m| m.operator == Operator::Relational)
            .unwrap();
        assert_eq!((m.line, m.column), (3, 11));
        assert!(m.apply(src).contains("if (a <= b)"));
        assert_eq!(
            m.describe(src),
            "t.comp:3: `if (a < b) {}` → `if (a <= b) {}`"
        );
    }

    #[test]
    fn our_tree_has_mutants_in_every_kernel_file() {
        let dir = crate::default_shader_dir();
        for f in ["wkv7.comp", "mul_mat_vec.comp", "flash_attn.comp"] {
            let src = std::fs::read_to_string(dir.join(f)).unwrap();
            let ms = generate(f, &src);
            assert!(ms.len() > 20, "{f}: {}", ms.len());
            for m in &ms {
                assert_eq!(&src[m.start..m.end], m.original);
            }
        }
        let inc = include_closure(&dir, "mul_mat_vec.comp");
        assert!(inc.contains("types.comp") && inc.contains("mul_mat_vec_base.comp"));
    }

    #[test]
    fn file_filters_take_a_line() {
        let m = generate("wkv7.comp", "void f()\n{\n    x = a < b;\n}\n").remove(0);
        assert!(wanted(&[], &m));
        assert!(wanted(&["wkv7".into()], &m));
        assert!(wanted(&["wkv7.comp:3".into()], &m));
        assert!(!wanted(&["wkv7.comp:4".into()], &m));
        assert!(!wanted(&["types.comp".into()], &m));
        assert_eq!(file_part("a.comp:12"), "a.comp");
        assert_eq!(
            first_error("2 compilation errors:\n/tmp/x/tree/a.comp:15: error: 'q' : undeclared\n"),
            "a.comp:15: error: 'q' : undeclared"
        );
    }

    #[test]
    fn equivalence_entries_parse_and_match_by_place_and_text() {
        let src = "void f()\n{\n    x = a - b < c;\n}\n";
        let file = "# comment\n\nt.comp:3:15 `<` → `<=`: c is never equal to a - b\n\
                    t.comp:3:9 `a - b` → `b - a`: never mind\n";
        let es = parse_equivalences(file).unwrap();
        assert_eq!(es.len(), 2);
        assert_eq!(es[0].reason, "c is never equal to a - b");
        assert_eq!(es[1].original, "a - b");
        let ms = generate("t.comp", src);
        let lt = ms.iter().find(|m| m.original == "<").unwrap();
        assert!(es[0].matches(lt));
        assert!(!es[1].matches(lt));
        assert!(ms.iter().any(|m| es[1].matches(m)));
        assert_eq!(es[0].key(), "t.comp:3:15 `<` → `<=`");
        assert!(parse_equivalences("t.comp:3:15 `<` → `<=`:\n").is_err()); // no reason
        assert!(parse_equivalences("t.comp:3 `<` → `<=`: x\n").is_err()); // no column
    }

    #[test]
    fn run_order_is_seeded_and_spreads_over_files() {
        let ms: Vec<Mutant> = ["a", "a", "a", "b"]
            .iter()
            .map(|f| Mutant {
                file: f.to_string(),
                line: 1,
                column: 1,
                operator: Operator::Constant,
                original: "1".into(),
                replacement: "2".into(),
                start: 0,
                end: 1,
            })
            .collect();
        let o = run_order(&ms, 7);
        assert_eq!(o, run_order(&ms, 7));
        assert_eq!(ms[o[1]].file, "b");
        let mut sorted = o.clone();
        sorted.sort();
        assert_eq!(sorted, vec![0, 1, 2, 3]);
    }
}
