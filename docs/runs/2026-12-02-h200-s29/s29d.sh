#!/usr/bin/env bash
# Device call 4 (session 29): q6_K work-order variants on top of the shared scales (the
# working tree, 3499fa8), each against the working tree; then every mat-vec and mat-vec ID
# bench row of the working tree against upstream 0.1.109. 3 rounds each.
OUT=$1
V=.devbin/vkdiff
U=.devbin/upstream-shaders
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
mk() { rm -rf /tmp/$1 && cp -r shaders /tmp/$1; }
b() { # name, limit, tree, against, extra args
    local n=$1 l=$2 tree=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders $tree --against $a "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^mul_mat_vec' $OUT/$n.log | cut -c1-200
}
add() { # tree, define line for q6_K
    sed -i "s/^#define KQ_SHARED_SCALES_MAX_COLS 8/#define KQ_SHARED_SCALES_MAX_COLS 8\n$2/" /tmp/$1/mul_mat_vec_q6_k.comp
}
mk co2; add co2 '#define KQ_COLUMNS_OUTER_FROM 2'
mk ro; add ro '#define KQ_COLUMNS_OUTER_FROM 9'
mk uc2; add uc2 '#define KQ_UNROLL_COLUMNS 2'
for d in co2 ro uc2; do diff shaders/mul_mat_vec_q6_k.comp /tmp/$d/mul_mat_vec_q6_k.comp; done
b co2 40 /tmp/co2 shaders -o mul_mat_vec --variant q6_k_f32_f32 --all --row "4096×4096"
b ro 40 /tmp/ro shaders -o mul_mat_vec --variant q6_k_f32_f32 --all --row "4096×4096"
b uc2 40 /tmp/uc2 shaders -o mul_mat_vec --variant q6_k_f32_f32 --all --row "4096×4096"
b mv_vs_up 260 shaders $U -o mul_mat_vec --rounds 3
b id_vs_up 50 shaders $U -o mul_mat_vec_id --rounds 3
cd $OUT && tar czf call4.tgz *.log *.err && rm -rf *.log *.err
