#!/usr/bin/env bash
# Device call 1 (session 26): v_s26 = mul_mm's warp split and constant quantized-A alignment
# (467d573) plus flash_attn.comp's combination as a row loop, against v_pf (session 25's tree):
# timed (2 rounds), then mul_mm (scalar, cm1), mul_mm_id and flash_attn cases on v_s26.
OUT=$1
V=.devbin/vkdiff
D=.devbin
bash .gl/on-device.sh true
b() { # name limit shaders against args...
    local name=$1 limit=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((limit + 40)) bash .gl/on-device.sh $V bench --shaders $s --against $a --time-limit $limit "$@" > $OUT/$name.log 2> $OUT/$name.err
    echo "$name rc=$? $(( $(date +%s) - t )) s"
    grep -E '^mul_mm|^flash_attn|^stats|summary|^  ' $OUT/$name.log | cut -c1-230
}
b mm_vs_pf 100 $D/v_s26 $D/v_pf -o mul_mm --variant 'q4_0_f32_f16acc$,q8_0_f32_f16acc$,matmul_f16_f32_f16acc$' --rounds 2
b fa_vs_pf 70 $D/v_s26 $D/v_pf -o flash_attn --variant 'f32_f16_f16$' --rounds 2
r() { # name limit args...
    local name=$1 limit=$2; shift 2
    local t=$(date +%s)
    timeout $limit bash .gl/on-device.sh $V run --shaders $D/v_s26 "$@" --out $OUT/run_$name > $OUT/run_$name.log 2>&1
    echo "run $name rc=$? $(( $(date +%s) - t )) s"
    grep -E "cases in|findings|FAIL|error" $OUT/run_$name.log | cut -c1-200 | tail -4
    echo "variants passing: $(grep -cE "cases, 0 failed" $OUT/run_$name.log)"
    grep -E "cases, [1-9]" $OUT/run_$name.log | head -5
    rm -f $OUT/run_$name/report.html $OUT/run_$name/report.jsonl
}
r fa 100 -o flash_attn --cases 20
r mm 130 -o mul_mm --cases 6
gzip -f $OUT/*.err $OUT/*.log
