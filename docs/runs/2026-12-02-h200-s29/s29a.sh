#!/usr/bin/env bash
# Device call 1 (session 29): compile-time work-order variants of the mat-vec rows still
# below upstream, each timed against HEAD's tree on the same runner (ratio > 1: the variant
# is faster), 3 rounds. Variant trees are copies of shaders/ with one define changed.
OUT=$1
V=.devbin/vkdiff
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
mk() { # name: a fresh copy of the tree in /tmp/NAME
    rm -rf /tmp/$1 && cp -r shaders /tmp/$1
}
b() { # name, limit, tree, extra args
    local n=$1 l=$2 tree=$3; shift 3
    local t=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders $tree --against shaders "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^mul_mat_vec' $OUT/$n.log | cut -c1-200
}
# q6_K: one super-block a pass (upstream's order), and four.
mk q6u1; sed -i 's/^#define KQ_HAS_MIN 0/#define KQ_HAS_MIN 0\n#define KQ_UNROLL 1/' /tmp/q6u1/mul_mat_vec_q6_k.comp
mk q6u4; sed -i 's/^#define KQ_HAS_MIN 0/#define KQ_HAS_MIN 0\n#define KQ_UNROLL 4/' /tmp/q6u4/mul_mat_vec_q6_k.comp
# Block types: 8 chunks a pass with one column (4 with two), and 2 (1).
mk u8; sed -i 's|^const uint UNROLL = NUM_COLS >= 4 ? 1 : 4 / NUM_COLS;|const uint UNROLL = NUM_COLS >= 4 ? 1 : 8 / NUM_COLS;|' /tmp/u8/mul_mat_vec.comp
mk u2; sed -i 's|^const uint UNROLL = NUM_COLS >= 4 ? 1 : 4 / NUM_COLS;|const uint UNROLL = NUM_COLS >= 4 ? 1 : 2 / NUM_COLS;|' /tmp/u2/mul_mat_vec.comp
# q4_K with 2 and 4 columns: one super-block a pass.
mk q4c1; sed -i 's/^#define KQ_UNROLL_COLUMNS 2/#define KQ_UNROLL_COLUMNS 1/' /tmp/q4c1/mul_mat_vec_q4_k.comp
# q5_K with 4 columns: rows outer; one super-block a pass.
mk q5ro; sed -i 's/^#define KQ_COLUMNS_OUTER_FROM 4/#define KQ_COLUMNS_OUTER_FROM 9/' /tmp/q5ro/mul_mat_vec_q5_k.comp
mk q5c1; sed -i 's/^#define KQ_UNROLL_COLUMNS 2/#define KQ_UNROLL_COLUMNS 1/' /tmp/q5c1/mul_mat_vec_q5_k.comp
for d in q6u1 q6u4 u8 u2 q4c1 q5ro q5c1; do diff -r shaders /tmp/$d | head -4; done
b q6u1 60 /tmp/q6u1 -o mul_mat_vec --variant q6_k_f32_f32
b q6u4 60 /tmp/q6u4 -o mul_mat_vec --variant q6_k_f32_f32
b u8 120 /tmp/u8 -o mul_mat_vec --variant q8_0_f32_f32,q4_0_f32_f32,q5_0_f32_f32,iq4_nl_f32_f32 --all --row "1 col"
b u2 120 /tmp/u2 -o mul_mat_vec --variant q8_0_f32_f32,q4_0_f32_f32,q5_0_f32_f32,iq4_nl_f32_f32 --all --row "1 col"
b q4c1 90 /tmp/q4c1 -o mul_mat_vec --variant q4_k_f32_f32 --all
b q5ro 90 /tmp/q5ro -o mul_mat_vec --variant q5_k_f32_f32 --all
b q5c1 90 /tmp/q5c1 -o mul_mat_vec --variant q5_k_f32_f32 --all
gzip -f $OUT/*.err $OUT/*.log
