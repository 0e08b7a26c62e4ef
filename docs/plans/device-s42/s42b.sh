#!/usr/bin/env bash
# Session 42, call 5 (about 150 s). The full table (calls 2-4) has iq4_nl mat-vec at 0.96 /
# 0.99 / 0.94 of upstream where session 40 had 1.03 / 1.01 / 1.02; the chunk loop's tail
# (176be4d) is the only change to its path since. chunk1 = the chunk loop as before 176be4d:
# cases, then against the committed tree on every chunk type's one-column rows and the q4_0
# MoE row, then against upstream on iq4_nl.
# Stage: UPSTREAM=0.1.109 bash ci/gpu.sh stage && bash ci/stage-trees.sh docs/plans/device-s42
source ci/device-calls.sh "$1" || exit 1
OUT=$1
pack() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
QUIET=1 device_run chunk1_run 40 $T/chunk1 -o mul_mat_vec --variant 'iq4_nl,q4_1,q5_0' --cases 60 --devices 0,0,0,0; pack
device_bench chunk1 90 --shaders $T/chunk1 --against shaders -o mul_mat_vec --variant 'iq4_nl_f32_f32,iq4_xs_f32_f32,q4_1_f32_f32,q5_0_f32_f32,q5_1_f32_f32' --row '1 col' --rounds 3 | cut -c1-180; pack
device_bench chunk1id 30 --shaders $T/chunk1 --against shaders -o mul_mat_vec_id --variant 'q4_0_f32' --rounds 3 | cut -c1-180; pack
device_bench chunk1u 40 --shaders $T/chunk1 --against $U -o mul_mat_vec --variant 'iq4_nl_f32_f32' --rounds 3 | cut -c1-180; pack
