#!/usr/bin/env bash
# Device call 4 (session 27): mat-vec of the legacy quants with 8 / NUM_COLS chunks per pass
# (v_mv_u8; HEAD has 4 / NUM_COLS) against HEAD (v_head), 3 rounds; then HEAD against upstream
# 0.1.109 on the mat-vec rows below 1.0 in session 20 (q4_0, q8_0, the K-quants) and the MoE
# mat-vec rows, 3 rounds; the mat-vec differential cases of v_mv_u8 first.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
t=$(date +%s)
timeout 80 bash .gl/on-device.sh $V run --shaders $D/v_mv_u8 -o mul_mat_vec --variant 'q4_0,q8_0,q4_1,q5_0,q5_1,iq4_nl,f16' --cases 100 --devices 0,0,0,0 --out $OUT/run > $OUT/run.log 2>&1
echo "run rc=$? $(( $(date +%s) - t )) s"; grep -E "cases in|findings|FAIL|error|, [1-9][0-9]* failed" $OUT/run.log | cut -c1-200 | tail -8
rm -f $OUT/run/report.html $OUT/run/report.jsonl
b() { # name, limit, shaders, against, extra args
    local n=$1 l=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^mul_mat_vec' $OUT/$n.log | cut -c1-200
    gzip -f $OUT/$n.log $OUT/$n.err
}
b u8_vs_head 100 $D/v_mv_u8 $D/v_head -o mul_mat_vec --variant 'q4_0_f32_f32,q8_0_f32_f32' --rounds 3
b head_vs_up 200 $D/v_head $U -o mul_mat_vec --variant 'q4_0_f32_f32,q8_0_f32_f32,q4_k_f32_f32,q5_k_f32_f32,q6_k_f32_f32' --rounds 3
b id_vs_up 80 $D/v_head $U -o mul_mat_vec_id --rounds 3
