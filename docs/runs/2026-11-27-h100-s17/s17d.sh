#!/usr/bin/env bash
# Device call (session 17): copies against the working tree.
#   s_after    - scalar: mask, softcap and live flags applied after both keys' dot products
#                (the D=128 pipeline spills 80 B since the mask tile); D=128 rows, 2 rounds
#   cm1_m1     - cm1: one 2-byte mask load per key (bits from the f32 conversion), not two
#   cm1_nomask - cm1 without mask reads (timing only: wrong); prefill row, 1 round
OUT=$1
V=.devbin/vkdiff
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
b() { # name variant row rounds
  s=$(date +%s)
  timeout 150 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$1 --against $PWD/shaders --rounds $4 --time-wrong -o flash_attn --variant "$2" --row "$3" > $OUT/$1.log 2> $OUT/$1.err
  echo "$1 rc=$? $(( $(date +%s) - s )) s"
  grep -E '^flash_attn ' $OUT/$1.log | cut -c50-250
  grep -E '^stats.*ours.*,128,0,8' $OUT/$1.log | cut -c1-200
}
b s_after 'f32_f16_f16$' 'D=128' 2
b cm1_m1 'f16_f16_cm1' 'N=512' 2
b cm1_nomask 'f16_f16_cm1' 'N=512' 1
gzip -f $OUT/*.err
