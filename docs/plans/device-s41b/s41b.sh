#!/usr/bin/env bash
# Session 41, call 2 (about 350 s). Patches against shaders/ at the commit that gated the
# f16 A and B prefetch to the large tile.
#   1. The committed scalar/cm1 mul_mm and MUL_MAT_ID as cases (the medium and small tiles now
#      stage without prefetch; the large tile is the form s41a timed).
#   2. mvtail: quad mat-vec (q8_0) in whole passes, then half passes for the rest (the MoE
#      row 128x2048x768 q8_0 was 0.86 of upstream: 192 quads a row, one pass of 512).
#   3. q4kc4: q4_K mat-vec with 4 columns one super-block a pass (s41a's q4kc1: 1.09x at 4
#      columns, 0.96x at 2).
#   4. cm2 q8_0 mul_mm (0.90 / 0.91 of upstream, and ours spills): 4 K steps a pass
#      (cm2q8u4), or per-element stores only (cm2nots).
# Stage (main, clean): UPSTREAM=0.1.109 bash ci/gpu.sh stage &&
# bash ci/stage-trees.sh docs/plans/device-s41b
source ci/device-calls.sh "$1" || exit 1
pack() { tar czf "$1/logs.tgz" -C "$1" logs; }
VL=$(for a in f16_f32 f16_f32_f16acc f32_f16 f32_f32 iq4_nl_f32 iq4_nl_f32_f16acc q4_0_f32 q4_0_f32_f16acc q4_k_f32 q4_k_f32_f16acc q5_1_f32 q5_1_f32_f16acc q6_k_f32 q6_k_f32_f16acc q8_0_f32 q8_0_f32_f16acc; do
    for c in '' _cm1; do printf 'matmul_%s%s$,matmul_id_%s%s$,' $a "$c" $a "$c"; done; done)
QUIET=1 device_run mm_run 150 shaders -o mul_mm -o mul_mm_id --variant "${VL%,}" --cases 8 --devices 0,0,0,0; pack "$1"
grep -E "cases, [1-9][0-9]* failed|error|skipped" "$LOGS"/mm_run.log | cut -c1-160 | head -20
device_bench mvtail 40 --shaders $T/mvtail --against shaders -o mul_mat_vec_id --variant 'q8_0' --rounds 3 | cut -c1-180; pack "$1"
device_bench mvtailu 40 --shaders $T/mvtail --against $U -o mul_mat_vec_id --variant 'q8_0' --rounds 3 | cut -c1-180; pack "$1"
device_bench q4kc4 30 --shaders $T/q4kc4 --against shaders -o mul_mat_vec --variant 'q4_k_f32_f32' --row '4096×4096' --rounds 3 | cut -c1-180; pack "$1"
for t in cm2q8u4 cm2nots; do
    device_bench $t 50 --shaders $T/$t --against shaders -o mul_mm --variant 'q8_0_f16_f16acc_cm2$' --rounds 2 | cut -c1-180; pack "$1"
    grep -h "^stats" "$LOGS"/$t.log | sort -u | cut -c1-200
done
