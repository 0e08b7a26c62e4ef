#!/usr/bin/env bash
# Session 41, call 1 (prepared in session 40; about 500 s):
#   1. mmtimed: the scalar mul_mm as session 40 timed it (mmabpf: the unaligned fallback inside
#      the unrolled staging loops) against the committed form (aligned quads staged from the
#      registers in an unrolled loop, unaligned ones in the old loop): same speed expected.
#   2. cm1old: cm1 flash attention before the P·V change (67ebd7c) against the committed one,
#      on every cm1 row: the D=64 decode rows are 0.95-0.99 of upstream and were never timed
#      against the old tree.
#   3. The 16 table rows session 40's parts did not reach, against upstream: cm2 q8_0 mul_mm,
#      MUL_MAT_ID q4_K 128x2048x768 and the cm2 MUL_MAT_ID rows, mat-vec ID q8_0 and q4_K.
# Stage (main, clean): UPSTREAM=0.1.109 bash ci/gpu.sh stage &&
# bash ci/stage-trees.sh docs/plans/device-s41
source ci/device-calls.sh "$1" || exit 1
pack() { tar czf "$1/logs.tgz" -C "$1" logs; }
MMV='matmul_f16_f32_f16acc$,matmul_q4_0_f32_f16acc$,matmul_q8_0_f32_f16acc$'
device_bench mmform 90 --shaders shaders --against $T/mmtimed -o mul_mm --variant "$MMV" --rounds 2 | cut -c1-180; pack "$1"
grep -h "^stats" "$LOGS"/mmform.log | sort -u | cut -c1-200
device_bench cm1old 60 --shaders shaders --against $T/cm1old -o flash_attn --variant 'f32_f16_f16_cm1$' --rounds 2 | cut -c1-180; pack "$1"
up() { local n=$1 l=$2; shift 2; device_bench "$n" "$l" --shaders shaders --against $U "$@" --rounds 3 | cut -c1-180; pack "$OUT"; }
OUT=$1
up mmq8cm2 50 -o mul_mm --variant 'q8_0_f16_f16acc_cm2$'
up mmidk 30 -o mul_mm_id --variant 'matmul_id_q4_k_f32_f16acc$' --row '2048×768'
up mmidcm2 170 -o mul_mm_id --variant '_cm2'
up mvidrest 70 -o mul_mat_vec_id --variant 'q8_0,q4_k'
# 4. K-quant mat-vec rows below upstream on the H100 (q6_K 14336x4096 1 col 0.93, q4_K 2 / 4
#    columns 0.95 / 0.96): q6_K one super-block a pass (q6u1) or per-thread scales (q6ns),
#    q4_K one super-block a pass with 2-4 columns (q4kc1); against the committed tree.
for t in q6u1 q6ns; do
    device_bench $t 30 --shaders $T/$t --against shaders -o mul_mat_vec --variant 'q6_k_f32_f32' --rounds 2 | cut -c1-180; pack "$1"
done
device_bench q4kc1 30 --shaders $T/q4kc1 --against shaders -o mul_mat_vec --variant 'q4_k_f32_f32' --row '4096×4096' --rounds 2 | cut -c1-180; pack "$1"
