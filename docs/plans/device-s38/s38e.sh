#!/usr/bin/env bash
# Session 38, call 3 (about 300 s of device time left after failed starts, so short):
# mvq8u16 (q8_0 mat-vec quads, 16 a pass with one column instead of 8) against upstream on
# the one-column rows (its timed results checked, no separate cases); q4_0 mat-vec by quads
# with 8 columns (shaders/ at the call) against upstream; then the rows call 2's time limits
# left out or left below 1.0. The logs are re-packed after each
# step, so a cut-off call still returns what it measured.
source ci/device-calls.sh "$1" || exit 1
pack() { tar czf "$1/logs.tgz" -C "$1" logs; }
device_bench u16_up 30 --shaders $T/mvq8u16 --against $U -o mul_mat_vec --variant 'q8_0_f32_f32' --row '· 1 col' --rounds 3 | cut -c1-180; pack "$1"
device_bench q4q_up 20 --shaders shaders --against $U -o mul_mat_vec --variant 'q4_0_f32_f32' --row '8 col' --rounds 3 | cut -c1-180; pack "$1"
device_bench mm_up 40 --shaders shaders --against $U -o mul_mm --variant 'matmul_q8_0_f32_f16acc$,matmul_f16_f32_f16acc$' --row '4096×512×14336' --rounds 3 | cut -c1-180; pack "$1"
device_bench mmid_up 40 --shaders shaders --against $U -o mul_mm_id --variant 'matmul_id_q4_0_f32_f16acc$,matmul_id_q8_0_f32_f16acc$' --rounds 3 | cut -c1-180; pack "$1"
