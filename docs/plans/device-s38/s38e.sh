#!/usr/bin/env bash
# Session 38, call 3 (about 550 s of device time left, so short): mvq8u16 (q8_0 mat-vec
# quads, 16 a pass with one column instead of 8) against the committed tree and upstream;
# then the rows call 2's time limits left out or left below 1.0, and as many default
# mat-vec rows against upstream as the time allows. The logs are re-packed after each
# step, so a cut-off call still returns what it measured.
source ci/device-calls.sh "$1" || exit 1
pack() { tar czf "$1/logs.tgz" -C "$1" logs; }
device_run u16_run 30 $T/mvq8u16 -o mul_mat_vec -o mul_mat_vec_id --variant 'q8_0' --cases 30 --devices 0,0,0,0; pack "$1"
device_bench u16 40 --shaders $T/mvq8u16 --against shaders -o mul_mat_vec -o mul_mat_vec_id --variant 'q8_0_f32' --rounds 2 | cut -c1-180; pack "$1"
device_bench u16_up 30 --shaders $T/mvq8u16 --against $U -o mul_mat_vec --variant 'q8_0_f32_f32' --row '· 1 col' --rounds 3 | cut -c1-180; pack "$1"
device_bench mm_up 40 --shaders shaders --against $U -o mul_mm --variant 'matmul_q8_0_f32_f16acc$,matmul_f16_f32_f16acc$' --row '4096×512×14336' --rounds 3 | cut -c1-180; pack "$1"
device_bench mmid_up 40 --shaders shaders --against $U -o mul_mm_id --variant 'matmul_id_q4_0_f32_f16acc$,matmul_id_q8_0_f32_f16acc$' --rounds 3 | cut -c1-180; pack "$1"
QUIET=1 device_bench mv_up 80 --shaders shaders --against $U -o mul_mat_vec --rounds 3 > /dev/null; pack "$1"
grep -E '^summary' -A30 "$LOGS"/mv_up.log | cut -c1-160
