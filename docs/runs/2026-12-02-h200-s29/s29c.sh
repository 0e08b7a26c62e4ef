#!/usr/bin/env bash
# Device call 3 (session 29): the shared-scales tree (q6_K up to 8 columns, q2_K up to 4,
# q3_K up to 2; uniform pass loop for every K-quant) against upstream 0.1.109 and HEAD,
# 3 rounds, every column count; then vkdiff mutate over the new and changed lines of
# mul_mat_vec_superblock.comp (q6_K, mat-vec and mat-vec ID, 40 cases).
OUT=$1
V=.devbin/vkdiff
H=.devbin/head-shaders
U=.devbin/upstream-shaders
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
b() { # name, limit, against, extra args
    local n=$1 l=$2 a=$3; shift 3
    local t=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders shaders --against $a "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^mul_mat_vec' $OUT/$n.log | cut -c1-200
}
b kq_vs_up 150 $U -o mul_mat_vec --variant q2_k_f32_f32,q3_k_f32_f32,q6_k_f32_f32 --all
b kq_vs_head 150 $H -o mul_mat_vec --variant q2_k_f32_f32,q3_k_f32_f32,q4_k_f32_f32,q5_k_f32_f32,q6_k_f32_f32 --all
b id_vs_up 60 $U -o mul_mat_vec_id --variant q2_k,q3_k,q6_k
t=$(date +%s)
timeout 300 bash .gl/on-device.sh $V mutate --shaders shaders -o mul_mat_vec -o mul_mat_vec_id --variant q6_k --cases 40 --time 270s --out $OUT/mutate  --file mul_mat_vec_superblock.comp:86 --file mul_mat_vec_superblock.comp:87 --file mul_mat_vec_superblock.comp:88 --file mul_mat_vec_superblock.comp:89 --file mul_mat_vec_superblock.comp:90 --file mul_mat_vec_superblock.comp:91 --file mul_mat_vec_superblock.comp:92 --file mul_mat_vec_superblock.comp:93 --file mul_mat_vec_superblock.comp:94 --file mul_mat_vec_superblock.comp:95 --file mul_mat_vec_superblock.comp:96 --file mul_mat_vec_superblock.comp:97 --file mul_mat_vec_superblock.comp:98 --file mul_mat_vec_superblock.comp:99 --file mul_mat_vec_superblock.comp:100 --file mul_mat_vec_superblock.comp:101 --file mul_mat_vec_superblock.comp:102 --file mul_mat_vec_superblock.comp:103 --file mul_mat_vec_superblock.comp:104 --file mul_mat_vec_superblock.comp:105 --file mul_mat_vec_superblock.comp:106 --file mul_mat_vec_superblock.comp:107 --file mul_mat_vec_superblock.comp:108 --file mul_mat_vec_superblock.comp:109 --file mul_mat_vec_superblock.comp:110 --file mul_mat_vec_superblock.comp:111 --file mul_mat_vec_superblock.comp:112 --file mul_mat_vec_superblock.comp:113 --file mul_mat_vec_superblock.comp:114 --file mul_mat_vec_superblock.comp:115 --file mul_mat_vec_superblock.comp:116 --file mul_mat_vec_superblock.comp:117 --file mul_mat_vec_superblock.comp:118 --file mul_mat_vec_superblock.comp:135 --file mul_mat_vec_superblock.comp:136 --file mul_mat_vec_superblock.comp:137 --file mul_mat_vec_superblock.comp:138 --file mul_mat_vec_superblock.comp:139 --file mul_mat_vec_superblock.comp:140 --file mul_mat_vec_superblock.comp:141 --file mul_mat_vec_superblock.comp:142 --file mul_mat_vec_superblock.comp:143 --file mul_mat_vec_superblock.comp:234 --file mul_mat_vec_superblock.comp:235 --file mul_mat_vec_superblock.comp:236 --file mul_mat_vec_superblock.comp:237 --file mul_mat_vec_superblock.comp:238 --file mul_mat_vec_superblock.comp:239 --file mul_mat_vec_superblock.comp:240 --file mul_mat_vec_superblock.comp:241 --file mul_mat_vec_superblock.comp:242 --file mul_mat_vec_superblock.comp:243 > $OUT/mutate.log 2>&1
echo "mutate rc=$? $(( $(date +%s) - t )) s"; tail -40 $OUT/mutate.log
cd $OUT && tar czf call3.tgz *.log *.err mutate && rm -rf *.log *.err mutate
