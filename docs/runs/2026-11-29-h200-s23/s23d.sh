#!/usr/bin/env bash
# Device call 4 (session 23): v_new2 = the shaders committed (call 3's v_new with the split-k
# reduce's two columns per invocation instead of a loop over column blocks; the case model
# now forces 129-160 splits in one forced split of sixteen); v_x1 = v_new2 with the rescale
# factor and the weights as per-element functions of M_old - M and S - M (matrix differences)
# instead of functions with M as a second operand. The cm2 differential cases of both, side by
# side, then v_x1 against v_new2 and v_new2 against upstream 0.1.109 on every path.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
bash .gl/on-device.sh true
t=$(date +%s)
for v in new2 x1; do
    timeout 110 bash .gl/on-device.sh $V run --shaders $D/v_$v -o flash_attn --variant cm2 --time 95s --out $OUT/run_$v > $OUT/run_$v.log 2>&1 &
done
wait
echo "runs $(( $(date +%s) - t )) s"
for v in new2 x1; do
    echo "== v_$v"; grep -E "cases in|findings|FAIL|error" $OUT/run_$v.log | cut -c1-200 | tail -6
    grep -c "split_k 1[2-6][0-9]" $OUT/run_$v/report.jsonl
    rm -f $OUT/run_$v/report.html; gzip -f $OUT/run_$v/report.jsonl
done
b() { # name, limit, shaders, against, extra args
    local n=$1 l=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^(mul_mat_vec|flash_attn)' $OUT/$n.log | cut -c1-200
}
b x1_vs_new2 50 $D/v_x1 $D/v_new2 -o flash_attn --variant cm2
b new2_vs_up 200 $D/v_new2 $U -o flash_attn
gzip -f $OUT/*.err
