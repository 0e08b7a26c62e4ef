#!/usr/bin/env bash
# Device call (session 18): review of 95a913a: thread_step as two plain loop nests (columns outer,
# rows outer) instead of one nest with ternary bounds; the same operations (working tree): validate on the K-quant
# and lattice mat-vec variants, time it against the committed tree (.devbin/exp/base) on the
# q4_K and q6_K rows (3 rounds), then against upstream 0.1.109 on the q4_K rows (3 rounds).
OUT=$1
V=.devbin/vkdiff
U=.devbin/upstream-shaders
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
s=$(date +%s)
timeout 100 bash .gl/on-device.sh $V run -o mul_mat_vec -o mul_mat_vec_id --variant '_k_,iq1,iq2,iq3' --cases 60 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct' $OUT/val.log
grep -E ' cases, ' $OUT/val.log | grep -v ' 0 failed' | head
rm -rf $OUT/val
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V bench --shaders $PWD/shaders --against .devbin/exp/base --rounds 3 -o mul_mat_vec --variant 'q4_k_f32_f32,q6_k_f32_f32' > $OUT/base.log 2> $OUT/base.err
echo "base rc=$? $(( $(date +%s) - s )) s"
grep -E '^mul_mat_vec ' $OUT/base.log | cut -c1-220
grep -E '^stats.*(ours|theirs).*q4_k' $OUT/base.log | sed -E 's/Binary Size [0-9]+, //; s/Stack Size 0, //' | cut -c1-160
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V bench --against $U --rounds 3 -o mul_mat_vec --variant 'q4_k_f32_f32' > $OUT/up.log 2> $OUT/up.err
echo "up rc=$? $(( $(date +%s) - s )) s"
grep -E '^mul_mat_vec ' $OUT/up.log | cut -c1-220
gzip -f $OUT/*.err
