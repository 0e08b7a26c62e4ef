#!/usr/bin/env bash
# Device call (session 13): K-quant mat-vec against upstream with statistics, then q4_K
# variants (rows together, quad-outer loop) against ours, with their register counts.
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
U=.devbin/upstream-shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
s=$(date +%s)
timeout 120 bash .gl/on-device.sh $V bench --against $U -o mul_mat_vec --variant '_k_f32_f32' --time-limit 100 > $OUT/mv.log 2> $OUT/mv.err
echo "mv rc=$? $(( $(date +%s) - s )) s"
grep -E '^mul_mat_vec ' $OUT/mv.log | awk '{print $3, $4, $6, "ours", $8, "up", $(NF-4), "ratio", $(NF-2), $NF}'; sed -n '/^summary/,$p' $OUT/mv.log | grep -v '^stats'
grep '^stats' $OUT/mv.log | sed -E 's/Binary Size [0-9]+, //; s/Stack Size 0, //' | cut -c1-170
for e in rt2 gouter1 gouter2; do
  s=$(date +%s)
  timeout 60 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$e --against $PWD/shaders --rounds 2 -o mul_mat_vec --variant 'q4_k_f32_f32' > $OUT/$e.log 2> $OUT/$e.err
  echo "== $e rc=$? $(( $(date +%s) - s )) s"
  grep -E '^mul_mat_vec ' $OUT/$e.log | awk '{print $3, $4, $6, "exp", $8, "base", $(NF-4), "ratio", $(NF-2), $NF}'
  grep '^stats' $OUT/$e.log | grep -o 'ours: .*Register Count [0-9]*' | cut -c1-90
done
gzip -f $OUT/*.err
