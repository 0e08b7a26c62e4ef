#!/usr/bin/env bash
# Device call (session 17): the scalar mask tile fetched one tile ahead (one 2-byte load per
# entry, written to the other buffer at the tile's end): validate the scalar variants, then the
# working tree against the tree of d48e132 (.devbin/exp/head) on the D=128 rows (2 rounds) and
# against upstream 0.1.109 on the prefill row (3 rounds).
OUT=$1
V=.devbin/vkdiff
U=.devbin/upstream-shaders
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V run -o flash_attn --variant 'f16_f16$,q4_0$,q8_0$' --cases 80 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL|error|dst\[' $OUT/val.log | head -20; rm -rf $OUT/val
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V bench --against .devbin/exp/head/shaders --rounds 2 -o flash_attn --variant 'f32_f16_f16$' --row 'D=128' > $OUT/vs-head.log 2> $OUT/err-head.txt
echo "vs head rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/vs-head.log | cut -c50-250; grep -E '^stats.*ours.*,128,0,8' $OUT/vs-head.log | cut -c1-200
s=$(date +%s)
timeout 100 bash .gl/on-device.sh $V bench --against $U --rounds 3 -o flash_attn --variant 'f32_f16_f16$' --row 'N=512' > $OUT/vs-up.log 2> $OUT/err-up.txt
echo "vs upstream rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/vs-up.log | cut -c50-250
cat $OUT/err-*.txt | gzip > $OUT/err.txt.gz; rm $OUT/err-*.txt
