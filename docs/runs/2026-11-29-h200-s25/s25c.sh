#!/usr/bin/env bash
# Device call 3 (session 25): where the quantized scalar mul_mm rows' time goes. Timing copies
# of v_words (the committed candidate), run with --time-wrong: v_noqs = aligned quantized quads
# read only the block scale (no quants); v_noload = no A load at all (a value from the block
# index). 2 rounds each on the q4_0 and q8_0 rows.
OUT=$1
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
b noqs_vs_words 100 $D/v_noqs $D/v_words -o mul_mm --variant 'q4_0_f32_f16acc$,q8_0_f32_f16acc$' --rounds 2 --time-wrong
b noload_vs_words 100 $D/v_noload $D/v_words -o mul_mm --variant 'q4_0_f32_f16acc$,q8_0_f32_f16acc$' --rounds 2 --time-wrong
gzip -f $OUT/*.err $OUT/*.log
