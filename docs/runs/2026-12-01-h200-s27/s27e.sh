#!/usr/bin/env bash
# Device call 5 (session 27): q6_K mat-vec with 1 and 4 super-blocks per pass with one column
# (v_q6u1, v_q6u4; HEAD has 2) against HEAD (v_head), 3 rounds; then HEAD against upstream
# 0.1.109 on the MoE mat-vec rows call 4's time limit left out.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
b() { # name, limit, shaders, against, extra args
    local n=$1 l=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^mul_mat_vec' $OUT/$n.log | cut -c1-200
    gzip -f $OUT/$n.log $OUT/$n.err
}
b q6u1_vs_head 60 $D/v_q6u1 $D/v_head -o mul_mat_vec --variant 'q6_k_f32_f32' --rounds 3
b q6u4_vs_head 60 $D/v_q6u4 $D/v_head -o mul_mat_vec --variant 'q6_k_f32_f32' --rounds 3
b id_vs_up 110 $D/v_head $U -o mul_mat_vec_id --variant 'q8_0,q4_k' --rounds 3
for s in $D/v_q6u1 $D/v_q6u4; do
    n=$(basename $s)
    timeout 60 bash .gl/on-device.sh $V run --shaders $s -o mul_mat_vec --variant q6_k --cases 200 --devices 0,0,0,0 --out $OUT/run-$n > $OUT/run-$n.log 2>&1
    echo "run $n rc=$?"; grep -E 'cases in|, [1-9][0-9]* failed' $OUT/run-$n.log | head -5
    rm -rf $OUT/run-$n
done
