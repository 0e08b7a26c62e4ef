#!/usr/bin/env bash
# Device call 2 (session 31): the cm2 MUL_MAT rows (f16 and q4_0, 4096×512×4096 and
# 14336×512×4096) of the copies base, e2 and e3 (see s31a.sh) against upstream 0.1.109, 3 rounds.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
T=.devbin/trees
bash .gl/on-device.sh true
b() { # name, limit, tree, extra args
    local n=$1 l=$2 t=$3; shift 3
    local s=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders $T/$t --against $U "$@" --rounds 3 --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - s )) s"
    grep -E '^(mul_|summary|stats)' $OUT/$n.log | cut -c1-250
}
for t in base e2 e3; do
    b mm_$t 110 $t -o mul_mm --variant 'matmul_f16_f16acc_cm2,q4_0_f16_f16acc_cm2' --row '×512×4096'
done
tar czf $OUT/s31b.tgz -C $OUT --exclude s31b.tgz . 2>/dev/null
