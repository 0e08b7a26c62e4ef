//! The differential suite: every kernel × variant against the reference on the default device
//! (lavapipe on CI), 200 random cases each. One named test per variant, e.g.
//! `cargo test --release --test differential mul_mat_vec::q4_0_f32`.

mod common;

use vkdiff::campaign::{run_variant, table, Settings};
use vkdiff::kernels::KERNELS;
use vkdiff::worker::InProcess;
use vkdiff_gpu::ShaderTree;

/// Cases per variant.
const CASES: u32 = 200;

fn check_variant(name: &str) {
    let (kernel, variant) = common::variant(name);
    let settings = Settings {
        cases: CASES,
        repro_dir: Some(std::env::temp_dir().join("vkdiff-repro")),
        ..Settings::default()
    };
    let report = common::with_gpu(|gpu| {
        let mut tree = ShaderTree::new(vkdiff::default_shader_dir());
        run_variant(
            &mut InProcess {
                gpu,
                tree: &mut tree,
                repeat: true,
            },
            kernel,
            &variant,
            &settings,
        )
    });
    let summary = table(std::slice::from_ref(&report));
    println!("{summary}");
    // A device without the variant's features skips it with the reason (Kernel::requires):
    // shown here (`-- --show-output`), and never counted as passed cases.
    if report.cases == 0 && report.skipped.keys().any(|r| r.starts_with("device: ")) {
        eprintln!(
            "SKIPPED {name}: {:?}",
            report.skipped.keys().collect::<Vec<_>>()
        );
        return;
    }
    assert!(report.ok(), "{name} failed:\n{summary}");
    assert!(
        report.missing.is_none(),
        "{name}: shader missing:\n{summary}"
    );
    assert_eq!(
        report.passed, CASES,
        "{name}: not every case ran and passed:\n{summary}"
    );
}

macro_rules! variant_tests {
    ($kernel:ident { $($test:ident => $name:literal),* $(,)? }) => {
        mod $kernel {
            /// The variants this module tests, checked against the table below.
            pub const NAMES: &[&str] = &[$($name),*];
            $(#[test] fn $test() { super::check_variant($name) })*
        }
    };
}

variant_tests!(wkv7 { f32 => "rwkv_wkv7_f32" });
variant_tests!(mul_mat_vec {
    f32_f32 => "mul_mat_vec_f32_f32_f32",
    f32_f16 => "mul_mat_vec_f32_f16_f32",
    f16_f32 => "mul_mat_vec_f16_f32_f32",
    f16_f16 => "mul_mat_vec_f16_f16_f32",
    bf16_f32 => "mul_mat_vec_bf16_f32_f32",
    q4_0_f32 => "mul_mat_vec_q4_0_f32_f32",
    q4_0_f16 => "mul_mat_vec_q4_0_f16_f32",
    q4_1_f32 => "mul_mat_vec_q4_1_f32_f32",
    q4_1_f16 => "mul_mat_vec_q4_1_f16_f32",
    q5_0_f32 => "mul_mat_vec_q5_0_f32_f32",
    q5_0_f16 => "mul_mat_vec_q5_0_f16_f32",
    q5_1_f32 => "mul_mat_vec_q5_1_f32_f32",
    q5_1_f16 => "mul_mat_vec_q5_1_f16_f32",
    q8_0_f32 => "mul_mat_vec_q8_0_f32_f32",
    q8_0_f16 => "mul_mat_vec_q8_0_f16_f32",
    q2_k_f32 => "mul_mat_vec_q2_k_f32_f32",
    q2_k_f16 => "mul_mat_vec_q2_k_f16_f32",
    q3_k_f32 => "mul_mat_vec_q3_k_f32_f32",
    q3_k_f16 => "mul_mat_vec_q3_k_f16_f32",
    q4_k_f32 => "mul_mat_vec_q4_k_f32_f32",
    q4_k_f16 => "mul_mat_vec_q4_k_f16_f32",
    q5_k_f32 => "mul_mat_vec_q5_k_f32_f32",
    q5_k_f16 => "mul_mat_vec_q5_k_f16_f32",
    q6_k_f32 => "mul_mat_vec_q6_k_f32_f32",
    q6_k_f16 => "mul_mat_vec_q6_k_f16_f32",
    iq4_nl_f32 => "mul_mat_vec_iq4_nl_f32_f32",
    iq4_nl_f16 => "mul_mat_vec_iq4_nl_f16_f32",
    iq4_xs_f32 => "mul_mat_vec_iq4_xs_f32_f32",
    iq4_xs_f16 => "mul_mat_vec_iq4_xs_f16_f32",
});
variant_tests!(mul_mat_vec_id {
    f32 => "mul_mat_vec_id_f32_f32",
    f16 => "mul_mat_vec_id_f16_f32",
    q4_0 => "mul_mat_vec_id_q4_0_f32",
    q4_1 => "mul_mat_vec_id_q4_1_f32",
    q5_0 => "mul_mat_vec_id_q5_0_f32",
    q5_1 => "mul_mat_vec_id_q5_1_f32",
    q8_0 => "mul_mat_vec_id_q8_0_f32",
    q2_k => "mul_mat_vec_id_q2_k_f32",
    q3_k => "mul_mat_vec_id_q3_k_f32",
    q4_k => "mul_mat_vec_id_q4_k_f32",
    q5_k => "mul_mat_vec_id_q5_k_f32",
    q6_k => "mul_mat_vec_id_q6_k_f32",
    iq4_nl => "mul_mat_vec_id_iq4_nl_f32",
    iq4_xs => "mul_mat_vec_id_iq4_xs_f32",
});

variant_tests!(flash_attn {
    f16 => "flash_attn_f32_f16_f16",
    q4_0 => "flash_attn_f32_f16_q4_0",
    q8_0 => "flash_attn_f32_f16_q8_0",
    cm1_f16 => "flash_attn_f32_f16_f16_cm1",
    cm1_q4_0 => "flash_attn_f32_f16_q4_0_cm1",
    cm1_q8_0 => "flash_attn_f32_f16_q8_0_cm1",
    cm2_f16 => "flash_attn_f32_f16_f16_cm2",
    cm2_q4_0 => "flash_attn_f32_f16_q4_0_cm2",
    cm2_q4_1 => "flash_attn_f32_f16_q4_1_cm2",
    cm2_q5_0 => "flash_attn_f32_f16_q5_0_cm2",
    cm2_q5_1 => "flash_attn_f32_f16_q5_1_cm2",
    cm2_q8_0 => "flash_attn_f32_f16_q8_0_cm2",
    cm2_iq4_nl => "flash_attn_f32_f16_iq4_nl_cm2",
});

variant_tests!(mul_mm {
    f32_f32 => "matmul_f32_f32",
    f32_f16 => "matmul_f32_f16",
    f16_f32 => "matmul_f16_f32",
    f16_f32_f16acc => "matmul_f16_f32_f16acc",
    f16_f16 => "matmul_f16",
    f16_f16_f16acc => "matmul_f16_f16acc",
    bf16 => "matmul_bf16",
    q4_0_f32 => "matmul_q4_0_f32",
    q4_0_f32_f16acc => "matmul_q4_0_f32_f16acc",
    q4_1_f32 => "matmul_q4_1_f32",
    q4_1_f32_f16acc => "matmul_q4_1_f32_f16acc",
    q5_0_f32 => "matmul_q5_0_f32",
    q5_0_f32_f16acc => "matmul_q5_0_f32_f16acc",
    q5_1_f32 => "matmul_q5_1_f32",
    q5_1_f32_f16acc => "matmul_q5_1_f32_f16acc",
    q8_0_f32 => "matmul_q8_0_f32",
    q8_0_f32_f16acc => "matmul_q8_0_f32_f16acc",
    q2_k_f32 => "matmul_q2_k_f32",
    q2_k_f32_f16acc => "matmul_q2_k_f32_f16acc",
    q3_k_f32 => "matmul_q3_k_f32",
    q3_k_f32_f16acc => "matmul_q3_k_f32_f16acc",
    q4_k_f32 => "matmul_q4_k_f32",
    q4_k_f32_f16acc => "matmul_q4_k_f32_f16acc",
    q5_k_f32 => "matmul_q5_k_f32",
    q5_k_f32_f16acc => "matmul_q5_k_f32_f16acc",
    q6_k_f32 => "matmul_q6_k_f32",
    q6_k_f32_f16acc => "matmul_q6_k_f32_f16acc",
    iq4_nl_f32 => "matmul_iq4_nl_f32",
    iq4_nl_f32_f16acc => "matmul_iq4_nl_f32_f16acc",
    iq4_xs_f32 => "matmul_iq4_xs_f32",
    iq4_xs_f32_f16acc => "matmul_iq4_xs_f32_f16acc",
    cm2_f16 => "matmul_f16_cm2",
    cm2_f16_f16acc => "matmul_f16_f16acc_cm2",
    cm2_bf16 => "matmul_bf16_cm2",
    cm2_q4_0_f16 => "matmul_q4_0_f16_cm2",
    cm2_q4_0_f16_f16acc => "matmul_q4_0_f16_f16acc_cm2",
    cm2_q4_1_f16 => "matmul_q4_1_f16_cm2",
    cm2_q4_1_f16_f16acc => "matmul_q4_1_f16_f16acc_cm2",
    cm2_q5_0_f16 => "matmul_q5_0_f16_cm2",
    cm2_q5_0_f16_f16acc => "matmul_q5_0_f16_f16acc_cm2",
    cm2_q5_1_f16 => "matmul_q5_1_f16_cm2",
    cm2_q5_1_f16_f16acc => "matmul_q5_1_f16_f16acc_cm2",
    cm2_q8_0_f16 => "matmul_q8_0_f16_cm2",
    cm2_q8_0_f16_f16acc => "matmul_q8_0_f16_f16acc_cm2",
    cm2_q2_k_f16 => "matmul_q2_k_f16_cm2",
    cm2_q2_k_f16_f16acc => "matmul_q2_k_f16_f16acc_cm2",
    cm2_q3_k_f16 => "matmul_q3_k_f16_cm2",
    cm2_q3_k_f16_f16acc => "matmul_q3_k_f16_f16acc_cm2",
    cm2_q4_k_f16 => "matmul_q4_k_f16_cm2",
    cm2_q4_k_f16_f16acc => "matmul_q4_k_f16_f16acc_cm2",
    cm2_q5_k_f16 => "matmul_q5_k_f16_cm2",
    cm2_q5_k_f16_f16acc => "matmul_q5_k_f16_f16acc_cm2",
    cm2_q6_k_f16 => "matmul_q6_k_f16_cm2",
    cm2_q6_k_f16_f16acc => "matmul_q6_k_f16_f16acc_cm2",
    cm2_iq4_nl_f16 => "matmul_iq4_nl_f16_cm2",
    cm2_iq4_nl_f16_f16acc => "matmul_iq4_nl_f16_f16acc_cm2",
    cm2_iq4_xs_f16 => "matmul_iq4_xs_f16_cm2",
    cm2_iq4_xs_f16_f16acc => "matmul_iq4_xs_f16_f16acc_cm2",
});
variant_tests!(mul_mm_id {
    f32_f32 => "matmul_id_f32_f32",
    f16_f32 => "matmul_id_f16_f32",
    f16_f32_f16acc => "matmul_id_f16_f32_f16acc",
    f16_f16 => "matmul_id_f16",
    f16_f16_f16acc => "matmul_id_f16_f16acc",
    bf16 => "matmul_id_bf16",
    q4_0_f32_f16acc => "matmul_id_q4_0_f32_f16acc",
    q4_1_f32_f16acc => "matmul_id_q4_1_f32_f16acc",
    q5_0_f32_f16acc => "matmul_id_q5_0_f32_f16acc",
    q5_1_f32_f16acc => "matmul_id_q5_1_f32_f16acc",
    q8_0_f32_f16acc => "matmul_id_q8_0_f32_f16acc",
    q2_k_f32_f16acc => "matmul_id_q2_k_f32_f16acc",
    q3_k_f32_f16acc => "matmul_id_q3_k_f32_f16acc",
    q4_k_f32_f16acc => "matmul_id_q4_k_f32_f16acc",
    q5_k_f32_f16acc => "matmul_id_q5_k_f32_f16acc",
    q6_k_f32_f16acc => "matmul_id_q6_k_f32_f16acc",
    iq4_nl_f32_f16acc => "matmul_id_iq4_nl_f32_f16acc",
    iq4_xs_f32_f16acc => "matmul_id_iq4_xs_f32_f16acc",
    cm2_f16 => "matmul_id_f16_cm2",
    cm2_f16_f16acc => "matmul_id_f16_f16acc_cm2",
    cm2_bf16 => "matmul_id_bf16_cm2",
    cm2_q4_0_f16 => "matmul_id_q4_0_f16_cm2",
    cm2_q4_1_f16 => "matmul_id_q4_1_f16_cm2",
    cm2_q5_0_f16 => "matmul_id_q5_0_f16_cm2",
    cm2_q5_1_f16 => "matmul_id_q5_1_f16_cm2",
    cm2_q8_0_f16 => "matmul_id_q8_0_f16_cm2",
    cm2_q2_k_f16 => "matmul_id_q2_k_f16_cm2",
    cm2_q3_k_f16 => "matmul_id_q3_k_f16_cm2",
    cm2_q4_k_f16 => "matmul_id_q4_k_f16_cm2",
    cm2_q5_k_f16 => "matmul_id_q5_k_f16_cm2",
    cm2_q6_k_f16 => "matmul_id_q6_k_f16_cm2",
    cm2_iq4_nl_f16 => "matmul_id_iq4_nl_f16_cm2",
    cm2_iq4_xs_f16 => "matmul_id_iq4_xs_f16_cm2",
});

/// The named tests above must cover the kernel table exactly.
#[test]
fn every_variant_in_the_table_has_a_test() {
    let tested: Vec<&str> = [
        wkv7::NAMES,
        mul_mat_vec::NAMES,
        mul_mat_vec_id::NAMES,
        flash_attn::NAMES,
        mul_mm::NAMES,
        mul_mm_id::NAMES,
    ]
    .concat();
    for k in KERNELS {
        for v in (k.variants)() {
            assert!(
                tested.contains(&v.name.as_str()),
                "variant {} has no test in tests/differential.rs",
                v.name
            );
        }
    }
}
