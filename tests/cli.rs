//! The command line through the real binary: selections that match nothing.

mod common;

use std::process::Command;

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
