#!/usr/bin/env bash
# Session 40, call 2: mmabpf (f16 A and aligned B prefetched a K step ahead; call 1: the
# scalar f16 rows 2.05 / 1.13 / 2.15x and q4_0 1.93 / 1.19x against the committed tree) run
# as cases on the scalar and cm1 variants of 8 A types, then every scalar mul_mm and
# MUL_MAT_ID row against upstream, 3 rounds. Stage as s40a.sh.
source ci/device-calls.sh "$1" || exit 1
pack() { tar czf "$1/logs.tgz" -C "$1" logs; }
VL='matmul_f16_f32$,matmul_f16_f32_cm1$,matmul_f16_f32_f16acc$,matmul_f16_f32_f16acc_cm1$,matmul_f32_f16$,matmul_f32_f16_cm1$,matmul_f32_f32$,matmul_f32_f32_cm1$,matmul_id_f16_f32$,matmul_id_f16_f32_cm1$,matmul_id_f16_f32_f16acc$,matmul_id_f16_f32_f16acc_cm1$,matmul_id_f32_f32$,matmul_id_f32_f32_cm1$,matmul_id_iq4_nl_f32_f16acc$,matmul_id_iq4_nl_f32_f16acc_cm1$,matmul_id_q4_0_f32_f16acc$,matmul_id_q4_0_f32_f16acc_cm1$,matmul_id_q4_k_f32_f16acc$,matmul_id_q4_k_f32_f16acc_cm1$,matmul_id_q5_1_f32_f16acc$,matmul_id_q5_1_f32_f16acc_cm1$,matmul_id_q6_k_f32_f16acc$,matmul_id_q6_k_f32_f16acc_cm1$,matmul_id_q8_0_f32_f16acc$,matmul_id_q8_0_f32_f16acc_cm1$,matmul_iq4_nl_f32$,matmul_iq4_nl_f32_cm1$,matmul_iq4_nl_f32_f16acc$,matmul_iq4_nl_f32_f16acc_cm1$,matmul_q4_0_f32$,matmul_q4_0_f32_cm1$,matmul_q4_0_f32_f16acc$,matmul_q4_0_f32_f16acc_cm1$,matmul_q4_k_f32$,matmul_q4_k_f32_cm1$,matmul_q4_k_f32_f16acc$,matmul_q4_k_f32_f16acc_cm1$,matmul_q5_1_f32$,matmul_q5_1_f32_cm1$,matmul_q5_1_f32_f16acc$,matmul_q5_1_f32_f16acc_cm1$,matmul_q6_k_f32$,matmul_q6_k_f32_cm1$,matmul_q6_k_f32_f16acc$,matmul_q6_k_f32_f16acc_cm1$,matmul_q8_0_f32$,matmul_q8_0_f32_cm1$,matmul_q8_0_f32_f16acc$,matmul_q8_0_f32_f16acc_cm1$'
QUIET=1 device_run mmabpf_run 150 $T/mmabpf -o mul_mm -o mul_mm_id --variant "$VL" --cases 8 --devices 0,0,0,0; pack "$1"
grep -E "cases, [1-9][0-9]* failed|error|skipped" "$LOGS"/mmabpf_run.log | cut -c1-160 | head -20
device_bench mmabpf_up 150 --shaders $T/mmabpf --against $U -o mul_mm --variant 'matmul_f16_f32_f16acc$,matmul_q4_0_f32_f16acc$,matmul_q8_0_f32_f16acc$' --rounds 3 | cut -c1-180; pack "$1"
grep -h "^stats" "$LOGS"/mmabpf_up.log | sort -u | cut -c1-200
device_bench mmidabpf_up 80 --shaders $T/mmabpf --against $U -o mul_mm_id --variant 'matmul_id_q4_0_f32_f16acc$,matmul_id_q8_0_f32_f16acc$,matmul_id_f16_f32_f16acc$' --rounds 3 | cut -c1-180; pack "$1"
