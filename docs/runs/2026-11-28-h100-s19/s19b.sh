#!/usr/bin/env bash
# Device call (session 19): why K and V straight from memory make the cm2 prefill pipeline
# 5x larger and 2.8x slower (call 1, exp B). Copies of exp B: E = Q as one Br x D matrix
# instead of an array of column chunks; F = K direct, V staged; G = V direct, K staged;
# H = no mask (timing only). U1 = upstream 0.1.109's cm2 shader with K and V declared as f16
# arrays (offsets in elements) instead of byte arrays, against upstream as is. Prefill row,
# 2 rounds each.
OUT=$1
V=.devbin/vkdiff
U=.devbin/upstream-shaders
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
for x in E F G H U1; do
  s=$(date +%s)
  base=$PWD/shaders; [ $x = U1 ] && base=$U
  timeout 80 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$x --against $base --rounds 2 -o flash_attn --variant 'f16_f16_cm2' --row 'N=512' --time-wrong > $OUT/$x.log 2> $OUT/$x.err
  echo "$x bench rc=$? $(( $(date +%s) - s )) s"
  grep -E '^flash_attn ' $OUT/$x.log | cut -c50-240
  grep '^stats' $OUT/$x.log | grep -E '128,64,64' | sed -E 's/Stack Size 0, //' | cut -c1-220
done
gzip -f $OUT/*.err
