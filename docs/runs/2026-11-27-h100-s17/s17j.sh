#!/usr/bin/env bash
# Device call (session 17): every flash-attention row (scalar, cm1, cm2; decode and prefill) at
# a52112f against upstream 0.1.109, 3 rounds, after a short validation of every path.
OUT=$1
V=.devbin/vkdiff
U=.devbin/upstream-shaders
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
s=$(date +%s)
timeout 100 bash .gl/on-device.sh $V run -o flash_attn --cases 20 --jobs 8 --shrink-budget 4 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL|error|dst\[' $OUT/val.log | head -10; rm -rf $OUT/val
s=$(date +%s)
timeout 400 bash .gl/on-device.sh $V bench --against $U --rounds 3 -o flash_attn --variant 'f16_f16$,f16_f16_cm1,f16_f16_cm2' --time-limit 370 > $OUT/fa.log 2> $OUT/fa.err
echo "fa rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/fa.log | cut -c1-250; sed -n '/^summary/,$p' $OUT/fa.log | grep -v '^stats'
gzip -f $OUT/fa.err
