//! GPU-side paths a default lavapipe run would not take: the staged memory path used on
//! discrete GPUs, and a shader that does not compile.

mod common;

use vkdiff::campaign::{run_variant_observed, Settings};
use vkdiff::cases::{Case, Outcome};
use vkdiff::exec::own;
use vkdiff::worker::{InProcess, Repeat};
use vkdiff_gpu::context::MemoryMode;
use vkdiff_gpu::ShaderTree;

#[test]
fn staged_uploads_and_readback_give_the_same_verdicts() {
    let settings = Settings {
        cases: 25,
        repro_dir: None,
        ..Settings::default()
    };
    for name in ["mul_mat_vec_q4_1_f16_f32", "mul_mat_vec_f32_f32_f32"] {
        let (kernel, variant) = common::variant(name);
        // The same seed gives the same cases: record each case's verdict on both paths.
        let run = |mode: MemoryMode| {
            let mut records = Vec::new();
            let report = common::with_gpu(|gpu| {
                gpu.set_memory_mode(mode);
                let r = run_variant_observed(
                    &mut InProcess {
                        gpu,
                        tree: &mut ShaderTree::new(vkdiff::default_shader_dir()),
                        repeat: Repeat::Always,
                    },
                    kernel,
                    &variant,
                    &settings,
                    &mut |rec| records.push((rec.case.clone(), rec.outcome.clone(), rec.ratio)),
                );
                gpu.set_memory_mode(MemoryMode::Direct);
                r
            });
            assert!(
                report.ok() && report.passed == 25,
                "{name} {mode:?}: {}",
                vkdiff::campaign::table(&[report])
            );
            records
        };
        let direct = run(MemoryMode::Direct);
        let staged = run(MemoryMode::Staged);
        assert_eq!(direct.len(), 25);
        // Bit-identical results give identical error ratios; any difference is a staging bug.
        assert_eq!(direct, staged, "{name}: staged verdicts differ from direct");
    }
}

#[test]
fn a_shader_that_does_not_compile_is_an_error_naming_file_line_and_variant() {
    let dir = common::shader_copy("broken-shader");
    let file = dir.join("mul_mat_vec.comp");
    let src = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        src.replacen(
            "void main()",
            "void main() { this is not glsl; }\nvoid main2()",
            1,
        ),
    )
    .unwrap();
    let case: Case = serde_json::from_str(
        r#"{"op":"mul_mat_vec","a_type":"q8_0","b_type":"f32","k":32,"m":3,"n":1,"ne02":1,"r2":1,"ne03":1,
            "b_row_pad":0,"a_blocks":{"quantized":"normal"},"b_dist":"normal","seed":1}"#,
    )
    .unwrap();
    let outcome = common::with_gpu(|gpu| {
        own::evaluate(&case, gpu, &mut ShaderTree::with_cache(&dir, None), true)
    });
    let Outcome::Error(msg) = outcome else {
        panic!("expected a compile error, got {outcome:?}")
    };
    assert!(
        msg.contains("mul_mat_vec_q8_0_f32_f32"),
        "names the variant: {msg}"
    );
    assert!(
        msg.contains("mul_mat_vec.comp:"),
        "names file and line: {msg}"
    );
}
