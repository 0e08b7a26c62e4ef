#!/usr/bin/env bash
# Device call 4 (session 25): v_pf = A prefetch for q4_0/q8_0/iq4_nl (each quad's qs word and
# d loaded before the K step's products, decoded at the next step's staging) on top of v_words
# (= 8d8cd95's shaders). Timed against v_words and upstream 0.1.109 (2 rounds), then its
# mul_mm (scalar and cm1) and mul_mm_id cases of those types.
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
b pf_vs_words 90 $D/v_pf $D/v_words -o mul_mm --variant 'q4_0_f32_f16acc$,q8_0_f32_f16acc$' --rounds 2
b pf_vs_up 80 $D/v_pf $U -o mul_mm --variant 'q4_0_f32_f16acc$,q8_0_f32_f16acc$' --rounds 2
for o in mul_mm mul_mm_id; do
    t=$(date +%s)
    timeout 75 bash .gl/on-device.sh $V run --shaders $D/v_pf -o $o --variant 'q4_0,q8_0,iq4_nl' --cases 10 --out $OUT/run_$o > $OUT/run_$o.log 2>&1
    echo "run $o rc=$? $(( $(date +%s) - t )) s"
    grep -E "cases in|findings|FAIL|error" $OUT/run_$o.log | cut -c1-200 | tail -4
    grep -cE "cases, 0 failed" $OUT/run_$o.log
    grep -E "cases, [1-9]" $OUT/run_$o.log | head -5
    rm -f $OUT/run_$o/report.html $OUT/run_$o/report.jsonl
done
gzip -f $OUT/*.err $OUT/*.log
