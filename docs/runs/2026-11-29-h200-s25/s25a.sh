#!/usr/bin/env bash
# Device call 1 (session 25): scalar mul_mm staging. v_base = HEAD's shaders; v_words = aligned
# quantized quads read as one word of quants (dequant_funcs.comp's quad_quants); v_unroll =
# v_words with both staging loops unrolled; v_prefetch = v_words with the next K step's quads
# loaded into registers before this step's products. 2 rounds each, then a short validation.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
bash .gl/on-device.sh true
b() { # name limit shaders against args...
    local name=$1 limit=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((limit + 40)) bash .gl/on-device.sh $V bench --shaders $s --against $a --time-limit $limit "$@" > $OUT/$name.log 2> $OUT/$name.err
    echo "$name rc=$? $(( $(date +%s) - t )) s"
    grep -E '^mul_mm|^stats|summary|^  ' $OUT/$name.log | cut -c1-230
}
b words_vs_base 80 $D/v_words $D/v_base -o mul_mm --variant 'q4_0_f32_f16acc$,q8_0_f32_f16acc$' --rounds 2
b unroll_vs_words 110 $D/v_unroll $D/v_words -o mul_mm --variant 'f16acc$' --rounds 2
b prefetch_vs_words 110 $D/v_prefetch $D/v_words -o mul_mm --variant 'f16acc$' --rounds 2
t=$(date +%s)
timeout 90 bash .gl/on-device.sh $V run --shaders $D/v_prefetch -o mul_mm --variant 'f16acc$,f32$' --cases 6 --out $OUT/run_pf > $OUT/run_pf.log 2>&1
echo "run rc=$? $(( $(date +%s) - t )) s"
grep -E "cases in|findings|FAIL|error" $OUT/run_pf.log | cut -c1-200 | tail -6
rm -f $OUT/run_pf/report.html $OUT/run_pf/report.jsonl
gzip -f $OUT/*.err
