#!/usr/bin/env bash
# Device call 4 (session 26): every cm1 mul_mm variant on HEAD's shaders (call 1's time limit
# stopped before the last of them), 8 cases each.
OUT=$1
V=.devbin/vkdiff
D=.devbin
bash .gl/on-device.sh true
t=$(date +%s)
timeout 200 bash .gl/on-device.sh $V run --shaders $D/v_head -o mul_mm --variant cm1 --cases 8 --out $OUT/run_cm1 > $OUT/run_cm1.log 2>&1
echo "run cm1 rc=$? $(( $(date +%s) - t )) s"
grep -E "cases in|findings|FAIL|error" $OUT/run_cm1.log | cut -c1-200 | tail -4
echo "variants passing: $(grep -cE "cases, 0 failed" $OUT/run_cm1.log)"
grep -E "cases, [1-9]|skipped" $OUT/run_cm1.log | head -5
rm -f $OUT/run_cm1/report.html $OUT/run_cm1/report.jsonl
gzip -f $OUT/*.log
