#!/usr/bin/env bash
# Queued by session 42 (about 250 s), for rows still below upstream 0.1.109 in
# docs/runs/2026-12-06-s42/h100-table.md. Patches against shaders/ at the commit that adds
# this file. Stage (main, clean): UPSTREAM=0.1.109 bash ci/gpu.sh stage &&
# bash ci/stage-trees.sh docs/plans/device-s43; run with carry [".gl", ".devbin"].
#   cm2q8u16  cm2 q8_0 mul_mm, 16 K steps a pass (8 now; 1 / 2 / 8 ran 0.70 / 0.79 / 0.90 of upstream)
#   cm2q8ba   cm2 mul_mm, B's tensor load issued before A's in each K step (every type)
#   q4kco2    q4_K mat-vec with 2 columns, columns outer (one B load per column for both rows)
#   q8chunk1  q8_0 mat-vec with one column by 8-element chunks instead of quads (4096×14336: 0.97)
source ci/device-calls.sh "$1" || exit 1
OUT=$1
pack() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
for t in cm2q8u16 cm2q8ba; do
    QUIET=1 device_run ${t}_run 40 $T/$t -o mul_mm --variant 'q8_0_f16,q4_0_f16,f16_f16acc_cm2' --cases 40 --devices 0,0,0,0; pack
    device_bench $t 60 --shaders $T/$t --against shaders -o mul_mm --variant 'q8_0_f16_f16acc_cm2$,f16_f16acc_cm2$' --row '×512×4096' --rounds 3 | cut -c1-180; pack
done
QUIET=1 device_run q4kco2_run 20 $T/q4kco2 -o mul_mat_vec --variant q4_k --cases 60 --devices 0,0,0,0
device_bench q4kco2 30 --shaders $T/q4kco2 --against shaders -o mul_mat_vec --variant 'q4_k_f32_f32' --row 'col' --rounds 3 | cut -c1-180; pack
QUIET=1 device_run q8chunk1_run 20 $T/q8chunk1 -o mul_mat_vec --variant q8_0 --cases 60 --devices 0,0,0,0
device_bench q8chunk1 30 --shaders $T/q8chunk1 --against shaders -o mul_mat_vec --variant 'q8_0_f32_f32' --row '1 col' --rounds 3 | cut -c1-180; pack
grep -h "^stats" "$LOGS"/cm2q8*.log | grep q8_0 | sort -u | cut -c1-220
# q5_K's one-column rows since e64134a (four super-blocks a pass), against upstream; q6_K beside it
device_bench q5k_up 40 --against $U -o mul_mat_vec --variant 'q5_k_f32_f32$,q6_k_f32_f32$' --row '1 col' --rounds 3 | cut -c1-180; pack
