#!/usr/bin/env bash
# Device call (session 14): the bench rows earlier calls did not reach, against upstream
# 0.1.109 (3 rounds): scalar MUL_MAT_ID q8_0 128×2048×768 and q4_K, mul_mm cm2 q4_0 4096×512×14336.
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
U=.devbin/upstream-shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
run() { # name, timeout, args
  local n=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t bash .gl/on-device.sh $V bench --against $U "$@" > $OUT/$n.log 2> $OUT/$n.err
  echo "$n rc=$? $(( $(date +%s) - s )) s"; grep -E '^mul_mm' $OUT/$n.log | cut -c16-240
}
run mmid-q4k 110 -o mul_mm_id --variant matmul_id_q4_k_f32
run mmid-q8 70 -o mul_mm_id --variant matmul_id_q8_0_f32 --row "2048×768"
run mm-q4cm2 110 -o mul_mm --variant q4_0_f16_f16acc_cm2 --row "4096×512×14336"
gzip -f $OUT/*.err
