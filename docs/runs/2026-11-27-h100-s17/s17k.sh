#!/usr/bin/env bash
# Device call (session 17): s_half, a scalar copy that skips Q·K and P·V for the upper half of
# the Br rows when no row there is below N (decode with GQA 4 fills 4 of 8): validate it, then
# against the working tree on every scalar row (2 rounds).
OUT=$1
V=.devbin/vkdiff
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
s=$(date +%s)
timeout 120 bash .gl/on-device.sh $V run --shaders .devbin/exp/s_half -o flash_attn --variant 'f16_f16$,q4_0$,q8_0$' --cases 60 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL|error|dst\[' $OUT/val.log | head -10; rm -rf $OUT/val
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V bench --shaders .devbin/exp/s_half --against $PWD/shaders --rounds 2 -o flash_attn --variant 'f32_f16_f16$' > $OUT/s_half.log 2> $OUT/err.txt
echo "s_half rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/s_half.log | cut -c50-250; grep -E '^stats.*ours' $OUT/s_half.log | cut -c1-200
gzip $OUT/err.txt
