#!/usr/bin/env bash
# Device call 5 (session 28): every mat-vec and mat-vec ID bench row of the committed shaders
# (2b6589a) against upstream 0.1.109, 3 rounds.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
b() { # name, limit, against, extra args
    local n=$1 l=$2 a=$3; shift 3
    local t=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders shaders --against $a "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^mul_mat_vec' $OUT/$n.log | cut -c1-200
}
b mv_vs_up 330 $U -o mul_mat_vec --rounds 3
b id_vs_up 100 $U -o mul_mat_vec_id --rounds 3
gzip -f $OUT/*.err $OUT/*.log
