#!/usr/bin/env bash
# Device call (session 17): cm1's grouped P·V in fours of rows (no test per row): validate cm1,
# every cm1 row against upstream 0.1.109 (3 rounds); then cm1_all (all 16 rows always, the
# test on row 0 only) against the working tree (D=128 rows, 1 round).
OUT=$1
V=.devbin/vkdiff
U=.devbin/upstream-shaders
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V run -o flash_attn --variant cm1 --cases 80 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL|error|dst\[' $OUT/val.log | head -20; rm -rf $OUT/val
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V bench --against $U --rounds 3 -o flash_attn --variant 'f16_f16_cm1' > $OUT/cm1.log 2> $OUT/err-cm1.txt
echo "cm1 rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/cm1.log | cut -c50-250; grep -E '^stats' $OUT/cm1.log | cut -c1-200
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V bench --shaders .devbin/exp/cm1_all --against $PWD/shaders --rounds 1 -o flash_attn --variant 'f16_f16_cm1' --row 'D=128' > $OUT/cm1_all.log 2> $OUT/err-all.txt
echo "cm1_all rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/cm1_all.log | cut -c50-250; grep -E '^stats.*ours.*,128,0,8' $OUT/cm1_all.log | cut -c1-200
cat $OUT/err-*.txt | gzip > $OUT/err.txt.gz; rm $OUT/err-*.txt
