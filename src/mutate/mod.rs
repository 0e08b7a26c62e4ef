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
//!   variant passes every case, **survived**. A timeout kills only when the case times out
//!   again on a second, longer try in a fresh worker: a mutant's first dispatches include the
//!   driver's compile of a shader it has never seen.
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

mod equivalence;
mod generate;
mod run;
mod table;

pub use equivalence::{default_equivalence_file, parse_equivalences, Equivalence};
pub use generate::{generate, include_closure, Mutant, Operator};
pub use run::{run, Excluded, KernelScore, MutantResult, MutationReport, Options, Verdict};
pub use table::table;

#[cfg(test)]
mod tests {
    use super::equivalence::*;
    use super::generate::*;
    use super::run::*;

    /// Every entry of the checked-in equivalence file still names a mutant of today's shaders:
    /// a shader edit that moves or removes the code behind an entry makes it stale, and this
    /// fails until the entry is re-keyed (its reason checked again) or dropped.
    #[test]
    fn checked_in_equivalences_name_current_mutants() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(root.join("mutants-equivalent.txt")).unwrap();
        let stale: Vec<String> = parse_equivalences(&text)
            .unwrap()
            .iter()
            .filter(|e| {
                let src =
                    std::fs::read_to_string(root.join("shaders").join(&e.file)).unwrap_or_default();
                !generate(&e.file, &src).iter().any(|m| e.matches(m))
            })
            .map(|e| e.key())
            .collect();
        assert!(
            stale.is_empty(),
            "{} stale entries in mutants-equivalent.txt:\n{}",
            stale.len(),
            stale.join("\n")
        );
    }

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
