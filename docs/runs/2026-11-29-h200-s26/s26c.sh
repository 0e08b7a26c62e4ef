#!/usr/bin/env bash
# Device call 3 (session 26): HEAD's shaders (467d573: mul_mm's warp split and constant
# quantized-A alignment) against upstream 0.1.109 on the scalar mul_mm rows, 3 rounds.
OUT=$1
V=.devbin/vkdiff
D=.devbin
U=.devbin/upstream-shaders
bash .gl/on-device.sh true
b() { # name limit shaders against args...
    local name=$1 limit=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((limit + 40)) bash .gl/on-device.sh $V bench --shaders $s --against $a --time-limit $limit "$@" > $OUT/$name.log 2> $OUT/$name.err
    echo "$name rc=$? $(( $(date +%s) - t )) s"
    grep -E '^mul_mm|summary|^  ' $OUT/$name.log | cut -c1-230
}
b mm_vs_up 330 $D/v_head $U -o mul_mm --variant 'q4_0_f32_f16acc$,q8_0_f32_f16acc$,matmul_f16_f32_f16acc$' --rounds 3
gzip -f $OUT/*.err $OUT/*.log
