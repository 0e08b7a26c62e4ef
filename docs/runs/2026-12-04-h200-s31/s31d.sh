#!/usr/bin/env bash
# Device call 4 (session 31): copy e5 of the tree (HEAD with dequant_funcs_cm2.comp's q4_0 and
# q8_0 callbacks reading 16-bit words and turning the small integer into f16 by its exponent
# bits instead of an int-to-float conversion): its q4_0/q8_0 cm2 cases (MUL_MAT, MUL_MAT_ID,
# flash attention K/V), then the q4_0 and q8_0 cm2 MUL_MAT rows against upstream 0.1.109.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
T=.devbin/trees
bash .gl/on-device.sh true
s=$(date +%s)
timeout 170 bash .gl/on-device.sh $V run --shaders $T/e5 -o mul_mm -o mul_mm_id -o flash_attn --variant 'q4_0_f16_cm2,q4_0_f16_f16acc_cm2,q8_0_f16_cm2,q8_0_f16_f16acc_cm2,f16_q4_0_cm2,f16_q8_0_cm2' --cases 25 --out $OUT/e5_c > $OUT/e5_c.log 2>&1
echo "e5_c rc=$? $(( $(date +%s) - s )) s"; grep -E "cases|findings" $OUT/e5_c.log | cut -c1-150
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V bench --shaders $T/e5 --against $U -o mul_mm --variant 'q4_0_f16_f16acc_cm2,q8_0_f16_f16acc_cm2' --row '×512×4096' --rounds 3 --time-limit 110 > $OUT/mm_e5.log 2> $OUT/mm_e5.err
echo "mm_e5 rc=$? $(( $(date +%s) - s )) s"
grep -E '^(mul_|summary|stats)' $OUT/mm_e5.log | cut -c1-250
rm -rf $OUT/e5_c/*.html
tar czf $OUT/s31d.tgz -C $OUT --exclude s31d.tgz . 2>/dev/null
