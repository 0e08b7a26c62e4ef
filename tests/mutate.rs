//! `vkdiff mutate` through the real CLI, and the worker's per-case timeout it relies on (a
//! mutated loop bound can make a kernel run for ever).

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use vkdiff::cases::Outcome;
use vkdiff::mutate::{MutationReport, Verdict};
use vkdiff::worker::{Evaluator, Worker};

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

fn report(dir: &std::path::Path) -> MutationReport {
    let text = std::fs::read_to_string(dir.join("mutants.json")).expect("mutants.json written");
    serde_json::from_str(&text).expect("mutants.json parses")
}

#[test]
fn mutate_judges_a_small_sample_and_writes_mutants_json() {
    let out = common::scratch("mutate-wkv7");
    let (code, text) = vkdiff(
        &[
            "mutate",
            "-o",
            "wkv7",
            "--budget",
            "6",
            "--cases",
            "10",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{text}");
    // The table: one wkv7 row with its counts and score.
    let header = text
        .lines()
        .find(|l| l.starts_with("kernel "))
        .unwrap_or_else(|| panic!("no table: {text}"));
    for col in ["killed", "survived", "stillborn", "unchanged", "score"] {
        assert!(header.contains(col), "{header}");
    }
    let row: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("wkv7 "))
        .unwrap_or_else(|| panic!("no wkv7 row: {text}"))
        .split_whitespace()
        .collect();
    assert_eq!(row[2], "6", "6 mutants judged: {row:?}");
    let r = report(&out);
    assert_eq!(r.judged, 6);
    assert_eq!(r.mutants.len(), 6);
    assert!(r.generated > 6);
    let k = &r.kernels[0];
    assert_eq!(k.kernel, "wkv7");
    // A survivor that the checked-in equivalence file lists counts as equivalent, not survived
    // (this seed's sample includes a listed one, wkv7.comp:176:23).
    assert_eq!(
        k.killed + k.survived + k.equivalent + k.stillborn + k.unchanged,
        6
    );
    // Columns: kernel variants mutants killed survived equivalent stillborn unchanged score.
    assert_eq!(row[3], k.killed.to_string());
    assert_eq!(row[4], k.survived.to_string());
    assert_eq!(row[5], k.equivalent.to_string());
    assert_eq!(row[6], k.stillborn.to_string());
    assert!(k.killed >= 1, "the suite kills some wkv7 mutants: {text}");
    for m in &r.mutants {
        assert_eq!(m.mutant.file, "wkv7.comp");
        assert_ne!(m.before, m.after);
        assert!(m.verdicts.contains_key("wkv7"));
    }
    // Every survivor is listed with its one-line diff.
    for m in r
        .mutants
        .iter()
        .filter(|m| matches!(m.verdicts["wkv7"], Verdict::Survived { .. }))
    {
        let line = format!(
            "wkv7.comp:{}:{}: `{}` → `{}`",
            m.mutant.line, m.mutant.column, m.before, m.after
        );
        assert!(text.contains(&line), "{line} missing from: {text}");
    }
    // The scratch tree is gone.
    assert!(!out.join("mutate-scratch").exists());

    // Same seed, same sample; this time with an equivalence file naming one mutant the sample
    // kills (a wrong entry) and one the tree does not have (a stale entry).
    let out2 = common::scratch("mutate-wkv7-again");
    let killed = r
        .mutants
        .iter()
        .find(|m| matches!(m.verdicts["wkv7"], Verdict::Killed { .. }))
        .expect("a killed mutant");
    let key = format!(
        "wkv7.comp:{}:{} `{}` → `{}`",
        killed.mutant.line, killed.mutant.column, killed.mutant.original, killed.mutant.replacement
    );
    let equivalent = out2.join("equivalent.txt");
    std::fs::create_dir_all(&out2).unwrap();
    std::fs::write(
        &equivalent,
        format!("# test\n{key}: said to be equivalent\nwkv7.comp:1:1 `<` → `<=`: stale\n"),
    )
    .unwrap();
    let (code, text) = vkdiff(
        &[
            "mutate",
            "-o",
            "wkv7",
            "--budget",
            "6",
            "--cases",
            "10",
            "--out",
            out2.to_str().unwrap(),
            "--equivalent",
            equivalent.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{text}");
    let wrong = text
        .split("KILLED although listed equivalent")
        .nth(1)
        .unwrap_or_else(|| panic!("the wrong entry is not flagged: {text}"));
    assert!(
        wrong.contains(&format!(
            "wkv7.comp:{}:{}:",
            killed.mutant.line, killed.mutant.column
        )),
        "{text}"
    );
    assert!(
        text.contains("stale equivalence entry (matches no mutant): wkv7.comp:1:1 `<` → `<=`"),
        "{text}"
    );
    let r2 = report(&out2);
    assert_eq!(r2.kernels[0].killed_equivalent, 1);
    assert_eq!(r2.stale_equivalences.len(), 1);
    let places = |r: &MutationReport| -> Vec<(usize, String)> {
        r.mutants
            .iter()
            .map(|m| (m.mutant.start, m.mutant.replacement.clone()))
            .collect()
    };
    assert_eq!(places(&r), places(&report(&out2)));
}

#[test]
fn a_mutant_that_hangs_is_killed_by_the_case_timeout() {
    // Every case hangs in the mutants' workers (the baseline runs in process, untouched).
    let out = common::scratch("mutate-hang");
    let started = Instant::now();
    let (code, text) = vkdiff(
        &[
            "mutate",
            "-o",
            "wkv7",
            "--budget",
            "2",
            "--cases",
            "3",
            "--case-timeout",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        &[("VKDIFF_INJECT_HANG", "seed")],
    );
    assert_eq!(code, 0, "{text}");
    assert!(started.elapsed() < Duration::from_secs(60), "{text}");
    let mut killed = 0;
    for m in &report(&out).mutants {
        match &m.verdicts["wkv7"] {
            Verdict::Killed { how, cases_run, .. } => {
                assert!(how.contains("timed out after 1s"), "{how}");
                // Only a second, longer try confirms a timeout (a new shader's first dispatch
                // pays the driver's compile).
                assert!(how.contains("again on a second try"), "{how}");
                assert!(how.contains("with 6s"), "{how}");
                assert_eq!(m.timeouts_retried, 1);
                assert_eq!(*cases_run, 1);
                killed += 1;
            }
            Verdict::Stillborn { .. } | Verdict::Unchanged => {}
            v => panic!("a hanging mutant must be killed: {v:?}"),
        }
    }
    assert!(killed >= 1, "{text}");
}

#[test]
fn the_worker_kills_a_hanging_case_and_carries_on() {
    let (kernel, variant) = common::variant("rwkv_wkv7_f32");
    let strategy = (kernel.strategy)(&variant);
    let mut runner = TestRunner::deterministic();
    let first = strategy.new_tree(&mut runner).unwrap().current();
    let second = loop {
        let c = strategy.new_tree(&mut runner).unwrap().current();
        if !c.to_string().contains(&first.to_string()) {
            break c;
        }
    };
    let mut w = Worker::new(
        env!("CARGO_BIN_EXE_vkdiff").into(),
        vec![
            "--shaders".into(),
            vkdiff::default_shader_dir().display().to_string(),
            "--no-repeat".into(),
        ],
        vkdiff::worker::Setup {
            driver_env: vec![("VKDIFF_INJECT_HANG".into(), first.to_string())],
            ggml: None,
        },
        "ours".into(),
    )
    .expect("worker starts");
    w.set_timeout(Some(Duration::from_secs(2)));
    let started = Instant::now();
    match w.evaluate(&first) {
        Outcome::Crash { message: m, .. } => assert!(m.starts_with("timed out after 2s"), "{m}"),
        o => panic!("expected a timeout, got {o:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(20));
    // A fresh worker takes the next case.
    assert!(
        matches!(w.evaluate(&second), Outcome::Pass { .. }),
        "{second}"
    );
    assert_eq!(w.starts, 2);
}
