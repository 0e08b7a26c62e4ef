#!/usr/bin/env bash
# Device call (session 16): cm2 flash attention staging through an f16vec4 shared array (one
# 8-byte store per staged vector instead of four 2-byte stores; coopMatLoad offsets and strides
# in vectors), as .devbin/exp/v4: validate it, then the prefill row against the committed tree
# (3 rounds) and against upstream 0.1.109, with register counts.
OUT=$1
V=.devbin/vkdiff
U=.devbin/upstream-shaders
X=.devbin/exp/v4
bash .gl/on-device.sh true
s=$(date +%s)
timeout 100 bash .gl/on-device.sh $V run --shaders $X -o flash_attn --variant cm2 --cases 50 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL|error' $OUT/val.log | head -20; rm -rf $OUT/val
s=$(date +%s)
timeout 90 bash .gl/on-device.sh $V bench --shaders $X --against $PWD/shaders --rounds 3 -o flash_attn --variant f16_f16_cm2 --row "N=512" > $OUT/v4-ours.log 2> $OUT/v4-ours.err
echo "v4 vs ours rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn |^stats' $OUT/v4-ours.log | cut -c50-250
s=$(date +%s)
timeout 60 bash .gl/on-device.sh $V bench --shaders $X --against $U -o flash_attn --variant f16_f16_cm2 --row "N=512" > $OUT/v4-up.log 2> $OUT/v4-up.err
echo "v4 vs upstream rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/v4-up.log | cut -c50-250
gzip -f $OUT/*.err
