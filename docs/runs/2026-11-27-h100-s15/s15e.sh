#!/usr/bin/env bash
# Device call (session 15): the committed cm2 shader (f8b1e9c): validate, every cm2 row against
# upstream 0.1.109; then the K/V tensor layouts taking their clamp mode from spec constant 4
# (Clamp: Undefined for the host's aligned pipeline) with K and V direct at every Br (exp/pf)
# and only in 32-row tiles (exp/pg), the prefill row and then the decode rows.
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
U=.devbin/upstream-shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
s=$(date +%s)
timeout 120 bash .gl/on-device.sh $V run -o flash_attn --variant cm2 --cases 50 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL|error' $OUT/val.log | head -20; rm -rf $OUT/val
s=$(date +%s)
timeout 130 bash .gl/on-device.sh $V bench --against $U -o flash_attn --variant cm2 --time-limit 100 > $OUT/fa-cm2.log 2> $OUT/fa-cm2.err
echo "fa-cm2 rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/fa-cm2.log | cut -c50-240; sed -n '/^summary/,$p' $OUT/fa-cm2.log | grep -v '^stats'
for x in pf; do
  s=$(date +%s)
  VKDIFF_SHADERS=$PWD/exp/$x timeout 100 bash .gl/on-device.sh $V bench --against $U -o flash_attn --variant f16_cm2 --row "N=512" --time-limit 80 > $OUT/$x.log 2>/dev/null
  echo "$x rc=$? $(( $(date +%s) - s )) s"
  grep -E '^flash_attn ' $OUT/$x.log | cut -c50-240
  grep '^stats' $OUT/$x.log | grep ours | grep 128,64,64 | sed -E 's/Binary Size [0-9]+, //; s/Stack Size 0, //' | cut -c1-200
done
gzip -f $OUT/*.err
VKDIFF_SHADERS=$PWD/exp/pg timeout 60 bash .gl/on-device.sh $V bench --against $U -o flash_attn --variant f16_cm2 --row "N=1 " --time-limit 45 > $OUT/pg-decode.log 2>/dev/null
echo "pg decode rc=$?"; grep -E '^flash_attn ' $OUT/pg-decode.log | cut -c50-240
