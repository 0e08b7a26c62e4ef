#!/usr/bin/env bash
# Device call 1 (session 11): validate mul_mm / mul_mm_id (every variant, incl. cm1/cm2), then
# bench every mul_mm row (scalar and cm2) and the mul_mm_id rows, 3 rounds, against 0.1.109.
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
U=.devbin/upstream-shaders
V=.devbin/vkdiff
t() { echo "$1: $(( $(date +%s) - $2 )) s" >> $OUT/times.txt; }
s=$(date +%s)
timeout 200 bash .gl/on-device.sh $V run -o mul_mm -o mul_mm_id --cases 20 --jobs 8 --out /tmp/val > $OUT/val.log 2>&1
t val $s; s=$(date +%s)
timeout 200 bash .gl/on-device.sh $V bench --against $U -o mul_mm --time-limit 170 > $OUT/mm.log 2> $OUT/mm.err
t mm $s; s=$(date +%s)
timeout 170 bash .gl/on-device.sh $V bench --against $U -o mul_mm_id --time-limit 140 > $OUT/id.log 2> $OUT/id.err
t id $s
gzip -f $OUT/*.err
cat $OUT/times.txt
grep -E 'cases in|distinct' $OUT/val.log
for f in mm id; do echo "== $f"; grep -E '^(mul_mm|mul_mm_id) ' $OUT/$f.log | cut -c1-200; grep -iE 'geomean|summary' -A3 $OUT/$f.log | head; done
