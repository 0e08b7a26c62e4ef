//! Faults a campaign must survive without losing a result, driven through the real CLI (worker
//! processes included): a crash inside a case, a lost device, a shader that does not compile,
//! a case too large for the device, a reproducer that cannot be written, and bad input.
//!
//! A `libtest-mimic` harness: a test whose precondition this machine lacks (a device with a
//! larger buffer limit, no validation layer, not lavapipe) is reported as ignored with the
//! reason, never as passed.

mod common;

use std::process::{Command, Output};

use libtest_mimic::{Arguments, Trial};
use vkdiff::campaign::{run_variant, Settings};
use vkdiff::cases::{Case, Outcome};
use vkdiff::exec::own;
use vkdiff::worker::{InProcess, Repeat};
use vkdiff_gpu::ShaderTree;

/// The fail and err columns of a summary table row (counted from the end, as in `passed`).
fn failed_and_errors(row: &str) -> (&str, &str) {
    let cols: Vec<&str> = row.split_whitespace().collect();
    (cols[cols.len() - 6], cols[cols.len() - 5])
}

/// The pass count of a table row (counted from the end: device names have spaces).
fn passed(row: &str) -> u32 {
    let cols: Vec<&str> = row.split_whitespace().collect();
    cols[cols.len() - 7]
        .parse()
        .unwrap_or_else(|_| panic!("no pass count in {row}"))
}

fn vkdiff(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let out: Output = Command::new(env!("CARGO_BIN_EXE_vkdiff"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run vkdiff");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

fn a_crash_inside_a_case_becomes_a_finding_and_the_campaign_goes_on() {
    let out = common::scratch("crash");
    // Every case with exactly one row "crashes the driver" (aborts the worker).
    let (code, text) = vkdiff(
        &[
            "run",
            "-o",
            "mul_mat_vec",
            "--variant",
            "q8_0_f32_f32$",
            "--cases",
            "40",
            "--out",
            out.to_str().unwrap(),
        ],
        &[("VKDIFF_INJECT_CRASH", " M=1 ")],
    );
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("crash: the worker process died inside this case"),
        "{text}"
    );
    assert!(text.contains(" restarted "), "{text}");
    // The crash was shrunk (to the simplest case with M = 1) and written as a reproducer.
    assert!(text.contains("K=32 M=1 N=1"), "{text}");
    let repro = std::fs::read_dir(out.join("repro"))
        .unwrap()
        .next()
        .expect("a reproducer")
        .unwrap()
        .path();
    assert!(std::fs::read_to_string(&repro)
        .unwrap()
        .contains("\"m\": 1"));
    // Cases without M = 1 still ran and passed.
    let row = text
        .lines()
        .find(|l| l.starts_with("mul_mat_vec ") && l.contains("llvmpipe"))
        .expect("table row");
    assert!(passed(row) > 20, "{row}");
}

fn a_crash_that_needs_earlier_cases_is_kept_apart_from_the_cases_own() {
    let out = common::scratch("state-crash");
    // Cases with one row "crash the driver" only after the worker ran another case: alone, in
    // a fresh worker, they pass.
    let (code, text) = vkdiff(
        &[
            "run",
            "-o",
            "mul_mat_vec",
            "--variant",
            "q8_0_f32_f32$",
            "--cases",
            "40",
            "--jobs",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        &[("VKDIFF_INJECT_STATE_CRASH", " M=1 ")],
    );
    // Still a failure, never hidden, but of its own kind and not shrunk (the case is not the
    // cause), naming the cases that ran before it.
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("mul_mat_vec | crash after earlier cases | earlier cases in the same worker"),
        "{text}"
    );
    assert!(!text.contains("| crash |"), "a case's own crash: {text}");
    assert!(
        text.contains("crashed only after earlier cases in the same worker (")
            && text.contains("alone in a fresh worker it gave a pass"),
        "{text}"
    );
    let lines = vkdiff::report::read(&out.join("report.jsonl")).unwrap();
    let crashes: Vec<_> = lines
        .iter()
        .filter_map(|l| match l {
            vkdiff::report::Line::Case(c) if c.outcome == "crash" => Some(c),
            _ => None,
        })
        .collect();
    assert!(!crashes.is_empty(), "{text}");
    for c in crashes {
        assert!(c.case.contains(" M=1 "), "{c:?}");
        assert!(
            vkdiff::worker::after_earlier(c.detail.as_deref().unwrap_or("")),
            "{c:?}"
        );
    }
}

fn a_lost_device_marks_the_case_and_a_fresh_device_carries_on() {
    let (code, text) = vkdiff(
        &["run", "-o", "wkv7", "--cases", "30", "--no-repeat"],
        &[("VKDIFF_INJECT_DEVICE_LOST", "7")],
    );
    // Lost devices are errors (exit 8), not wrong results.
    assert_eq!(code, 8, "{text}");
    assert!(
        text.contains("device lost during a job (injected"),
        "{text}"
    );
    assert!(text.contains(" restarted "), "{text}");
    let row = text
        .lines()
        .find(|l| l.starts_with("wkv7 "))
        .expect("table row");
    // 30 cases: every 7th job of a worker is lost (4 losses), the rest pass on fresh devices.
    assert_eq!(
        failed_and_errors(row),
        ("0", "4"),
        "no failure, 4 errors: {row}"
    );
    assert_eq!(passed(row), 26, "{row}");
}

/// A job past the timeout may still be running: the next job on the same device context (here
/// in-process, where nothing restarts) must wait for it before it resets the command buffer,
/// descriptor pool and fence and refills the buffers. Without that wait the validation layer
/// names each reset of an object in use, and lavapipe's queue thread, still walking the
/// re-recorded command buffer, dies with SIGSEGV (the crash of sessions 27 and 28).
fn a_job_past_the_timeout_is_waited_for_before_the_next_job_reuses_its_objects() {
    let (code, text) = vkdiff(
        &[
            "run",
            "--in-process",
            "--validate",
            "-o",
            "wkv7",
            "--cases",
            "12",
            "--no-repeat",
        ],
        &[("VKDIFF_INJECT_TIMEOUT", "3")],
    );
    // The timed-out jobs are errors (exit 8), not wrong results, and nothing else failed.
    assert_eq!(code, 8, "{text}");
    assert!(
        text.contains("device lost during a job that ran past"),
        "{text}"
    );
    assert!(!text.contains("validation:"), "{text}");
    let row = text
        .lines()
        .find(|l| l.starts_with("wkv7 "))
        .expect("table row");
    // Every 3rd job of the 12 counts as timed out: 4 errors, 8 passes.
    assert_eq!(
        failed_and_errors(row),
        ("0", "4"),
        "no failure, 4 errors: {row}"
    );
    assert_eq!(passed(row), 8, "{row}");
}

fn a_shader_that_does_not_compile_fails_its_kernel_and_the_others_still_run() {
    let tree = common::shader_copy("cli-broken");
    let wkv7 = tree.join("wkv7.comp");
    let src = std::fs::read_to_string(&wkv7).unwrap();
    std::fs::write(
        &wkv7,
        src.replacen(
            "void main()",
            "void main() { syntax error here }\nvoid unused()",
            1,
        ),
    )
    .unwrap();
    let (code, text) = vkdiff(
        &[
            "run",
            "--cases",
            "5",
            "--variant",
            "f32",
            "--shaders",
            tree.to_str().unwrap(),
        ],
        &[],
    );
    // A compile error is an error (exit 8), not a wrong result.
    assert_eq!(code, 8, "{text}");
    assert!(
        text.contains("ERROR rwkv_wkv7_f32 (5 cases): compiling rwkv_wkv7_f32 (wkv7.comp) failed"),
        "{text}"
    );
    assert!(text.contains("wkv7.comp:"), "names the line: {text}");
    let matvec = text
        .lines()
        .find(|l| l.starts_with("mul_mat_vec  mul_mat_vec_f32_f32_f32"))
        .expect("mat-vec still ran");
    assert!(matvec.split_whitespace().any(|w| w == "5"), "{matvec}");
}

fn a_case_too_large_for_the_device_is_skipped_with_the_limit() {
    // A is 4096 × 9000 f32 = 147 MB, past lavapipe's 128 MiB maxStorageBufferRange.
    let case: Case = serde_json::from_str(
        r#"{"op":"mul_mat_vec","a_type":"f32","b_type":"f32","k":4096,"m":9000,"n":1,"ne02":1,"r2":1,"ne03":1,
            "b_row_pad":0,"a_blocks":{"quantized":"normal"},"b_dist":"normal","seed":1}"#,
    )
    .unwrap();
    let outcome = common::with_gpu(|gpu| {
        own::evaluate(
            &case,
            gpu,
            &mut ShaderTree::new(vkdiff::default_shader_dir()),
            false,
        )
    });
    let Outcome::Skip(reason) = outcome else {
        panic!("expected a skip, got {outcome:?}")
    };
    assert!(reason.contains("exceeds maxStorageBufferRange"), "{reason}");
}

/// The A matrix of [`a_case_too_large_for_the_device_is_skipped_with_the_limit`], in bytes.
const TOO_LARGE_BYTES: u64 = 4096 * 9000 * 4;

fn a_reproducer_that_cannot_be_written_keeps_the_finding() {
    let tree = common::shader_copy("unwritable");
    let f = tree.join("mul_mat_vec.comp");
    let src = std::fs::read_to_string(&f).unwrap();
    std::fs::write(&f, src.replacen("k < p.ncols", "k + 1 < p.ncols", 1)).unwrap();
    let (kernel, variant) = common::variant("mul_mat_vec_f32_f32_f32");
    let blocker = common::scratch("not-a-dir").join("file");
    std::fs::write(&blocker, "a file where the reproducer folder should go").unwrap();
    let settings = Settings {
        cases: 10,
        repro_dir: Some(blocker.join("repro")),
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
            &variant,
            &settings,
        )
    });
    let finding = report
        .findings
        .into_iter()
        .next()
        .expect("the failure is still reported");
    assert!(finding.repro.is_none());
    assert!(
        finding.explanation.contains("reproducer not written"),
        "{}",
        finding.explanation
    );
    assert!(
        finding.explanation.contains("bound"),
        "the finding itself is intact: {}",
        finding.explanation
    );
}

fn bad_input_gets_an_error_naming_the_problem_not_a_panic() {
    let dir = common::scratch("bad-input");
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, "{not json").unwrap();
    let (code, text) = vkdiff(&["replay", garbage.to_str().unwrap()], &[]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("not a vkdiff reproducer"), "{text}");

    let ragged = dir.join("ragged.json");
    std::fs::write(
        &ragged,
        r#"{"vkdiff_reproducer":1,"kernel":"mul_mat_vec","variant":"x","device":"","shaders":"","finding":"","shrunk_from":"",
            "case":{"op":"mul_mat_vec","a_type":"q4_0","b_type":"f32","k":33,"m":1,"n":1,"ne02":1,"r2":1,"ne03":1,
            "b_row_pad":0,"a_blocks":{"quantized":"normal"},"b_dist":"normal","seed":1}}"#,
    )
    .unwrap();
    let (code, text) = vkdiff(&["replay", ragged.to_str().unwrap()], &[]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("K = 33 is not a multiple of q4_0's block size 32"),
        "{text}"
    );

    let (code, text) = vkdiff(&["run", "-o", "no_such_op"], &[]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("unknown op \"no_such_op\"; kernels are: wkv7, mul_mat_vec"),
        "{text}"
    );
    let (code, text) = vkdiff(&["run", "--shaders", "/nonexistent/shaders"], &[]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("shader folder /nonexistent/shaders does not exist"),
        "{text}"
    );
}

fn lavapipe_vector_widths_change_the_subgroup_size_and_label_the_rows() {
    let (code, text) = vkdiff(
        &["run", "--cases", "20", "--lavapipe-widths", "128,512"],
        &[],
    );
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("LP_NATIVE_VECTOR_WIDTH=128") && text.contains("LP_NATIVE_VECTOR_WIDTH=512"),
        "{text}"
    );
    // 128-bit vectors hold 4 floats, 512-bit ones 16: lavapipe's subgroup size follows.
    assert!(
        text.contains("subgroup size 4") && text.contains("subgroup size 16"),
        "{text}"
    );
}

fn a_validation_message_fails_the_case_and_is_quoted() {
    // A shader using a binding outside the descriptor set layout: invalid pipeline creation.
    let tree = common::shader_copy("validation");
    let f = tree.join("wkv7.comp");
    let src = std::fs::read_to_string(&f).unwrap();
    let src = src.replacen(
        "void main()",
        "layout(binding = 9) buffer Extra { float extra[]; };\nvoid main()",
        1,
    );
    let at = src.find("void main()").unwrap()
        + src[src.find("void main()").unwrap()..].find('{').unwrap()
        + 1;
    std::fs::write(
        &f,
        format!("{}\n    extra[0] = 1.0;{}", &src[..at], &src[at..]),
    )
    .unwrap();
    let (code, text) = vkdiff(
        &[
            "run",
            "--validate",
            "-o",
            "wkv7",
            "--cases",
            "3",
            "--shaders",
            tree.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("validation layer: ") && text.contains("Binding 9"),
        "{text}"
    );
}

fn two_runs_that_disagree_are_reported_as_nondeterminism() {
    let (code, text) = vkdiff(
        // Every case repeated: on lavapipe the default repeats one in 4.
        &["run", "-o", "wkv7", "--cases", "5", "--repeat-every", "1"],
        &[("VKDIFF_INJECT_NONDETERMINISM", "1")],
    );
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("nondeterministic: 1 of"), "{text}");
    assert!(
        text.contains("elements differ between two runs of the same inputs; first dst[0, 0, 0, 0]"),
        "{text}"
    );
    // And without the second run nothing can be noticed.
    let (code, text) = vkdiff(
        &["run", "-o", "wkv7", "--cases", "5", "--no-repeat"],
        &[("VKDIFF_INJECT_NONDETERMINISM", "1")],
    );
    assert_eq!(code, 0, "{text}");
}

/// Every fault test, with the reason it cannot run here (None: it runs).
fn main() {
    let args = Arguments::from_args();
    let caps = common::with_gpu(|gpu| gpu.caps().clone());
    let lavapipe = caps.name.contains("llvmpipe");
    let no_validation = (!vkdiff_gpu::device::validation_layer_installed()).then(|| {
        "the Khronos validation layer is not installed (apt-get install vulkan-validationlayers)"
            .to_string()
    });
    // (name, test, why it cannot run here)
    type Entry = (&'static str, fn(), Option<String>);
    let tests: [Entry; 11] = [
        (
            "a_crash_inside_a_case_becomes_a_finding_and_the_campaign_goes_on",
            a_crash_inside_a_case_becomes_a_finding_and_the_campaign_goes_on,
            None,
        ),
        (
            "a_crash_that_needs_earlier_cases_is_kept_apart_from_the_cases_own",
            a_crash_that_needs_earlier_cases_is_kept_apart_from_the_cases_own,
            None,
        ),
        (
            "a_lost_device_marks_the_case_and_a_fresh_device_carries_on",
            a_lost_device_marks_the_case_and_a_fresh_device_carries_on,
            None,
        ),
        (
            "a_job_past_the_timeout_is_waited_for_before_the_next_job_reuses_its_objects",
            a_job_past_the_timeout_is_waited_for_before_the_next_job_reuses_its_objects,
            no_validation.clone(),
        ),
        (
            "a_shader_that_does_not_compile_fails_its_kernel_and_the_others_still_run",
            a_shader_that_does_not_compile_fails_its_kernel_and_the_others_still_run,
            None,
        ),
        (
            "a_case_too_large_for_the_device_is_skipped_with_the_limit",
            a_case_too_large_for_the_device_is_skipped_with_the_limit,
            (caps.max_storage_buffer_range as u64 > TOO_LARGE_BYTES).then(|| {
                format!(
                    "{} takes {TOO_LARGE_BYTES}-byte buffers (maxStorageBufferRange {})",
                    caps.name, caps.max_storage_buffer_range
                )
            }),
        ),
        (
            "a_reproducer_that_cannot_be_written_keeps_the_finding",
            a_reproducer_that_cannot_be_written_keeps_the_finding,
            None,
        ),
        (
            "bad_input_gets_an_error_naming_the_problem_not_a_panic",
            bad_input_gets_an_error_naming_the_problem_not_a_panic,
            None,
        ),
        (
            "lavapipe_vector_widths_change_the_subgroup_size_and_label_the_rows",
            lavapipe_vector_widths_change_the_subgroup_size_and_label_the_rows,
            (!lavapipe).then(|| format!("{} is not lavapipe", caps.name)),
        ),
        (
            "a_validation_message_fails_the_case_and_is_quoted",
            a_validation_message_fails_the_case_and_is_quoted,
            no_validation,
        ),
        (
            "two_runs_that_disagree_are_reported_as_nondeterminism",
            two_runs_that_disagree_are_reported_as_nondeterminism,
            None,
        ),
    ];
    let trials = tests
        .into_iter()
        .map(|(name, test, skip)| {
            let trial = Trial::test(name, move || {
                test();
                Ok(())
            });
            match skip {
                Some(reason) => {
                    if !args.list {
                        eprintln!("ignored {name}: {reason}");
                    }
                    trial.with_ignored_flag(true)
                }
                None => trial,
            }
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
