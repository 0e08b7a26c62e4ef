#!/usr/bin/env bash
# Device call (session 18): K-quant mat-vec with several columns. Copies under .devbin/exp/:
#   kq_unroll - two super-blocks per pass (KQ_UNROLL) at every column count (committed: one
#               when NUM_COLS >= 2); the same superblocks in the same order per thread
#   kq_both   - kq_unroll and call 1's kq_cols (rows decoded first, B quads loaded once per
#               column for all rows)
# Validate each on the K-quant and lattice mat-vec variants, then time each against the
# committed tree on the q4_K rows (2 rounds).
OUT=$1
V=.devbin/vkdiff
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
for x in kq_unroll kq_both; do
  s=$(date +%s)
  timeout 100 bash .gl/on-device.sh $V run --shaders .devbin/exp/$x -o mul_mat_vec -o mul_mat_vec_id --variant '_k_,iq1,iq2,iq3' --cases 40 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val_$x > $OUT/val_$x.log 2>&1
  echo "val $x rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct' $OUT/val_$x.log
  grep -E ' cases, ' $OUT/val_$x.log | grep -v ' 0 failed' | head
  rm -rf $OUT/val_$x
  s=$(date +%s)
  timeout 120 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$x --against $PWD/shaders --rounds 2 -o mul_mat_vec --variant 'q4_k_f32_f32' > $OUT/$x.log 2> $OUT/$x.err
  echo "$x rc=$? $(( $(date +%s) - s )) s"
  grep -E '^mul_mat_vec ' $OUT/$x.log | cut -c1-220
  grep -E '^stats.*ours' $OUT/$x.log | sed -E 's/Binary Size [0-9]+, //; s/Stack Size 0, //' | cut -c1-160
done
gzip -f $OUT/*.err
