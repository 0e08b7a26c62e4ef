#!/usr/bin/env bash
# Device call 2 (session 21): 8-column q4_K experiments on top of v_c (v_a's word-wise scales
# plus 2 super-blocks per pass with several columns): v_d rows outer, v_e the next column's B
# loaded before the current column's arithmetic, v_g rows outer with one super-block per pass;
# then v_c against upstream 0.1.109 on the K-quant rows.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
bash .gl/on-device.sh true
b() { # name, shaders, against, extra args
    local n=$1 s=$2 a=$3; shift 3
    local t=$(date +%s)
    timeout 150 bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" --time-limit 130 > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^mul_mat_vec' $OUT/$n.log | cut -c1-200
}
for v in d e g; do
    b ${v}_vs_c $D/v_$v $D/v_c -o mul_mat_vec --variant q4_k_f32 --row "8 col"
done
b c_vs_up $D/v_c $U -o mul_mat_vec -o mul_mat_vec_id --variant q4_k_f32,q5_k_f32,q6_k_f32,q2_k_f32,q3_k_f32
gzip -f $OUT/*.err
