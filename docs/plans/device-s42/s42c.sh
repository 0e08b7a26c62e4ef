#!/usr/bin/env bash
# Session 42, call 6 (about 150 s): one-column mat-vec rows below upstream in the full table,
# each try against the committed tree (3 rounds): q6_K and q5_K with 4 super-blocks a pass
# (q6u4, q5u4; KQ_UNROLL 2 now), q8_0 with 32 quads a pass (q8u32; 16 now).
# Stage: UPSTREAM=0.1.109 bash ci/gpu.sh stage, then .devbin/trees/NAME = shaders/ (at 8825c18)
# with NAME.patch applied for q6u4, q5u4, q8u32; cp s42c.sh .devbin/
source ci/device-calls.sh "$1" || exit 1
OUT=$1
pack() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
try() { local t=$1 v=$2; QUIET=1 device_run ${t}_run 20 $T/$t -o mul_mat_vec --variant "$v" --cases 40 --devices 0,0,0,0; device_bench $t 40 --shaders $T/$t --against shaders -o mul_mat_vec --variant "${v}_f32_f32" --row '1 col' --rounds 3 | cut -c1-180; pack; }
try q6u4 q6_k
try q5u4 q5_k
try q8u32 q8_0
