//! Backend mode through the real CLI: `vkdiff run --ggml` builds a real upstream tree (the
//! recent llama.cpp vendored by llama-cpp-sys-2, cached in ~/.cache/vkdiff-ggml) and runs all
//! four ops through ggml's own Vulkan host on the test device (lavapipe on CI). A wrong element
//! injected into ggml's output must fail the run (the comparison is live), and bad input is a
//! clear error.

mod common;

use std::path::PathBuf;
use std::process::Command;

use vkdiff::report::Line;

fn vkdiff(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vkdiff"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run vkdiff");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// The recent upstream tree: $VKDIFF_GGML_TREE, else `ci/upstream-tree.sh 0.1.161`.
fn recent_tree() -> PathBuf {
    if let Some(t) = std::env::var_os("VKDIFF_GGML_TREE") {
        return t.into();
    }
    let out = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/ci/upstream-tree.sh"))
        .arg("0.1.161")
        .output()
        .expect("run ci/upstream-tree.sh");
    assert!(
        out.status.success(),
        "ci/upstream-tree.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// MUL_MAT (mat-vec and matrix-matrix), MUL_MAT_ID (mat-vec), FLASH_ATTN_EXT (q8_0 K/V) and
/// RWKV_WKV7, f32 accumulators (recent trees clamp f16 accumulators, docs/ggml-backend.md).
const VARIANTS: &str =
    "rwkv_wkv7,mul_mat_vec_q8_0_f32_f32,mul_mat_vec_id_q8_0,flash_attn_f32_f16_q8_0$,flash_attn_f32_f16_q8_0_cm1$,flash_attn_f32_f16_q8_0_cm2$,matmul_f32_f32";

#[test]
fn recent_tree_runs_all_four_ops_and_can_fail() {
    let tree = recent_tree();
    let tree = tree.to_str().unwrap();
    let out = common::scratch("ggml-backend");
    let dir = out.join("run");
    let (code, text) = vkdiff(
        &[
            "run",
            "--ggml",
            tree,
            "--variant",
            VARIANTS,
            "--cases",
            "4",
            "--config",
            "scalar-fp32,scalar-fp16,cm2",
            "--out",
            dir.to_str().unwrap(),
        ],
        &[],
    );
    // Exit 1: ggml's wkv7 is only right for head size 64 (its shader hard-codes it while
    // supports_op accepts any size), which these cases reach; nothing else may fail but a
    // crash after earlier cases (lavapipe 22.3, below).
    assert!(code == 0 || code == 1, "backend run failed:\n{text}");
    let lines = vkdiff::report::read(&dir.join("report.jsonl")).unwrap();
    let mut passed = std::collections::BTreeMap::<String, u32>::new();
    let mut configs = std::collections::BTreeSet::new();
    for l in &lines {
        match l {
            Line::Case(c) => {
                assert!(c.config.starts_with("ggml "), "unlabelled result {c:?}");
                // ggml's own host chose how to run it: reachable, unless the inputs are ones no
                // real graph produces (a token repeating an expert, CaseModel::unreal_inputs).
                assert!(
                    c.reach
                        .forced
                        .iter()
                        .all(|r| r == vkdiff::findings::REPEATED),
                    "{c:?}"
                );
                configs.insert(c.config.clone());
                if c.outcome == "pass" {
                    *passed.entry(c.kernel.clone()).or_default() += 1;
                } else if c.outcome != "skip" {
                    // Known findings (docs/ggml-backend.md): wkv7 with S ≠ 64; lavapipe 22.3
                    // releasing a destroyed tensor buffer's resource twice when ggml's context
                    // runs its next graph, which kills the worker in whatever case comes next.
                    // That crash is accepted only where the case, rerun alone in a fresh worker,
                    // did not crash (the worker's isolation says so): a case's own crash fails.
                    let after_earlier = c.outcome == "crash"
                        && vkdiff::worker::after_earlier(c.detail.as_deref().unwrap_or(""));
                    assert!(
                        (c.kernel == "wkv7" && !c.case.starts_with("S=64 ")) || after_earlier,
                        "unexpected {} in backend mode: {} {}\n{:?}",
                        c.outcome,
                        c.variant,
                        c.case,
                        c.detail
                    );
                }
            }
            Line::Variant(v) if v.config.ends_with("config cm2") => {
                // Lavapipe has no coopmat2: a visible skip, not a silent pass.
                assert!(
                    v.cases == 0 && !v.skipped.is_empty(),
                    "cm2 on this device: {v:?}"
                );
            }
            _ => {}
        }
    }
    for op in [
        "wkv7",
        "mul_mat_vec",
        "mul_mat_vec_id",
        "flash_attn",
        "mul_mm",
    ] {
        assert!(
            passed.get(op).copied().unwrap_or(0) > 0,
            "no passing {op} case: {passed:?}\n{text}"
        );
    }
    // A finding's reproducer records the tree and configuration, and replays through ggml.
    let repro = std::fs::read_dir(dir.join("repro"))
        .expect("the wkv7 finding's reproducer")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().contains("wkv7"))
        .expect("a wkv7 reproducer");
    let (code, text) = vkdiff(&["replay", repro.to_str().unwrap()], &[]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("through ggml ") && text.contains("FAIL"),
        "{text}"
    );
    // The same cases with one wrong element in ggml's MUL_MAT output: the run must fail.
    let bad = out.join("bad");
    let (code, text) = vkdiff(
        &[
            "run",
            "--ggml",
            tree,
            "--variant",
            "q8_0_f32_f32",
            "-o",
            "mul_mat_vec",
            "--cases",
            "2",
            "--config",
            "scalar-fp16",
            "--shrink-budget",
            "5",
            "--out",
            bad.to_str().unwrap(),
        ],
        &[("VKDIFF_GGML_INJECT", "MUL_MAT")],
    );
    assert_eq!(code, 1, "an injected error passed:\n{text}");
    // Same seed, same cases: diff lists exactly the cases the injection broke.
    let (code, text) = vkdiff(
        &[
            "diff",
            dir.join("report.jsonl").to_str().unwrap(),
            bad.join("report.jsonl").to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("mul_mat_vec") && text.contains("pass → fail"),
        "{text}"
    );
}

#[test]
fn bad_trees_are_clear_errors() {
    let out = common::scratch("ggml-bad");
    let (code, text) = vkdiff(&["run", "--ggml", out.to_str().unwrap(), "-o", "wkv7"], &[]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("not a ggml or llama.cpp checkout"), "{text}");
    // A ggml tree without the Vulkan backend.
    std::fs::create_dir_all(out.join("include")).unwrap();
    std::fs::write(out.join("include/ggml.h"), "").unwrap();
    std::fs::write(out.join("CMakeLists.txt"), "").unwrap();
    let (code, text) = vkdiff(&["run", "--ggml", out.to_str().unwrap(), "-o", "wkv7"], &[]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("without the Vulkan backend"), "{text}");
    // A tree whose build fails: the error quotes the log and says what to do.
    std::fs::create_dir_all(out.join("src/ggml-vulkan")).unwrap();
    std::fs::write(
        out.join("CMakeLists.txt"),
        "message(FATAL_ERROR \"vkdiff test: broken tree\")\n",
    )
    .unwrap();
    let cache = out.join("cache");
    let (code, text) = vkdiff(
        &["run", "--ggml", out.to_str().unwrap(), "-o", "wkv7"],
        &[("VKDIFF_GGML_CACHE", cache.to_str().unwrap())],
    );
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("building ggml failed") && text.contains("broken tree"),
        "{text}"
    );
    assert!(text.contains("what to do"), "{text}");
    // Mutants would need a ggml rebuild each: a clear refusal.
    let (code, text) = vkdiff(&["mutate", "--ggml", out.to_str().unwrap()], &[]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("mutate does not take --ggml"), "{text}");
}
