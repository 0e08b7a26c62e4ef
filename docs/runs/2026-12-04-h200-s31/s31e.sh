#!/usr/bin/env bash
# Device call 5 (session 31): the committed tree (f956460): its MUL_MAT_ID cm2 cases, then
# the cm2 rows it changed (mul_mm f16 and q4_0, all three shapes; MUL_MAT_ID f16 and q4_0)
# against upstream 0.1.109, 3 rounds.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
s=$(date +%s)
timeout 70 bash .gl/on-device.sh $V run --shaders shaders -o mul_mm_id --variant _cm2 --cases 25 --out $OUT/id_c > $OUT/id_c.log 2>&1
echo "id_c rc=$? $(( $(date +%s) - s )) s"; grep -E "cases in|findings" $OUT/id_c.log
b() { # name, limit, extra args
    local n=$1 l=$2; shift 2
    local s=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders shaders --against $U "$@" --rounds 3 --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - s )) s"
    grep -E '^(mul_|summary)' $OUT/$n.log | cut -c1-250
}
b mm 150 -o mul_mm --variant 'matmul_f16_f16acc_cm2,q4_0_f16_f16acc_cm2'
b mmid 90 -o mul_mm_id --variant 'f16_f16acc_cm2,q4_0_f16_cm2'
rm -rf $OUT/id_c/*.html
tar czf $OUT/s31e.tgz -C $OUT --exclude s31e.tgz . 2>/dev/null
