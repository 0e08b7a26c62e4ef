#!/usr/bin/env bash
# Device call (session 19): bisecting the cm2 prefill gap from the other side. Copies of
# upstream 0.1.109's cm2 shader (experiments only, never committed), each with one of our
# shader's choices, timed against upstream as is on the prefill row (1 round, --time-wrong):
# U2 = the weights and α by per-element functions that test for −∞ (ours) instead of
# matrix arithmetic; U3 = the mask through a ClampToEdge layout and a per-element function
# that tests −∞ bits and reads the slope from shared memory; U4 = Q staged through shared
# memory by ordinary loads; U6 = all three.
OUT=$1
V=.devbin/vkdiff
U=.devbin/upstream-shaders
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
for x in U2 U3 U4 U6; do
  s=$(date +%s)
  timeout 70 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$x --against $U --rounds 1 -o flash_attn --variant 'f16_f16_cm2' --row 'N=512' --time-wrong > $OUT/$x.log 2> $OUT/$x.err
  echo "$x bench rc=$? $(( $(date +%s) - s )) s"
  grep -E '^flash_attn ' $OUT/$x.log | cut -c50-240
  grep '^stats' $OUT/$x.log | grep -E '128,64,64' | sed -E 's/Stack Size 0, //; s/flash_attn_f32_f16_f16\S* //' | cut -c1-200
done
gzip -f $OUT/*.err
