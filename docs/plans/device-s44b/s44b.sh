#!/usr/bin/env bash
# Session 44, call 1 (about 450 s): the super-block mat-vec's shared scales loaded one pass
# ahead (sbpre: q2_K, q3_K, q6_K; sbpre1: the same with q6_K at one super-block a pass, 57
# registers in session 41's q6u1), for the q6_K 14336×4096 row (0.92 of upstream: ours 85
# registers, upstream 63, and a pass waits on its scale loads before its quant loads issue).
# Then s44a's first three parts (MUL_MAT_ID q8_0 cm2 cases, cm2 rows against upstream).
# Stage (main, clean): UPSTREAM=0.1.109 bash ci/gpu.sh stage && bash ci/stage-trees.sh docs/plans/device-s44 docs/plans/device-s44b
# Run with carry [".gl", ".devbin"]: bash .devbin/s44b.sh $OUT
source ci/device-calls.sh "$1" || exit 1
OUT=$1
pack() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
for t in sbpre sbpre1; do
    QUIET=1 device_run ${t}_run 30 $T/$t -o mul_mat_vec -o mul_mat_vec_id --variant 'q2_k,q3_k,q6_k' --cases 40 --devices 0,0; pack
done
device_bench sbpre 60 --shaders $T/sbpre --against shaders -o mul_mat_vec --variant 'q6_k_f32_f32,q2_k_f32_f32,q3_k_f32_f32' --rounds 3 | cut -c1-180; pack
device_bench sbpre1 25 --shaders $T/sbpre1 --against shaders -o mul_mat_vec --variant 'q6_k_f32_f32' --rounds 3 | cut -c1-180; pack
device_bench sbpre_up 25 --shaders $T/sbpre --against $U -o mul_mat_vec --variant 'q6_k_f32_f32' --rounds 3 | cut -c1-180; pack
QUIET=1 device_run id_q8_run 40 shaders -o mul_mm_id --variant 'q8_0_f16_cm2,q8_0_f16_f16acc_cm2' --cases 40 --devices 0,0; pack
device_bench mm_cm2 120 --shaders shaders --against $U -o mul_mm --variant 'q8_0_f16_f16acc_cm2$,q4_0_f16_f16acc_cm2$' --rounds 3 | cut -c1-180; pack
device_bench mmid_cm2 90 --shaders shaders --against $U -o mul_mm_id --variant 'id_q8_0_f16_cm2$,id_q4_k_f16_cm2$' --rounds 3 | cut -c1-180; pack
