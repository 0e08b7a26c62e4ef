#!/usr/bin/env bash
# Device call (session 17): where the scalar flash-attention prefill row's time goes. Copies of
# the committed scalar shader under .devbin/exp/, each timed against the committed tree on the
# prefill row (N=512 KV=4096 D=128, a finite position mask), 2 rounds:
#   nosel  - P·V as a plain fma (no select on a zero weight)
#   nomask - no mask read at all (timing only: wrong)
#   nolive - nosel and no live flags (right only where every key is live, as on this row)
#   bare   - all three
# then the committed tree against upstream 0.1.109 on the same row for reference.
OUT=$1
V=.devbin/vkdiff
U=.devbin/upstream-shaders
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
for x in nosel nomask nolive bare; do
  s=$(date +%s)
  timeout 120 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$x --against $PWD/shaders --rounds 2 --time-wrong -o flash_attn --variant 'f32_f16_f16$' --row "N=512" > $OUT/$x.log 2> $OUT/$x.err
  echo "$x rc=$? $(( $(date +%s) - s )) s"
  grep -E '^flash_attn ' $OUT/$x.log | grep -v cm | cut -c50-250
  grep -E '^stats.*ours.*128,8,32,128' $OUT/$x.log | cut -c1-200
done
s=$(date +%s)
timeout 120 bash .gl/on-device.sh $V bench --against $U --rounds 2 -o flash_attn --variant 'f32_f16_f16$' --row "N=512" > $OUT/up.log 2> $OUT/up.err
echo "up rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/up.log | cut -c50-250; grep -E '^stats' $OUT/up.log | cut -c1-200
gzip -f $OUT/*.err
