#!/usr/bin/env bash
# Device call (session 17): cm1's grouped P·V with P read 4 weights a load, fma in ACC_TYPE, and
# the zero-weight select only where a lane's V is not finite (working tree): validate cm1, then
# every cm1 row against upstream 0.1.109 (3 rounds). Then two scalar copies against the working
# tree on the prefill row (2 rounds): s_premul (the staged mask multiplied by the slope, −∞
# kept) and s_bits (s_premul with the live flags as bits of one word).
OUT=$1
V=.devbin/vkdiff
U=.devbin/upstream-shaders
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V run -o flash_attn --variant cm1 --cases 80 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL|error|dst\[' $OUT/val.log | head -20; rm -rf $OUT/val/report.html
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V bench --against $U --rounds 3 -o flash_attn --variant 'f16_f16_cm1' > $OUT/cm1.log 2> $OUT/cm1.err
echo "cm1 rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/cm1.log | cut -c50-250; grep -E '^stats' $OUT/cm1.log | cut -c1-200
for x in s_premul s_bits; do
  s=$(date +%s)
  timeout 100 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$x --against $PWD/shaders --rounds 2 -o flash_attn --variant 'f32_f16_f16$' --row "N=512" > $OUT/$x.log 2> $OUT/$x.err
  echo "$x rc=$? $(( $(date +%s) - s )) s"
  grep -E '^flash_attn ' $OUT/$x.log | cut -c50-250
  grep -E '^stats.*ours.*,128,0,8' $OUT/$x.log | cut -c1-200
done
gzip -f $OUT/*.err
