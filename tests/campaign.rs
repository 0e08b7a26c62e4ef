//! Campaign options through the real CLI: several devices, shards, a time budget, and the
//! streamed JSON report (which must survive being cut short) with its HTML page.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

fn vkdiff(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vkdiff"))
        .args(args)
        .output()
        .expect("run vkdiff");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// Variant names of a report.jsonl's variant lines.
fn variants(jsonl: &std::path::Path) -> BTreeSet<String> {
    vkdiff::report::read(jsonl)
        .unwrap()
        .into_iter()
        .filter_map(|l| match l {
            vkdiff::report::Line::Variant(v) => Some(v.variant),
            _ => None,
        })
        .collect()
}

#[test]
fn two_workers_share_the_variants_and_one_report() {
    let out = common::scratch("two-workers");
    let (code, text) = vkdiff(&[
        "run",
        "--devices",
        "0,0",
        "--cases",
        "10",
        "-o",
        "mul_mat_vec",
        "--variant",
        "q4_0_f32_f32$,q4_0_f16_f32$",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(
        text.matches("device: ").count(),
        2,
        "one header per worker: {text}"
    );
    let seen = variants(&out.join("report.jsonl"));
    assert_eq!(seen.len(), 2, "each q4_0 variant exactly once: {seen:?}");
    let cases = vkdiff::report::read(&out.join("report.jsonl"))
        .unwrap()
        .iter()
        .filter(|l| matches!(l, vkdiff::report::Line::Case(_)))
        .count();
    assert_eq!(cases, 20);
    assert!(std::fs::read_to_string(out.join("report.html"))
        .unwrap()
        .contains("all variants passed"));
}

#[test]
fn a_cpu_device_runs_its_default_count_and_says_why() {
    let out = common::scratch("default-count");
    let (code, text) = vkdiff(&["run", "-o", "wkv7", "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    let caps = vkdiff_gpu::Gpu::open(None).unwrap().caps().clone();
    let want = vkdiff::worker::cases_per_variant(None, &caps);
    let cases = vkdiff::report::read(&out.join("report.jsonl"))
        .unwrap()
        .iter()
        .filter(|l| matches!(l, vkdiff::report::Line::Case(_)))
        .count();
    assert_eq!(cases as u32, want, "{text}");
    if caps.kind == "cpu" {
        assert!(
            text.contains(&format!(
                "cases: {want} a variant (the default on a CPU device"
            )),
            "{text}"
        );
    }
}

#[test]
fn shards_partition_the_variants() {
    let (a, b) = (common::scratch("shard-0"), common::scratch("shard-1"));
    for (shard, out) in [("0/2", &a), ("1/2", &b)] {
        let (code, text) = vkdiff(&[
            "run",
            "--shard",
            shard,
            "--cases",
            "3",
            "-o",
            "mul_mat_vec",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{text}");
    }
    let (va, vb) = (
        variants(&a.join("report.jsonl")),
        variants(&b.join("report.jsonl")),
    );
    assert!(va.is_disjoint(&vb), "{va:?} {vb:?}");
    let all: BTreeSet<String> = vkdiff::cases::select(&["mul_mat_vec".into()], None)
        .unwrap()
        .into_iter()
        .map(|(_, v)| v.name)
        .collect();
    assert_eq!(va.union(&vb).cloned().collect::<BTreeSet<_>>(), all);
    let (code, text) = vkdiff(&["run", "--shard", "2/2"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("is not a shard i/n"), "{text}");
}

#[test]
fn a_time_budget_ends_the_campaign_and_a_cut_report_still_renders() {
    let out = common::scratch("time-budget");
    let start = std::time::Instant::now();
    let (code, text) = vkdiff(&[
        "run",
        "--time",
        "4s",
        "-o",
        "wkv7",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(
        start.elapsed().as_secs_f64() < 30.0,
        "took {:?}",
        start.elapsed()
    );
    // Cut the report in the middle of a line, as a killed run would leave it.
    let jsonl = out.join("report.jsonl");
    let full = std::fs::read_to_string(&jsonl).unwrap();
    std::fs::write(&jsonl, &full[..full.len() * 2 / 3]).unwrap();
    let (code, text) = vkdiff(&["report", jsonl.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(std::fs::read_to_string(out.join("report.html"))
        .unwrap()
        .contains("vkdiff report"));
}

/// `vkdiff report` over a backend report that never reached its summary (a run stopped at its
/// time limit) still prints the pipeline coverage and writes coverage.txt beside the report.
#[test]
fn report_rebuilds_the_pipeline_coverage_of_a_cut_run() {
    use vkdiff::report::{Coverage, Line};
    let out = common::scratch("cut-coverage");
    let config = "ggml T [ggml-version 0.26.0; has ; lacks ] config default";
    let case = |pipelines: &[&str]| {
        serde_json::json!({
            "type": "case", "kernel": "mul_mat_vec", "variant": "v", "config": config,
            "case": "c", "outcome": "pass", "ratio": 0.5, "gpu_ns": null, "detail": null,
            "pipelines": pipelines,
        })
        .to_string()
    };
    let coverage = serde_json::to_string(&Line::Coverage(Box::new(Coverage {
        config: config.into(),
        possible: vec!["mod_a".into(), "mod_b".into(), "mod_c".into()],
        ..Default::default()
    })))
    .unwrap();
    let jsonl = out.join("report.jsonl");
    let text = [coverage, case(&["mod_a"]), case(&["mod_b", "cpy"])].join("\n") + "\n";
    std::fs::write(&jsonl, text).unwrap();
    let (code, text) = vkdiff(&["report", jsonl.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("2 of 3 pipelines dispatched by judged cases (66.7%)")
            && text.contains("never dispatched: mod_c"),
        "{text}"
    );
    let listed = std::fs::read_to_string(out.join("coverage.txt")).unwrap();
    assert!(listed.contains("never mod_c"), "{listed}");
}
