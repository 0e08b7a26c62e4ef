#!/usr/bin/env bash
# Device call 3 (session 28): the K-quant mat-vec's work order with several columns, each tree
# the working tree (B sums once per column) with one type's setting changed, timed against the
# working tree, 3 rounds: q4_K with one super-block a pass (v_q4u1), rows outer with 8 columns
# (v_q4ro, v_q4rou1); q5_K columns outer from 4 columns (v_q5co4, v_q5co4u1), one super-block a
# pass (v_q5u1). Then the differential cases of every variant tree.
OUT=$1
V=.devbin/vkdiff
D=.devbin
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
b() { # name, limit, shaders, against, extra args
    local n=$1 l=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^mul_mat_vec' $OUT/$n.log | cut -c1-200
}
Q4='mul_mat_vec_q4_k_f32_f32$'
Q5='mul_mat_vec_q5_k_f32_f32$'
for v in v_q4u1 v_q4ro v_q4rou1; do b $v 60 $D/$v shaders -o mul_mat_vec --variant "$Q4" --all --row ' col' --rounds 3; done
for v in v_q5co4 v_q5co4u1 v_q5u1; do b $v 60 $D/$v shaders -o mul_mat_vec --variant "$Q5" --all --row ' col' --rounds 3; done
t=$(date +%s)
for v in v_q4u1 v_q4ro v_q4rou1 v_q5co4 v_q5co4u1 v_q5u1; do
    timeout 60 bash .gl/on-device.sh $V run --shaders $D/$v -o mul_mat_vec -o mul_mat_vec_id --variant q4_k,q5_k --cases 200 --devices 0,0,0,0 --out $OUT/run-$v > $OUT/run-$v.log 2>&1
    echo "run $v rc=$? $(grep -E 'cases in' $OUT/run-$v.log) $(grep -cE ' [1-9][0-9]* +[0-9]+ +[0-9]+ +[0-9.]+ ' $OUT/run-$v.log) $(grep -E 'distinct findings' $OUT/run-$v.log)"
    rm -rf $OUT/run-$v
done
mkdir -p $OUT/runs; mv $OUT/run-*.log $OUT/runs/ 2>/dev/null; tar czf $OUT/runs.tgz -C $OUT runs; rm -rf $OUT/runs
gzip -f $OUT/*.err $OUT/*.log
