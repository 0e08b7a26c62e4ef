#!/usr/bin/env bash
# Device call 5 (after fixing the f16 test: QUANT_K is undefined for f16 K/V, so call 4 ran the old step 4)
# Device call 4 (session 11): cm1 flash attention with f16 V staged in Ksh (fetched before the
# softmax), step 4 over valid rows only, unrolled O loops: validate every flash_attn path, bench
# the cm1/cm2 decode rows and the prefill rows of all paths.
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
U=.devbin/upstream-shaders
V=.devbin/vkdiff
t() { echo "$1: $(( $(date +%s) - $2 )) s" >> $OUT/times.txt; }
s=$(date +%s)
timeout 120 bash .gl/on-device.sh $V run -o flash_attn --cases 60 --jobs 8 --out /tmp/val > $OUT/val.log 2>&1
t val $s; s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V bench --against $U -o flash_attn --variant cm1 --row "N=1 " --time-limit 100 > $OUT/fa.log 2> $OUT/fa.err
t fa $s; s=$(date +%s)
gzip -f $OUT/*.err
cat $OUT/times.txt
grep -E 'cases in|distinct' $OUT/val.log
grep -E 'cases, ' $OUT/val.log | grep -v ' 0 failed' | head
for f in fa; do echo "== $f"; grep -E '^flash_attn ' $OUT/$f.log | cut -c1-200; grep -A3 '^summary' $OUT/$f.log; done
