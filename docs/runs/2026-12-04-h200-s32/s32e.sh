#!/usr/bin/env bash
# Device call 5 (session 32): the working tree with the finite-V test of cm1's P.V on packed
# f16 bits: cm1 flash-attention cases, then the cm1 rows against upstream 0.1.109.
OUT=$1
W=$(mktemp -d)
U=.devbin/upstream-shaders
V=.devbin/vkdiff
T=.devbin/trees
bash .gl/on-device.sh true
r() { # name, limit, extra args
    local n=$1 l=$2; shift 2
    local s=$(date +%s)
    timeout $l bash .gl/on-device.sh $V run --out $W/$n "$@" > $W/$n.log 2>&1
    echo "$n rc=$? $(( $(date +%s) - s )) s"; grep -E "cases, |cases in|findings" $W/$n.log | head -20
    rm -rf $W/$n/*.html
}
b() { # name, limit, extra args
    local n=$1 l=$2; shift 2
    local s=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench "$@" --time-limit $l > $W/$n.log 2> $W/$n.err
    echo "$n rc=$? $(( $(date +%s) - s )) s"
    grep -E '^(flash_|mul_|summary)|^stats' $W/$n.log | cut -c1-250
}
r cm1_cases 150 --shaders shaders -o flash_attn --variant '_cm1' --cases 60 --devices 0,0,0,0
b cm1_bench 120 --shaders shaders --against $U -o flash_attn --variant 'f32_f16_f16_cm1$' --rounds 3
tar czf $OUT/s32e.tgz -C $W .
