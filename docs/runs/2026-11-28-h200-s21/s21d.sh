#!/usr/bin/env bash
# Device call 4 (session 21): the per-type unroll (dd615d5) against the shaders before session 21 (v_mb), K-quants with 8 columns.
OUT=$1
bash .gl/on-device.sh true
timeout 150 bash .gl/on-device.sh .devbin/vkdiff bench --against .devbin/v_mb -o mul_mat_vec --all --variant q2_k_f32,q3_k_f32,q4_k_f32,q5_k_f32,q6_k_f32 --row "8 col" --time-limit 120 > $OUT/mv8.log 2>&1
grep -E '^mul_mat_vec' $OUT/mv8.log | cut -c1-200
