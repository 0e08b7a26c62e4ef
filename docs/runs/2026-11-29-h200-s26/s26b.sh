#!/usr/bin/env bash
# Device call 2 (session 26): v_s26b = v_s26 with flash_attn.comp's row maxima and factors
# computed for every row before the (not unrolled) row loop, as before the change. Timed
# against v_pf (flash attention scalar, 3 rounds; the mul_mm q8_0 rows call 1 did not reach),
# then flash_attn and mul_mm_id cases on v_s26b.
OUT=$1
V=.devbin/vkdiff
D=.devbin
bash .gl/on-device.sh true
b() { # name limit shaders against args...
    local name=$1 limit=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((limit + 40)) bash .gl/on-device.sh $V bench --shaders $s --against $a --time-limit $limit "$@" > $OUT/$name.log 2> $OUT/$name.err
    echo "$name rc=$? $(( $(date +%s) - t )) s"
    grep -E '^mul_mm|^flash_attn|summary|^  ' $OUT/$name.log | cut -c1-230
}
b fa_vs_pf 90 $D/v_s26b $D/v_pf -o flash_attn --variant 'f32_f16_f16$' --rounds 3
b mm_vs_pf 60 $D/v_s26b $D/v_pf -o mul_mm --variant 'q8_0_f32_f16acc$' --rounds 2
r() { # name limit args...
    local name=$1 limit=$2; shift 2
    local t=$(date +%s)
    timeout $limit bash .gl/on-device.sh $V run --shaders $D/v_s26b "$@" --out $OUT/run_$name > $OUT/run_$name.log 2>&1
    echo "run $name rc=$? $(( $(date +%s) - t )) s"
    grep -E "cases in|findings|FAIL|error" $OUT/run_$name.log | cut -c1-200 | tail -4
    echo "variants passing: $(grep -cE "cases, 0 failed" $OUT/run_$name.log)"
    grep -E "cases, [1-9]" $OUT/run_$name.log | head -5
    rm -f $OUT/run_$name/report.html $OUT/run_$name/report.jsonl
}
r fa 80 -o flash_attn --variant 'f32_f16_f16$,q4_0$,q8_0$' --cases 40
r mmid 120 -o mul_mm_id --cases 5
gzip -f $OUT/*.err $OUT/*.log
