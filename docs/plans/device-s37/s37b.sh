#!/usr/bin/env bash
# Session 37: the H100 baseline of the matrix-matrix rows last measured below 1.0 on the H200
# (session 30/32: scalar q4_0 0.87-0.98, scalar q8_0 0.92-1.04, cm2 q8_0 0.89-0.91), committed
# tree against upstream 0.1.109, 3 rounds. Runs after s37a in the same call.
source ci/device-calls.sh "$1" || exit 1
device_bench mm_base 150 --shaders shaders --against $U -o mul_mm --variant 'matmul_q4_0_f32_f16acc$,matmul_q8_0_f32_f16acc$,q8_0_f16_f16acc_cm2$' --rounds 3
