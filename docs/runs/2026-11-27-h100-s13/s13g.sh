#!/usr/bin/env bash
# Device call (session 13): flash_attn cm1 with every loop over Of unrolled: validate (20 cases
# a variant), bench the cm1 decode rows against upstream 0.1.109 (3 rounds) with statistics.
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
U=.devbin/upstream-shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
s=$(date +%s)
timeout 60 bash .gl/on-device.sh $V run -o flash_attn --variant cm1 --cases 20 --jobs 8 --shrink-budget 4 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; s=$(date +%s)
grep -E 'cases in|distinct|^FAIL' $OUT/val.log
timeout 100 bash .gl/on-device.sh $V bench --against $U -o flash_attn --variant cm1 --row "N=1 " --time-limit 80 > $OUT/fa.log 2> $OUT/fa.err
echo "fa rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/fa.log | cut -c1-200; sed -n '/^summary/,$p' $OUT/fa.log | grep -v '^stats'
grep '^stats' $OUT/fa.log | sed -E 's/Binary Size [0-9]+, //; s/Stack Size 0, //' | cut -c1-200
gzip -f $OUT/*.err
