#!/usr/bin/env bash
# Device call 4 (session 28): the working tree's K-quant mat-vec (B sums once per column; q4_K
# rows outer with one super-block a pass at 8 columns; q5_K columns outer from 4 columns)
# against HEAD's shaders (v_head) and upstream 0.1.109, two q5_K alternatives against the tree
# (v_q5rou1: rows outer, one a pass at 8; v_q5ro8u1: columns outer at 4 only, rows outer with
# one a pass at 8), 3 rounds; the K-quant differential cases first.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
t=$(date +%s)
timeout 100 bash .gl/on-device.sh $V run --shaders shaders -o mul_mat_vec -o mul_mat_vec_id --variant _k_ --cases 300 --devices 0,0,0,0 --out $OUT/run > $OUT/run.log 2>&1
echo "run rc=$? $(( $(date +%s) - t )) s"; grep -E "cases in|findings|FAIL|error|, [1-9][0-9]* failed" $OUT/run.log | cut -c1-200 | tail -8
rm -f $OUT/run/report.html; gzip -f $OUT/run/report.jsonl
b() { # name, limit, shaders, against, extra args
    local n=$1 l=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^mul_mat_vec' $OUT/$n.log | cut -c1-200
}
K='mul_mat_vec_q4_k_f32_f32$,mul_mat_vec_q5_k_f32_f32$'
Q5='mul_mat_vec_q5_k_f32_f32$'
b tree_vs_head 80 shaders $D/v_head -o mul_mat_vec --variant "$K" --all --rounds 3
b tree_vs_up 120 shaders $U -o mul_mat_vec --variant "$K,mul_mat_vec_q2_k_f32_f32$,mul_mat_vec_q3_k_f32_f32$" --all --rounds 3
b q5rou1_vs_tree 60 $D/v_q5rou1 shaders -o mul_mat_vec --variant "$Q5" --all --rounds 3
b q5ro8u1_vs_tree 60 $D/v_q5ro8u1 shaders -o mul_mat_vec --variant "$Q5" --all --rounds 3
mkdir -p $OUT/b; mv $OUT/*.log $OUT/*.err $OUT/b/; tar czf $OUT/bench.tgz -C $OUT b; rm -rf $OUT/b
