#!/usr/bin/env bash
# Session 38, call 2: q8_0 mat-vec by quads (shaders/ at the call: mvquad's body for q8_0
# only; mvquad lost on q4_0, q4_1, q5_0) on the H100: cases of every q8_0 mat-vec variant,
# then its rows against upstream 0.1.109 (3 rounds). Then s38a (the scalar mul_mm pair
# staging).
source ci/device-calls.sh "$1" || exit 1
device_run q8quad_run 60 shaders -o mul_mat_vec -o mul_mat_vec_id --variant 'q8_0' --cases 40 --devices 0,0,0,0
device_bench q8quad_up 60 --shaders shaders --against $U -o mul_mat_vec -o mul_mat_vec_id --variant 'q8_0_f32' --rounds 3 | cut -c1-200
