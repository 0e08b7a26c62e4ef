#!/usr/bin/env bash
# Device call (session 16): cm2 flash attention with staged K and V in separate halves of
# shared memory (two barriers a tile instead of four): validate, every cm2 row against upstream
# 0.1.109 (3 rounds), with the pipelines' register counts.
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
grep '^stats' $OUT/fa-cm2.log | grep ours | sed -E 's/Binary Size [0-9]+, //; s/Stack Size 0, //' | cut -c1-200 | head -12
gzip -f $OUT/*.err
