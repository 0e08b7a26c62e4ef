#!/usr/bin/env bash
# Device call 3 (session 31): copy e4 of the cm2 matmul shader (HEAD 54a264a with MUL_MAT's
# K loop unrolled by 8 BK instead of 256 for the float and 32-element block types; K-quants
# keep 256): its cm2 MUL_MAT cases, then its f16 and q4_0 rows against upstream 0.1.109.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
T=.devbin/trees
bash .gl/on-device.sh true
s=$(date +%s)
timeout 200 bash .gl/on-device.sh $V run --shaders $T/e4 -o mul_mm --variant _cm2 --cases 25 --out $OUT/e4_mm > $OUT/e4_mm.log 2>&1
echo "e4_mm rc=$? $(( $(date +%s) - s )) s"; grep -E "failed|cases in|findings" $OUT/e4_mm.log | grep -v " 0 failed" | cut -c1-200; grep -c " 0 failed" $OUT/e4_mm.log
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V bench --shaders $T/e4 --against $U -o mul_mm --variant 'matmul_f16_f16acc_cm2,q4_0_f16_f16acc_cm2' --row '×512×4096' --rounds 3 --time-limit 110 > $OUT/mm_e4.log 2> $OUT/mm_e4.err
echo "mm_e4 rc=$? $(( $(date +%s) - s )) s"
grep -E '^(mul_|summary|stats)' $OUT/mm_e4.log | cut -c1-250
rm -rf $OUT/e4_mm/*.html
tar czf $OUT/s31c.tgz -C $OUT --exclude s31c.tgz . 2>/dev/null
