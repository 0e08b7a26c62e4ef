#!/usr/bin/env bash
# Device call (session 19): the cm2 candidate in the working tree: Q through a tensor layout
# (no shared-memory staging), f16 K and V straight from memory at every Br, the mask through a
# layout with constant (zero) clamp and GQA stride 0, no slope read without ALiBi, the key
# loop kept rolled. Validate every cm2 variant; every cm2 row against upstream 0.1.109
# (2 rounds); N2 = the same with f16 K and V staged as before (prefill row, 1 round).
OUT=$1
V=.devbin/vkdiff
U=.devbin/upstream-shaders
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
s=$(date +%s)
timeout 60 bash .gl/on-device.sh $V run -o flash_attn --variant cm2 --cases 30 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL' $OUT/val.log | head -5; rm -rf $OUT/val
s=$(date +%s)
timeout 170 bash .gl/on-device.sh $V bench --against $U --rounds 2 -o flash_attn --variant 'f16_f16_cm2' --time-limit 140 > $OUT/cm2.log 2> $OUT/cm2.err
echo "cm2 bench rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/cm2.log | cut -c50-240
grep '^stats' $OUT/cm2.log | grep -v reduce | sed -E 's/Stack Size 0, //; s/flash_attn_f32_f16_f16\S* //' | cut -c1-200
s=$(date +%s)
timeout 60 bash .gl/on-device.sh $V bench --shaders .devbin/exp/N2 --against $U --rounds 1 -o flash_attn --variant 'f16_f16_cm2' --row 'N=512' > $OUT/N2.log 2> $OUT/N2.err
echo "N2 bench rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/N2.log | cut -c50-240
gzip -f $OUT/*.err
