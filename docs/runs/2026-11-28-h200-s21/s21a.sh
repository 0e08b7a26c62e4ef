#!/usr/bin/env bash
# Device call 1 (session 21): the word-wise q4_K/q5_K scales (tree v_a) against the committed
# shaders (v_base) and upstream 0.1.109, and two unroll experiments on top of v_a:
# v_b (KQ_UNROLL 4 super-blocks per pass with one column), v_c (the unroll with several columns).
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
bash .gl/on-device.sh true
bash .gl/on-device.sh $V devices > $OUT/devices.txt 2>&1
grep -i "preserve\|float" $OUT/devices.txt | head
b() { # name, shaders, against, extra args
    local n=$1 s=$2 a=$3; shift 3
    local t=$(date +%s)
    timeout 120 bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" --time-limit 100 > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^mul_mat_vec' $OUT/$n.log | cut -c1-200
}
b a_vs_up $D/v_a $U -o mul_mat_vec -o mul_mat_vec_id --variant q4_k_f32,q5_k_f32
b a_vs_base $D/v_a $D/v_base -o mul_mat_vec -o mul_mat_vec_id --variant q4_k_f32,q5_k_f32
b b_vs_a $D/v_b $D/v_a -o mul_mat_vec --variant q4_k_f32,q5_k_f32,q6_k_f32,q2_k_f32,q3_k_f32 --row "· 1 col"
b c_vs_a $D/v_c $D/v_a -o mul_mat_vec --variant q4_k_f32 --row "col"
t=$(date +%s)
timeout 100 bash .gl/on-device.sh $V run --shaders $D/v_a -o mul_mat_vec -o mul_mat_vec_id --variant q4_k,q5_k --cases 200 --out $OUT/run > $OUT/run.log 2>&1
echo "run rc=$? $(( $(date +%s) - t )) s"; tail -4 $OUT/run.log
gzip -f $OUT/*.err
