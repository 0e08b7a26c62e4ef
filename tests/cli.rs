//! The command line through the real binary: selections that match nothing, workers that end
//! with a killed parent.

mod common;

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
            "rwkv_wkv7,mul_mat_vec_q8_0_f32_f32",
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
