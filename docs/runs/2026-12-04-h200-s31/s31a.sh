#!/usr/bin/env bash
# Device call 1 (session 31): copies of the cm2 matmul shader (.devbin/trees/: base = HEAD's
# shaders/, e1 = MUL_MAT_ID gather with slot % ne11 stored at gather time, the match count in a
# register, one K loop; e2 = e1 + MUL_MAT's K loop not unrolled; e3 = e1 + MUL_MAT unrolled by
# 2 BK instead of 256). First each copy's cm2 cases on the H200, then the MUL_MAT_ID cm2 rows
# of e1 against upstream 0.1.109, 3 rounds.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
T=.devbin/trees
bash .gl/on-device.sh true
c() { # name, limit, tree, extra args
    local n=$1 l=$2 t=$3; shift 3
    local s=$(date +%s)
    timeout $l bash .gl/on-device.sh $V run --shaders $T/$t "$@" --out $OUT/$n > $OUT/$n.log 2>&1
    echo "$n rc=$? $(( $(date +%s) - s )) s"; tail -4 $OUT/$n.log | cut -c1-200
}
b() { # name, limit, tree, extra args
    local n=$1 l=$2 t=$3; shift 3
    local s=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders $T/$t --against $U "$@" --rounds 3 --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - s )) s"
    grep -E '^(mul_|summary|stats)' $OUT/$n.log | cut -c1-250
}
c e1_id 110 e1 -o mul_mm_id --variant _cm2 --cases 25
c e2_mm 80 e2 -o mul_mm --variant _cm2 --cases 25
c e3_mm 80 e3 -o mul_mm --variant _cm2 --cases 25
b e1_idb 110 e1 -o mul_mm_id --variant 'f16_f16acc_cm2,q4_0_f16_cm2'
tar czf $OUT/s31a.tgz -C $OUT --exclude s31a.tgz . 2>/dev/null
