//! The command line through the real binary: selections that match nothing, workers that end
//! with a killed parent, merged reports and JUnit XML.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

#[test]
fn a_selection_that_matches_nothing_exits_2_naming_it_and_the_closest_names() {
    let out = common::scratch("no-match");
    let out = out.to_str().unwrap();
    // A variant filter that matches nothing, far from every name.
    let (code, text) = vkdiff(&["run", "--variant", "zzz", "--out", out], &[]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("--variant \"zzz\" selects nothing"), "{text}");
    assert!(!text.contains("cases in"), "nothing ran: {text}");
    // A typo gets the closest names.
    let (code, text) = vkdiff(&["run", "--variant", "rwkv_wvk7", "--out", out], &[]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("closest: rwkv_wkv7_f32"), "{text}");
    // Each filter valid alone, nothing together.
    let (code, text) = vkdiff(
        &["run", "-o", "wkv7", "--variant", "q4_0", "--out", out],
        &[],
    );
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("of kernel wkv7"), "{text}");
    // An unknown kernel.
    let (code, text) = vkdiff(&["run", "-o", "nosuchkernel", "--out", out], &[]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("unknown op \"nosuchkernel\""), "{text}");
    assert!(text.contains("kernels are: "), "{text}");
    let (code, text) = vkdiff(&["run", "-o", "wkv8", "--out", out], &[]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("did you mean wkv7?"), "{text}");
    // The same in bench (checked before the device is opened) and mutate.
    let (code, text) = vkdiff(&["bench", "--variant", "q4_O"], &[]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("--variant \"q4_O\" selects nothing") && text.contains("q4_0"),
        "{text}"
    );
    let (code, text) = vkdiff(&["bench", "--quick", "--row", "no such row"], &[]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("--row \"no such row\" selects nothing"),
        "{text}"
    );
    let (code, text) = vkdiff(&["mutate", "--variant", "zzz", "--out", out], &[]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("--variant \"zzz\" selects nothing"), "{text}");
    // --config on a path where ggml runs none of the selected variants (checked before the
    // tree is built, so no tree is needed): scalar flash attention is not what cm2 runs.
    let args = [
        "run",
        "--ggml",
        out,
        "--config",
        "cm2",
        "--variant",
        "f32_f16_f16$",
        "--out",
        out,
    ];
    let (code, text) = vkdiff(&args, &[]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("--config cm2 selects nothing")
            && text.contains("configurations that run some: default, intdot,")
            && text.contains("scalar-fp32, scalar-fp16"),
        "{text}"
    );
}

/// The state letter and parent of a process, from /proc/PID/stat (None: gone).
fn stat(pid: u32) -> Option<(char, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ppid …": comm may hold spaces and parentheses, so split after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// The processes whose parent is `parent`.
fn children(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| stat(pid).is_some_and(|(_, ppid)| ppid == parent))
        .collect()
}

/// Alive: present and not a zombie waiting for a reaper.
fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

#[test]
fn workers_end_when_their_parent_is_killed() {
    let out = common::scratch("orphans");
    // Two workers, each hanging inside its first case: a slow workload that never ends alone.
    let mut parent = Command::new(env!("CARGO_BIN_EXE_vkdiff"))
        .args([
            "run",
            "--variant",
            "rwkv_wkv7,mul_mat_vec_q8_0_f32_f32$",
            "--jobs",
            "2",
            "--cases",
            "4",
            "--out",
            out.to_str().unwrap(),
        ])
        .env("VKDIFF_INJECT_HANG", " ")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start vkdiff run");
    let pid = parent.id();
    let started = Instant::now();
    let mut workers = Vec::new();
    while workers.len() < 2 && started.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(200));
        workers = children(pid);
    }
    // Let them get into their cases (and so into the hang).
    std::thread::sleep(Duration::from_secs(3));
    workers.retain(|&w| alive(w));
    parent.kill().expect("SIGKILL the parent");
    parent.wait().unwrap();
    assert_eq!(workers.len(), 2, "two workers were running");
    let killed = Instant::now();
    while workers.iter().any(|&w| alive(w)) && killed.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let left: Vec<u32> = workers.iter().copied().filter(|&w| alive(w)).collect();
    for &w in &left {
        // Do not leave them behind when the test fails.
        let _ = Command::new("kill").args(["-9", &w.to_string()]).status();
    }
    assert!(
        left.is_empty(),
        "workers {left:?} outlived their parent by 5 s"
    );
}

#[test]
fn a_busy_worker_exits_when_its_stdin_closes() {
    use std::io::{Read, Write};
    // A worker whose parent (this test) stays alive, so only the stdin guard can end it.
    let mut worker = Command::new(env!("CARGO_BIN_EXE_vkdiff"))
        .arg("worker")
        .env("VKDIFF_INJECT_HANG", " ")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start vkdiff worker");
    let mut stdout = worker.stdout.take().unwrap();
    let mut len = [0u8; 4];
    stdout.read_exact(&mut len).expect("the Ready frame");
    let mut ready = vec![0u8; u32::from_le_bytes(len) as usize];
    stdout.read_exact(&mut ready).unwrap();
    // One case, on which the worker hangs.
    let case = vkdiff::fuzzing::case_from_bytes("wkv7", &[7u8; 256]).expect("a wkv7 case");
    let request = vkdiff::worker::Request::Evaluate(serde_json::to_string(&case).unwrap());
    let frame = bincode::serialize(&request).unwrap();
    let mut stdin = worker.stdin.take().unwrap();
    stdin
        .write_all(&(frame.len() as u32).to_le_bytes())
        .unwrap();
    stdin.write_all(&frame).unwrap();
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        worker.try_wait().unwrap().is_none(),
        "the worker hangs in the case"
    );
    drop(stdin);
    let closed = Instant::now();
    let limit = vkdiff::worker::ORPHAN_GRACE + Duration::from_secs(5);
    let status = loop {
        if let Some(s) = worker.try_wait().unwrap() {
            break Some(s);
        }
        if closed.elapsed() > limit {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    if status.is_none() {
        let _ = worker.kill();
        let _ = worker.wait();
    }
    assert!(
        status.is_some(),
        "still running {limit:?} after its stdin closed"
    );
    assert!(closed.elapsed() >= vkdiff::worker::ORPHAN_GRACE);
}

/// Parses JUnit XML with python3's parser and returns (suites, tests, failures, errors,
/// skipped) counted from the elements, checked against the attributes.
fn junit_counts(path: &Path) -> (usize, usize, usize, usize, usize) {
    let script = r#"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites", root.tag
suites = root.findall("testsuite")
n = [len(suites), 0, 0, 0, 0]
for s in suites:
    cases = s.findall("testcase")
    f = sum(1 for c in cases if c.find("failure") is not None)
    e = sum(1 for c in cases if c.find("error") is not None)
    k = sum(1 for c in cases if c.find("skipped") is not None)
    assert int(s.get("tests")) == len(cases), s.get("name")
    assert (int(s.get("failures")), int(s.get("errors")), int(s.get("skipped"))) == (f, e, k)
    for c in cases:
        assert c.get("classname") == s.get("name") and c.get("name") and float(c.get("time")) >= 0
    n[1] += len(cases); n[2] += f; n[3] += e; n[4] += k
assert [int(root.get(a)) for a in ("tests", "failures", "errors", "skipped")] == n[1:], n
print(*n)
"#;
    let out = Command::new("python3")
        .args(["-c", script, path.to_str().unwrap()])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let n: Vec<usize> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    (n[0], n[1], n[2], n[3], n[4])
}

#[test]
fn run_writes_junit_with_passes_and_skips() {
    let out = common::scratch("junit-run");
    let junit = out.join("junit.xml");
    // wkv7 passes; the scalar-B cm2 flash-attention variant needs cooperative matrix 2, which
    // lavapipe lacks, so every case of it is skipped there (on a device with it, it runs).
    let (code, text) = vkdiff(
        &[
            "run",
            "--variant",
            "rwkv_wkv7,f32_f16_f16_cm2$",
            "--cases",
            "3",
            "--out",
            out.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{text}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    let (suites, tests, failures, errors, skipped) = junit_counts(&junit);
    assert_eq!((suites, tests, failures, errors), (2, 2, 0, 0), "{xml}");
    let none_ran = vkdiff::report::read(&out.join("report.jsonl"))
        .unwrap()
        .into_iter()
        .filter(|l| match l {
            vkdiff::report::Line::Variant(v) => v.passed + v.failed + v.errors == 0,
            _ => false,
        })
        .count();
    assert_eq!(skipped, none_ran, "{xml}");
    if text.contains("llvmpipe") {
        assert_eq!(skipped, 1, "{xml}");
        assert!(xml.contains("<skipped message=\"3 skipped: "), "{xml}");
    }
    assert!(xml.contains("name=\"rwkv_wkv7_f32\""), "{xml}");
}

#[test]
fn report_merges_runs_into_one_list_of_distinct_findings_and_junit() {
    let dir = common::scratch("merge");
    let mut files = Vec::new();
    // The same planted crash (every case whose M starts with 1) in two runs with different seeds: one
    // distinct finding, seen in both files.
    for seed in ["1", "3"] {
        let out = dir.join(format!("seed{seed}"));
        let (code, text) = vkdiff(
            &[
                "run",
                "-o",
                "mul_mat_vec",
                "--variant",
                "q8_0_f32_f32$",
                "--cases",
                "30",
                "--seed",
                seed,
                "--shrink-budget",
                "40",
                "--out",
                out.to_str().unwrap(),
            ],
            &[("VKDIFF_INJECT_CRASH", " M=1")],
        );
        assert_eq!(code, 1, "{text}");
        files.push(out.join("report.jsonl"));
    }
    // A third input with no finding: another kernel.
    let clean = dir.join("clean");
    let (code, text) = vkdiff(
        &[
            "run",
            "-o",
            "wkv7",
            "--cases",
            "3",
            "--out",
            clean.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{text}");
    files.push(clean.join("report.jsonl"));
    let merged = dir.join("merged");
    let junit = merged.join("junit.xml");
    let mut args = vec!["report"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    args.extend([
        "--out",
        merged.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    let (code, text) = vkdiff(&args, &[]);
    assert_eq!(code, 1, "exits as run would on the new finding: {text}");
    assert!(text.contains("1 distinct findings"), "{text}");
    // One summed row per variant and device: 60 cases of the mat-vec variant from two files.
    let row = text
        .lines()
        .find(|l| l.starts_with("mul_mat_vec ") && l.contains("q8_0_f32_f32"))
        .unwrap_or_else(|| panic!("no summed row: {text}"));
    let fields: Vec<&str> = row.split_whitespace().collect();
    assert!(fields.contains(&"60"), "{row}");
    assert!(row.trim_end().ends_with('2'), "two files: {row}");
    // Where the finding was seen: both crash runs, not the clean one.
    let seen = text.split("seen in:").nth(1).expect("places");
    for (f, expect) in files.iter().zip([true, true, false]) {
        assert_eq!(seen.contains(f.to_str().unwrap()), expect, "{f:?}: {text}");
    }
    let html = std::fs::read_to_string(merged.join("report.html")).unwrap();
    assert!(html.contains("3 reports merged"), "{html}");
    assert!(html.contains("Seen in:"), "{html}");
    let (suites, tests, failures, errors, skipped) = junit_counts(&junit);
    assert_eq!((suites, tests, failures, errors, skipped), (2, 3, 2, 0, 0));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("replay: vkdiff replay "), "{xml}");
    // Several files need somewhere to write.
    let (code, text) = vkdiff(&args[..3], &[]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("--out DIR"), "{text}");
}

#[test]
fn a_reader_that_stops_early_ends_list_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vkdiff"))
        .arg("list")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run vkdiff list");
    // The reader goes away before reading anything (as `vkdiff list | head -0` would): every
    // write of the listing meets EPIPE, whatever the pipe's buffer holds.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
}
