#!/usr/bin/env bash
# Device call (session 14): cm2 flash attention with f16 K and V loaded straight into the
# matrices (tensor layouts; no staging, two barriers a tile): validate, then against ours (2 rounds).
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
s=$(date +%s)
timeout 120 bash .gl/on-device.sh $V run --shaders .devbin/exp/ktensor -o flash_attn --variant f16_f16_cm2 --cases 150 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL|^flash_attn ' $OUT/val.log | cut -c1-150 | head -20
for r in prefill decode; do
  row="N=512"; [ $r = decode ] && row="N=1 "
  s=$(date +%s)
  timeout 150 bash .gl/on-device.sh $V bench --shaders .devbin/exp/ktensor --against $PWD/shaders --rounds 2 --time-wrong -o flash_attn --variant f16_f16_cm2 --row "$row" > $OUT/kt-$r.log 2> $OUT/kt-$r.err
  echo "== ktensor $r rc=$? $(( $(date +%s) - s )) s"
  grep -E '^flash_attn ' $OUT/kt-$r.log | cut -c50-240
  grep -E 'WRONG|^  ' $OUT/kt-$r.err | head -8
done
grep '^stats' $OUT/kt-prefill.log | grep -v reduce | sed -E 's/Binary Size [0-9]+, //; s/Stack Size 0, //' | cut -c1-190
gzip -f $OUT/*.err
