#!/usr/bin/env bash
# Device call 1 (session 30): the families not benched since the scalar flash-attention tile
# prefetch (402fe3f) against upstream 0.1.109, on the committed shaders (f8fdf42), 3 rounds:
# flash attention (scalar, cm1, cm2), mul_mm (scalar, cm1, cm2), MUL_MAT_ID and wkv7.
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
    grep -E '^(flash_attn|matmul|mul_mm|rwkv|wkv7)' $OUT/$n.log | cut -c1-220
}
b fa 190 -o flash_attn
b mm 170 -o mul_mm
b mmid 60 -o mul_mm_id
b wkv7 30 -o wkv7
tar czf $OUT/s30a.tgz -C $OUT --exclude s30a.tgz . 2>/dev/null
