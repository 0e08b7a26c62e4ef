#!/usr/bin/env bash
# Device call 5 (session 24, review): the review's two shader edits on their GPU-only paths.
# mul_mm.comp: b_quad and b_value share one select helper (b_vec4); the cm1 variants, compiled
# without -O, keep it as a function. flash_attn_cm2.comp: the softcap on a masked tile goes
# through logit() instead of a wrapper of its own.
OUT=$1
V=.devbin/vkdiff
bash .gl/on-device.sh true
t=$(date +%s)
timeout 110 bash .gl/on-device.sh $V run --shaders shaders -o mul_mm --variant cm1 --cases 12 --out $OUT/run_cm1 > $OUT/run_cm1.log 2>&1 &
timeout 110 bash .gl/on-device.sh $V run --shaders shaders -o flash_attn --variant cm2 --time 80s --out $OUT/run_fa > $OUT/run_fa.log 2>&1 &
wait
echo "runs $(( $(date +%s) - t )) s"
for o in cm1 fa; do
    grep -E "cases in|findings" $OUT/run_$o.log | tail -3
    echo "$o variants listed: $(grep -c 'cases, 0 failed' $OUT/run_$o.log), with failures: $(grep 'cases, [1-9]' $OUT/run_$o.log | wc -l)"
    rm -f $OUT/run_$o/report.html $OUT/run_$o/report.jsonl
done
