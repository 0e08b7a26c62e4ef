#!/usr/bin/env bash
# Device call 2 (session 28): the K-quant mat-vec with the min term's B sums summed once per
# column for both rows (columns outer, 8 columns; q2_K, q4_K, q5_K), against HEAD's shaders
# (v_head) and upstream 0.1.109, 3 rounds, after those types' differential cases.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
t=$(date +%s)
timeout 100 bash .gl/on-device.sh $V run --shaders shaders -o mul_mat_vec -o mul_mat_vec_id --variant q2_k,q4_k,q5_k --cases 300 --devices 0,0,0,0 --out $OUT/run > $OUT/run.log 2>&1
echo "run rc=$? $(( $(date +%s) - t )) s"; grep -E "cases in|findings|FAIL|error|, [1-9][0-9]* failed" $OUT/run.log | cut -c1-200 | tail -8
rm -f $OUT/run/report.html; gzip -f $OUT/run/report.jsonl
b() { # name, limit, shaders, against, extra args
    local n=$1 l=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^mul_mat_vec' $OUT/$n.log | cut -c1-200
}
K='mul_mat_vec_q4_k_f32_f32$,mul_mat_vec_q5_k_f32_f32$,mul_mat_vec_q2_k_f32_f32$'
b tree_vs_head 130 shaders $D/v_head -o mul_mat_vec --variant "$K" --all --row '8 col' --rounds 3
b tree_vs_up 200 shaders $U -o mul_mat_vec --variant "$K" --all --rounds 3
gzip -f $OUT/*.err
