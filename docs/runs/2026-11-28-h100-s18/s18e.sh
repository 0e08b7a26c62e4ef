#!/usr/bin/env bash
# Device call (session 18): K-quant mat-vec with one column, four super-blocks a pass instead of
# two (.devbin/exp/u4: KQ_UNROLL 4; the same super-blocks in the same order per thread):
# validate, then time against the working tree on every K-quant row (2 rounds).
OUT=$1
V=.devbin/vkdiff
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
s=$(date +%s)
timeout 100 bash .gl/on-device.sh $V run --shaders .devbin/exp/u4 -o mul_mat_vec -o mul_mat_vec_id --variant '_k_' --cases 60 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct' $OUT/val.log
grep -E ' cases, ' $OUT/val.log | grep -v ' 0 failed' | head
rm -rf $OUT/val
s=$(date +%s)
timeout 200 bash .gl/on-device.sh $V bench --shaders .devbin/exp/u4 --against $PWD/shaders --rounds 2 -o mul_mat_vec --variant '_k_f32_f32' > $OUT/u4.log 2> $OUT/u4.err
echo "u4 rc=$? $(( $(date +%s) - s )) s"
grep -E '^mul_mat_vec ' $OUT/u4.log | cut -c1-220; sed -n '/^summary/,$p' $OUT/u4.log | grep -v '^stats' | head -4
grep -E '^stats.*ours.*\[32,2,1\]' $OUT/u4.log | sed -E 's/Binary Size [0-9]+, //; s/Stack Size 0, //' | cut -c1-160
gzip -f $OUT/*.err
