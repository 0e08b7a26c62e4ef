#!/usr/bin/env bash
# Prepared in session 38 (no device time left for it; session 38's s38e.sh folded in).
#   cm2q8e: the cm2 q8_0 decode as q4_0's: a 16-bit word load and the byte made an f16 by
#           its bits (no integer-to-float conversion). Session 37 tried words with the
#           conversion (0.86-0.88) and bytes without it (0.89), not both; session 38 showed
#           the spill is not the gap (bench.md). Same values (1024 + u exact in f16).
#   mvq8u16: q8_0 mat-vec, 16 quads a pass with one column instead of 8 (for the long-K
#           4096x14336 row, 0.95 in session 38).
# Then the rows session 38 could not time against upstream: q4_0 mat-vec with 8 columns (by
# quads since 6e8ba0d), mul_mm q8_0 and f16 at 4096x512x14336, scalar MUL_MAT_ID q4_0/q8_0.
# About 250 s. Stage: UPSTREAM=0.1.109 bash ci/gpu.sh stage && bash ci/stage-trees.sh
# docs/plans/device-s39
source ci/device-calls.sh "$1" || exit 1
pack() { tar czf "$1/logs.tgz" -C "$1" logs; }
device_run q8e_run 60 $T/cm2q8e -o mul_mm -o mul_mm_id --variant 'q8_0_f16_cm2,q8_0_f16_f16acc_cm2' --cases 25 --devices 0,0,0,0; pack "$1"
device_bench q8e 40 --shaders $T/cm2q8e --against $U -o mul_mm --variant 'q8_0_f16_f16acc_cm2$' --rounds 3 | cut -c1-180; pack "$1"
device_bench u16_up 30 --shaders $T/mvq8u16 --against $U -o mul_mat_vec --variant 'q8_0_f32_f32' --row '· 1 col' --rounds 3 | cut -c1-180; pack "$1"
device_bench q4q_up 20 --shaders shaders --against $U -o mul_mat_vec --variant 'q4_0_f32_f32' --row '8 col' --rounds 3 | cut -c1-180; pack "$1"
device_bench mm_up 40 --shaders shaders --against $U -o mul_mm --variant 'matmul_q8_0_f32_f16acc$,matmul_f16_f32_f16acc$' --row '4096×512×14336' --rounds 3 | cut -c1-180; pack "$1"
device_bench mmid_up 40 --shaders shaders --against $U -o mul_mm_id --variant 'matmul_id_q4_0_f32_f16acc$,matmul_id_q8_0_f32_f16acc$' --rounds 3 | cut -c1-180; pack "$1"
# Where the quantized mat-vec's time goes (session 38's mvnob/mvnoa ran without --time-wrong,
# so the bench printed no time for their wrong results): without B loads / without qs loads.
for t in mvnob mvnoa; do
    device_bench $t 30 --shaders $T/$t --against shaders -o mul_mat_vec --variant 'q4_0_f32_f32,q8_0_f32_f32' --row '· 1 col' --rounds 1 --time-wrong | cut -c1-180; pack "$1"
done
