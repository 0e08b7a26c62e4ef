#!/usr/bin/env bash
# Device call 2 (session 29): q6_K with its group scales shared through shared memory (the
# working tree) against HEAD's tree and upstream 0.1.109; the same switch tried on q2_K and
# q3_K; the uniform pass loop on q4_K/q5_K (unchanged otherwise) against HEAD; block types
# with 8 chunks a pass at one column against upstream; correctness of the changed kernels.
OUT=$1
V=.devbin/vkdiff
H=.devbin/head-shaders
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
mk sh23
sed -i 's/^#define KQ_HAS_MIN 1$/#define KQ_HAS_MIN 1\n#define KQ_SHARED_SCALES 1/' /tmp/sh23/mul_mat_vec_q2_k.comp
sed -i 's/^#define KQ_HAS_MIN 0$/#define KQ_HAS_MIN 0\n#define KQ_SHARED_SCALES 1/' /tmp/sh23/mul_mat_vec_q3_k.comp
mk u8; sed -i 's|^const uint UNROLL = NUM_COLS >= 4 ? 1 : 4 / NUM_COLS;|const uint UNROLL = NUM_COLS >= 4 ? 1 : 8 / NUM_COLS;|' /tmp/u8/mul_mat_vec.comp
diff -r shaders /tmp/sh23; diff -r shaders /tmp/u8
b q6_vs_head 60 shaders $H -o mul_mat_vec --variant q6_k_f32_f32 --all
b q6_vs_up 60 shaders $U -o mul_mat_vec --variant q6_k_f32_f32 --all
b q45_vs_head 80 shaders $H -o mul_mat_vec --variant q4_k_f32_f32,q5_k_f32_f32 --all
b sh23_vs_head 90 /tmp/sh23 $H -o mul_mat_vec --variant q2_k_f32_f32,q3_k_f32_f32 --all
b u8_vs_up 120 /tmp/u8 $U -o mul_mat_vec --variant q8_0_f32_f32,q4_0_f32_f32,q5_0_f32_f32,q4_1_f32_f32,q5_1_f32_f32,iq4_nl_f32_f32,iq4_xs_f32_f32 --row "1 col"
t=$(date +%s)
timeout 150 bash .gl/on-device.sh $V run --shaders shaders -o mul_mat_vec -o mul_mat_vec_id --variant q6_k,q2_k,q3_k --cases 150 --devices 0,0,0,0 --out $OUT/run-sh > $OUT/run-sh.log 2>&1
echo "run-sh rc=$? $(( $(date +%s) - t )) s"; grep -E "cases in|distinct|failed" $OUT/run-sh.log | tail -4
t=$(date +%s)
timeout 100 bash .gl/on-device.sh $V run --shaders /tmp/sh23 -o mul_mat_vec -o mul_mat_vec_id --variant q2_k,q3_k --cases 100 --devices 0,0,0,0 --out $OUT/run-sh23 > $OUT/run-sh23.log 2>&1
echo "run-sh23 rc=$? $(( $(date +%s) - t )) s"; grep -E "cases in|distinct" $OUT/run-sh23.log | tail -3
cd $OUT && tar czf call2.tgz *.log *.err && rm -rf *.log *.err run-sh run-sh23
