#!/usr/bin/env bash
# Device call 4 (session 32): cm1 P.V with the finite-V test made subgroup-uniform (vote),
# and also fetching K at the tile start (votena): cases, then the cm1 rows against the
# working tree (call 3's).
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
for t in vote votena; do
    r ${t}_cases 60 --shaders $T/$t -o flash_attn --variant '_cm1' --cases 50 --devices 0,0,0,0
    b ${t}_bench 70 --shaders $T/$t --against shaders -o flash_attn --variant 'f32_f16_f16_cm1$' --row "N=512" --rounds 3
    b ${t}_dec 40 --shaders $T/$t --against shaders -o flash_attn --variant 'f32_f16_f16_cm1$' --row "D=64" --rounds 3
done
tar czf $OUT/s32d.tgz -C $W .
