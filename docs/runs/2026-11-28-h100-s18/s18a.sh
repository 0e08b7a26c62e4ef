#!/usr/bin/env bash
# Device call (session 18): (1) the i-quant lattice tables filled by generated straight-line
# code (e218ee6): validate every lattice i-quant variant on the H100. (2) A copy of the
# K-quant/lattice mat-vec body under .devbin/exp/kq_cols that decodes every row's quants and
# scales first and then loads each column's B quads once for all rows (the committed body
# re-reads them per row): validate it, time it against the committed tree on the q4_K and
# q6_K rows (2 rounds), and the committed tree against upstream 0.1.109 on the q4_K rows.
OUT=$1
V=.devbin/vkdiff
U=.devbin/upstream-shaders
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
s=$(date +%s)
timeout 200 bash .gl/on-device.sh $V run --variant 'iq1,iq2,iq3' --cases 40 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct' $OUT/val.log
grep -E ' cases, ' $OUT/val.log | grep -v ' 0 failed' | head
s=$(date +%s)
timeout 120 bash .gl/on-device.sh $V run --shaders .devbin/exp/kq_cols -o mul_mat_vec -o mul_mat_vec_id --variant '_k_,iq1,iq2,iq3' --cases 40 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/valkq > $OUT/valkq.log 2>&1
echo "valkq rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct' $OUT/valkq.log
grep -E ' cases, ' $OUT/valkq.log | grep -v ' 0 failed' | head
s=$(date +%s)
timeout 200 bash .gl/on-device.sh $V bench --shaders .devbin/exp/kq_cols --against $PWD/shaders --rounds 2 -o mul_mat_vec --variant 'q4_k_f32_f32,q6_k_f32_f32' > $OUT/kq.log 2> $OUT/kq.err
echo "kq rc=$? $(( $(date +%s) - s )) s"
grep -E '^mul_mat_vec ' $OUT/kq.log | cut -c1-220; sed -n '/^summary/,$p' $OUT/kq.log | grep -v '^stats' | head
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V bench --against $U --rounds 3 -o mul_mat_vec --variant 'q4_k_f32_f32' > $OUT/up.log 2> $OUT/up.err
echo "up rc=$? $(( $(date +%s) - s )) s"
grep -E '^mul_mat_vec ' $OUT/up.log | cut -c1-220
rm -rf $OUT/val/repro $OUT/valkq/repro
gzip -f $OUT/*.err
