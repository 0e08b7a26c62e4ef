#!/usr/bin/env bash
# Device call 4 (session 24): the committed shaders (7d0081f's mul_mm.comp) against upstream
# 0.1.109, 3 rounds: the scalar q8_0 mul_mm rows call 3's time limit left out, and the scalar
# MUL_MAT_ID rows (mul_mm.comp with MUL_MAT_ID, changed with it).
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
t=$(date +%s)
timeout 120 bash .gl/on-device.sh $V bench --shaders shaders --against $U -o mul_mm --variant 'matmul_q8_0_f32_f16acc$' --time-limit 90 > $OUT/mm_q8_vs_up.log 2> $OUT/mm_q8_vs_up.err
echo "mm rc=$? $(( $(date +%s) - t )) s"
t=$(date +%s)
timeout 250 bash .gl/on-device.sh $V bench --shaders shaders --against $U -o mul_mm_id --variant 'f16acc$' --time-limit 200 > $OUT/mmid_vs_up.log 2> $OUT/mmid_vs_up.err
echo "mmid rc=$? $(( $(date +%s) - t )) s"
grep -E '^mul_mm|^stats|^  ' $OUT/*_vs_up.log | cut -c1-240
gzip -f $OUT/*.err
