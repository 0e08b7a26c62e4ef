#!/usr/bin/env bash
# Device call 2 (session 11): validate mul_mm / mul_mm_id with the aligned-quad reads (vector
# A/B quads, one block per quant quad), then bench the 9 scalar mul_mm rows, 3 rounds.
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
U=.devbin/upstream-shaders
V=.devbin/vkdiff
t() { echo "$1: $(( $(date +%s) - $2 )) s" >> $OUT/times.txt; }
s=$(date +%s)
timeout 170 bash .gl/on-device.sh $V run -o mul_mm -o mul_mm_id --cases 15 --jobs 8 --out /tmp/val > $OUT/val.log 2>&1
t val $s; s=$(date +%s)
timeout 360 bash .gl/on-device.sh $V bench --against $U -o mul_mm --variant f32_f16acc --time-limit 330 > $OUT/mm.log 2> $OUT/mm.err
t mm $s
gzip -f $OUT/*.err
cat $OUT/times.txt
grep -E 'cases in|distinct' $OUT/val.log
grep -E '^(mul_mm|mul_mm_id) .*cases, ' $OUT/val.log | grep -v ' 0 failed' | head
echo "== mm"; grep -E '^mul_mm ' $OUT/mm.log | cut -c1-200; grep -A3 '^summary' $OUT/mm.log
