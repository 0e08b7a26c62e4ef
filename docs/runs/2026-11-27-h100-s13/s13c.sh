#!/usr/bin/env bash
# Device call (session 13): K-quant mat-vec with the quad split: validate, bench against
# upstream 0.1.109 (3 rounds), then variants (rows together, unroll) against ours (2 rounds).
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
U=.devbin/upstream-shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
s=$(date +%s)
timeout 100 bash .gl/on-device.sh $V run -o mul_mat_vec -o mul_mat_vec_id --variant '_k_,_k_f32,iq1,iq2,iq3' --cases 60 --jobs 8 --shrink-budget 10 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; s=$(date +%s)
grep -E 'cases in|distinct|^FAIL' $OUT/val.log
timeout 120 bash .gl/on-device.sh $V bench --against $U -o mul_mat_vec --variant '_k_f32_f32' --time-limit 100 > $OUT/mv.log 2> $OUT/mv.err
echo "mv rc=$? $(( $(date +%s) - s )) s"
grep -E '^mul_mat_vec ' $OUT/mv.log | awk '{print $3, $4, $6, "ours", $8, "up", $(NF-4), "ratio", $(NF-2), $NF}'; sed -n '/^summary/,$p' $OUT/mv.log
for e in rt2 u4 u1; do
  s=$(date +%s)
  timeout 90 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$e --against $PWD/shaders --rounds 2 -o mul_mat_vec --variant '_k_f32_f32' > $OUT/$e.log 2> $OUT/$e.err
  echo "== $e rc=$? $(( $(date +%s) - s )) s"
  grep -E '^mul_mat_vec ' $OUT/$e.log | awk '{print $3, $4, $6, "exp", $8, "base", $(NF-4), "ratio", $(NF-2), $NF}'
done
rm -f $OUT/*.err
