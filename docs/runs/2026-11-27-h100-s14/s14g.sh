#!/usr/bin/env bash
# Device call (session 14): cm2 flash attention with the unrolled mask loop: validate, its rows
# against upstream 0.1.109 (3 rounds, statistics), then the mul_mm rows.
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
U=.devbin/upstream-shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
s=$(date +%s)
timeout 60 bash .gl/on-device.sh $V run -o flash_attn --variant cm2 --cases 50 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL' $OUT/val.log | head; rm -rf $OUT/val
s=$(date +%s)
timeout 90 bash .gl/on-device.sh $V bench --against $U -o flash_attn --variant cm2 --time-limit 75 > $OUT/fa-cm2.log 2> $OUT/fa-cm2.err
echo "fa-cm2 rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/fa-cm2.log | cut -c50-240; sed -n '/^summary/,$p' $OUT/fa-cm2.log | grep -v '^stats'
grep '^stats' $OUT/fa-cm2.log | grep -v reduce | grep ours | sed -E 's/Binary Size [0-9]+, //; s/Stack Size 0, //' | cut -c1-200
s=$(date +%s)
timeout 420 bash .gl/on-device.sh $V bench --against $U -o mul_mm --time-limit 390 > $OUT/mm.log 2> $OUT/mm.err
echo "mm rc=$? $(( $(date +%s) - s )) s"
grep -E '^mul_mm ' $OUT/mm.log | cut -c16-240; sed -n '/^summary/,$p' $OUT/mm.log | grep -v '^stats'; grep took $OUT/mm.err | head -3
gzip -f $OUT/*.err
