#!/usr/bin/env bash
# Device call 3 (session 24): v_s7 = the committed candidate of mul_mm.comp (B quads and
# elements picked by selects; the first warp tile's test folded for float A), its mul_mm and
# mul_mm_id differential cases (scalar, cm1 and cm2 rows), then the scalar mul_mm rows against
# upstream 0.1.109, 3 rounds.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
bash .gl/on-device.sh true
t=$(date +%s)
timeout 150 bash .gl/on-device.sh $V run --shaders $D/v_s7 -o mul_mm --cases 16 --out $OUT/run_mm > $OUT/run_mm.log 2>&1 &
timeout 150 bash .gl/on-device.sh $V run --shaders $D/v_s7 -o mul_mm_id --cases 10 --out $OUT/run_mmid > $OUT/run_mmid.log 2>&1 &
wait
echo "runs $(( $(date +%s) - t )) s"
for o in mm mmid; do
    grep -E "cases in|findings|FAIL|error" $OUT/run_$o.log | cut -c1-200 | tail -6
    rm -f $OUT/run_$o/report.html $OUT/run_$o/report.jsonl
done
t=$(date +%s)
timeout 200 bash .gl/on-device.sh $V bench --shaders $D/v_s7 --against $U -o mul_mm --variant 'f16acc$' --time-limit 160 > $OUT/s7_vs_up.log 2> $OUT/s7_vs_up.err
echo "bench rc=$? $(( $(date +%s) - t )) s"
grep -E '^mul_mm |^stats|summary|^  ' $OUT/s7_vs_up.log | cut -c1-230
gzip -f $OUT/*.err
