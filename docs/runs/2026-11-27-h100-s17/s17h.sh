#!/usr/bin/env bash
# Device call (session 17): cm2 copies with staged K fetched a tile ahead (cm2_pf), and also V
# fetched at the tile's start into a second register set (cm2_pf2): validate each on cm2 cases,
# then against the working tree on the D=128 rows (2 rounds).
OUT=$1
V=.devbin/vkdiff
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
for x in cm2_pf cm2_pf2; do
  s=$(date +%s)
  timeout 120 bash .gl/on-device.sh $V run --shaders .devbin/exp/$x -o flash_attn --variant cm2 --cases 50 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val-$x.log 2>&1
  echo "val $x rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL|error|dst\[' $OUT/val-$x.log | head -10; rm -rf $OUT/val
  s=$(date +%s)
  timeout 150 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$x --against $PWD/shaders --rounds 2 -o flash_attn --variant 'f16_f16_cm2' --row 'D=128' > $OUT/$x.log 2> $OUT/err-$x.txt
  echo "$x rc=$? $(( $(date +%s) - s )) s"
  grep -E '^flash_attn ' $OUT/$x.log | cut -c50-250; grep -E '^stats.*ours.*cm2\[' $OUT/$x.log | cut -c1-200
done
cat $OUT/err-*.txt | gzip > $OUT/err.txt.gz; rm $OUT/err-*.txt
