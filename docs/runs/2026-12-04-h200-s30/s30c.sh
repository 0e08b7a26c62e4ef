#!/usr/bin/env bash
# Device call 3 (session 30): the last MUL_MAT_ID cm2 rows call 2's limit left out, the
# single-token MUL_MAT_ID rows and the mat-vec rows (default set), against upstream 0.1.109 on
# the committed shaders (mat-vec unchanged since 3499fa8), 3 rounds.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
b() { # name, limit, extra args
    local n=$1 l=$2; shift 2
    local t=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders shaders --against $U "$@" --rounds 3 --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^(mul_|summary|  mul)' $OUT/$n.log | cut -c1-220
}
b mmid 70 -o mul_mm_id --variant 'q8_0_f16_cm2,q4_k_f16_cm2' --row '2048×768'
b mmid2 50 -o mul_mm_id --variant 'q4_k_f16_cm2' --row '768×2048'
b mvid 80 -o mul_mat_vec_id
b mv 270 -o mul_mat_vec
tar czf $OUT/s30c.tgz -C $OUT --exclude s30c.tgz . 2>/dev/null
