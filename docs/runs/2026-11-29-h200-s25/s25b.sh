#!/usr/bin/env bash
# Device call 2 (session 25): v_words (the candidate: aligned quantized quads read as words of
# quants, iq4 values from the shared table) validated on mul_mm (scalar, cm1, cm2) and
# mul_mm_id, timed against HEAD's shaders (v_base) on the q8_0 rows and against upstream
# 0.1.109 on the q4_0 and q8_0 rows (3 rounds); v_chunk8 = v_words with LOOP_CHUNK 8 (a
# timing copy).
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
bash .gl/on-device.sh true
t=$(date +%s)
timeout 130 bash .gl/on-device.sh $V run --shaders $D/v_words -o mul_mm --cases 8 --out $OUT/run_mm > $OUT/run_mm.log 2>&1 &
timeout 130 bash .gl/on-device.sh $V run --shaders $D/v_words -o mul_mm_id --cases 6 --out $OUT/run_mmid > $OUT/run_mmid.log 2>&1 &
wait
echo "runs $(( $(date +%s) - t )) s"
for o in mm mmid; do
    grep -E "cases in|findings|FAIL|error" $OUT/run_$o.log | cut -c1-200 | tail -6
    rm -f $OUT/run_$o/report.html $OUT/run_$o/report.jsonl
done
b() { # name limit shaders against args...
    local name=$1 limit=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((limit + 40)) bash .gl/on-device.sh $V bench --shaders $s --against $a --time-limit $limit "$@" > $OUT/$name.log 2> $OUT/$name.err
    echo "$name rc=$? $(( $(date +%s) - t )) s"
    grep -E '^mul_mm|^stats|summary|^  ' $OUT/$name.log | cut -c1-230
}
b words_vs_up 110 $D/v_words $U -o mul_mm --variant 'q4_0_f32_f16acc$,q8_0_f32_f16acc$' --rounds 3
b q8words_vs_base 50 $D/v_words $D/v_base -o mul_mm --variant 'q8_0_f32_f16acc$' --rounds 2
b chunk8_vs_words 70 $D/v_chunk8 $D/v_words -o mul_mm --variant 'q4_0_f32_f16acc$,q8_0_f32_f16acc$' --rounds 2
gzip -f $OUT/*.err $OUT/*.log
