#!/usr/bin/env bash
# Device call 2 (session 30): the mul_mm and MUL_MAT_ID rows call 1's time limits left out
# (scalar q8_0, every cm2 row; MUL_MAT_ID but the f16 scalar rows), against upstream 0.1.109
# on the committed shaders (f8fdf42), 3 rounds.
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
    grep -E '^(mul_mm|summary|  mul)' $OUT/$n.log | cut -c1-220
}
b mm 240 -o mul_mm --variant 'q8_0_f32_f16acc$,_cm2'
b mmid 230 -o mul_mm_id --variant 'q4_0,q8_0,q4_k,_cm2'
tar czf $OUT/s30b.tgz -C $OUT --exclude s30b.tgz . 2>/dev/null
