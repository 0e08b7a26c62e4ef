#!/usr/bin/env bash
# Device call 2 (session 23): on top of call 1's v_hum (strides hinted, K/V clamp mode from
# spec constant 4, mask added as a matrix on whole tiles):
#   c_sm    + no shared slope array and no barrier before the key loop (ALiBi slopes computed
#           where used), + the mask through an unchecked layout on the aligned pipeline when
#           the mask holds the workgroup's rows
# Timing copies of c_sm (experiments, not candidates):
#   t_upred  upstream 0.1.109's split-k reduce shader instead of ours
#   t_nored  a split-k reduce that does nothing (wrong results: --time-wrong)
#   t_w      the weights without the mask operand (the bench rows' logits are finite)
#   t_dead   no -inf tests in the weights and the rescale factor (--time-wrong)
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
bash .gl/on-device.sh true
t=$(date +%s)
timeout 110 bash .gl/on-device.sh $V run --shaders $D/c_sm -o flash_attn --variant cm2 --time 90s --out $OUT/run_sm > $OUT/run_sm.log 2>&1
echo "run rc=$? $(( $(date +%s) - t )) s"
grep -E "cases in|findings|worst|FAIL|error" $OUT/run_sm.log | cut -c1-200 | tail -12
rm -f $OUT/run_sm/report.html
b() { # name, limit, shaders, against, extra args
    local n=$1 l=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((l + 30)) bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^(mul_mat_vec|flash_attn)' $OUT/$n.log | cut -c1-200
}
b sm_vs_hum 60 $D/c_sm $D/v_hum -o flash_attn --variant cm2
b upred_vs_sm 40 $D/t_upred $D/c_sm -o flash_attn --variant cm2 --row "N=1 "
b nored_vs_sm 40 $D/t_nored $D/c_sm -o flash_attn --variant cm2 --row "N=1 " --time-wrong
b w_vs_sm 30 $D/t_w $D/c_sm -o flash_attn --variant cm2 --row "N=512"
b dead_vs_sm 30 $D/t_dead $D/c_sm -o flash_attn --variant cm2 --row "N=512" --time-wrong
gzip -f $OUT/*.err
