//! Distinct findings: one bug must not hide another. A copy of our shaders with two different
//! bugs in the same kernel yields two findings, each shrunk within its own group.

mod common;

use vkdiff::campaign::{run_variant, Settings};
use vkdiff::findings;
use vkdiff::worker::{InProcess, Repeat};
use vkdiff_gpu::ShaderTree;

/// A copy of our tree with each (file, from, to) applied once.
fn mutant(name: &str, edits: &[(&str, &str, &str)]) -> std::path::PathBuf {
    let dir = common::shader_copy(name);
    for (file, from, to) in edits {
        let target = dir.join(file);
        let src = std::fs::read_to_string(&target).unwrap();
        assert_eq!(
            src.matches(from).count(),
            1,
            "{from:?} must occur once in {file}"
        );
        std::fs::write(&target, src.replacen(from, to, 1)).unwrap();
    }
    dir
}

#[test]
fn two_bugs_in_flash_attention_are_two_findings() {
    // Bug 1: the last key of every split is dropped (wrong values in every row).
    // Bug 2: a fully masked row is written 0 instead of ggml's NaN.
    let tree = mutant(
        "fa-two-bugs",
        &[
            (
                "flash_attn_base.comp",
                "kv_end = min(p.KV, kv_begin + p.split_kv);",
                "kv_end = min(p.KV - 1, kv_begin + p.split_kv);",
            ),
            ("flash_attn.comp", "vec4(ROW_NAN)", "vec4(0.0)"),
        ],
    );
    let (kernel, v) = common::variant("flash_attn_f32_f16_f16");
    let settings = Settings {
        cases: 60,
        shrink_budget: 150,
        repro_dir: None,
        ..Settings::default()
    };
    let report = common::with_gpu(|gpu| {
        run_variant(
            &mut InProcess {
                gpu,
                tree: &mut ShaderTree::with_cache(&tree, None),
                repeat: Repeat::Never,
            },
            kernel,
            &v,
            &settings,
        )
    });
    let distinct = findings::distinct(std::slice::from_ref(&report), &[]);
    let keys: Vec<String> = distinct.iter().map(|d| d.key.to_string()).collect();
    assert!(
        distinct
            .iter()
            .any(|d| d.key.symptom.contains("fully masked row")),
        "the fully masked row bug has its own finding: {keys:#?}"
    );
    assert!(
        distinct
            .iter()
            .any(|d| d.key.symptom == "wrong or unstable values"
                && d.key.path == "flash_attn/scalar"),
        "and the dropped key its own: {keys:#?}"
    );
    // Every shrunk representative kept its group.
    for f in &report.findings {
        let Some(key) = f.group.split(" | ").nth(1) else {
            panic!("group {}", f.group)
        };
        assert!(
            f.signature.kind == key,
            "{} shrank out of {}",
            f.signature,
            f.group
        );
    }
}
