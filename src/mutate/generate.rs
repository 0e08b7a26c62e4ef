//! The mutants: operators, a small GLSL lexer, and the generator that walks a file's tokens.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Ident,
    Int,
    Float,
    Op,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Tok<'s> {
    kind: Kind,
    text: &'s str,
    start: usize,
    end: usize,
    line: usize,
}

/// Multi-character operators, longest first.
pub(super) const OPS: [&str; 21] = [
    "<<=", ">>=", "<=", ">=", "==", "!=", "&&", "||", "^^", "++", "--", "+=", "-=", "*=", "/=",
    "%=", "&=", "|=", "^=", "<<", ">>",
];

/// Words after which `-` or `+` is unary.
pub(super) const KEYWORDS: [&str; 4] = ["return", "case", "else", "do"];

/// GLSL tokens outside comments and preprocessor lines.
pub(super) fn lex(src: &str) -> Vec<Tok<'_>> {
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
pub(super) fn int_value(text: &str) -> Option<(u64, u32, &str)> {
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
pub(super) fn partners(toks: &[Tok]) -> Vec<Option<usize>> {
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
pub(super) fn layout_tokens(toks: &[Tok]) -> Vec<bool> {
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

pub(super) fn is_operand_word(t: &Tok) -> bool {
    match t.kind {
        Kind::Ident => !KEYWORDS.contains(&t.text),
        Kind::Int | Kind::Float => true,
        Kind::Op => false,
    }
}

/// True when the `+` or `-` at `k` is binary (it follows an operand).
pub(super) fn is_binary(toks: &[Tok], k: usize) -> bool {
    k > 0 && (is_operand_word(&toks[k - 1]) || matches!(toks[k - 1].text, ")" | "]"))
}

/// Start of the postfix expression (name, literal, call, group, indexing, member access) that
/// ends at token `j`.
pub(super) fn postfix_start(
    toks: &[Tok],
    partner: &[Option<usize>],
    mut j: usize,
) -> Option<usize> {
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
pub(super) fn postfix_end(toks: &[Tok], partner: &[Option<usize>], j: usize) -> Option<usize> {
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
pub(super) const BEFORE_LEFT: [&str; 35] = [
    "(", ",", "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "[", "?", ":",
    "{", ";", "<", "<=", ">", ">=", "==", "!=", "&&", "||", "^^", "&", "|", "^", "<<", ">>",
    "return", "}", "else",
];
/// Tokens that may follow the right operand (looser than `-`, or additive: `-` is
/// left-associative).
pub(super) const AFTER_RIGHT: [&str; 24] = [
    ")", ",", ";", "]", "?", ":", "<", "<=", ">", ">=", "==", "!=", "&&", "||", "^^", "&", "|",
    "^", "<<", ">>", "+", "-", "}", "=",
];

pub(super) struct Gen<'s> {
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
/// root as the compiler does for a flat tree), whatever the preprocessor conditions; files the
/// compiler generates (not on disk) are left out.
pub fn include_closure(dir: &Path, file: &str) -> BTreeSet<String> {
    let (mut seen, mut visited) = (BTreeSet::new(), BTreeSet::new());
    let mut todo = vec![file.to_string()];
    while let Some(f) = todo.pop() {
        if !visited.insert(f.clone()) {
            continue;
        }
        // Not on disk: the compiler's generated include (the i-quant tables, data from
        // iq_grids.json), which has nothing to mutate.
        let Ok(text) = std::fs::read_to_string(dir.join(&f)) else {
            continue;
        };
        seen.insert(f);
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
