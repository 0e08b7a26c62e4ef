#!/usr/bin/env bash
# Device call (session 20, H200): the second half of the whole table against upstream 0.1.109's
# shaders, 3 rounds: the mat-vec ID row call 1's time limit left out, every mul_mm row (scalar
# and cm2), every MUL_MAT_ID row (scalar and cm2).
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
U=.devbin/upstream-shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
s=$(date +%s)
timeout 60 bash .gl/on-device.sh $V bench --against $U -o mul_mat_vec_id --variant q4_k --row '128×2048×768' > $OUT/mvid.log 2> $OUT/mvid.err
echo "mvid rc=$? $(( $(date +%s) - s )) s"
grep -E '^mul_mat_vec_id ' $OUT/mvid.log | cut -c1-230
s=$(date +%s)
timeout 280 bash .gl/on-device.sh $V bench --against $U -o mul_mm --time-limit 255 > $OUT/mm.log 2> $OUT/mm.err
echo "mm rc=$? $(( $(date +%s) - s )) s"
grep -E '^mul_mm ' $OUT/mm.log | cut -c1-230; sed -n '/^summary/,$p' $OUT/mm.log | grep -v '^stats'
s=$(date +%s)
timeout 230 bash .gl/on-device.sh $V bench --against $U -o mul_mm_id --time-limit 205 > $OUT/mmid.log 2> $OUT/mmid.err
echo "mmid rc=$? $(( $(date +%s) - s )) s"
grep -E '^mul_mm_id ' $OUT/mmid.log | cut -c1-230; sed -n '/^summary/,$p' $OUT/mmid.log | grep -v '^stats'
gzip -f $OUT/*.err
