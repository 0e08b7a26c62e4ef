#!/usr/bin/env bash
# Device call 3 (session 23): v_new = the shaders to commit: cm2 flash attention with the
# stride hints, K/V clamp mode from spec constant 4, the mask added as a matrix on whole tiles,
# M from the lowest finite value and NMax weights (no -inf tests), no shared slope array; and
# the split-k reduce sharing each split's factor through shared memory (128 invocations).
# First every flash-attention variant's differential cases, then the timings against upstream
# 0.1.109 (every path) and against call 2's c_sm (the reduce's share).
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
bash .gl/on-device.sh true
t=$(date +%s)
timeout 120 bash .gl/on-device.sh $V run --shaders $D/v_new -o flash_attn --time 100s --out $OUT/run_new > $OUT/run_new.log 2>&1
echo "run rc=$? $(( $(date +%s) - t )) s"
grep -E "^flash_attn|cases in|findings|FAIL|error|skipped" $OUT/run_new.log | cut -c1-160 | tail -40
rm -f $OUT/run_new/report.html
b() { # name, limit, shaders, against, extra args
    local n=$1 l=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^(mul_mat_vec|flash_attn)' $OUT/$n.log | cut -c1-200
}
b new_vs_up 220 $D/v_new $U -o flash_attn
b new_vs_sm 40 $D/v_new $D/c_sm -o flash_attn --variant cm2 --row "N=1 "
gzip -f $OUT/*.err
