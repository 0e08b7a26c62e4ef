#!/usr/bin/env bash
# Device call 3 (session 11): cm2 flash attention with batched K/V fetches (V fetched before
# the softmax): validate every flash_attn path, bench the cm2 and cm1 decode rows, then the
# mul_mm_id cm2 rows.
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
U=.devbin/upstream-shaders
V=.devbin/vkdiff
t() { echo "$1: $(( $(date +%s) - $2 )) s" >> $OUT/times.txt; }
s=$(date +%s)
timeout 120 bash .gl/on-device.sh $V run -o flash_attn --cases 60 --jobs 8 --out /tmp/val > $OUT/val.log 2>&1
t val $s; s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V bench --against $U -o flash_attn --variant cm --row "N=1 " --time-limit 130 > $OUT/fa.log 2> $OUT/fa.err
t fa $s; s=$(date +%s)
timeout 260 bash .gl/on-device.sh $V bench --against $U -o mul_mm_id --variant cm2 --time-limit 230 > $OUT/id.log 2> $OUT/id.err
t id $s
gzip -f $OUT/*.err
cat $OUT/times.txt
grep -E 'cases in|distinct' $OUT/val.log
grep -E 'cases, ' $OUT/val.log | grep -v ' 0 failed' | head
for f in fa id; do echo "== $f"; grep -E '^(flash_attn|mul_mm_id) ' $OUT/$f.log | cut -c1-200; grep -A3 '^summary' $OUT/$f.log; done
