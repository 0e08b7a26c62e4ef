#!/usr/bin/env bash
# Device call (session 13, final): every mat-vec row against upstream 0.1.109 (3 rounds) with
# the new K-quant body, and the compiler statistics of the cm2 mul_mm and coopmat
# flash-attention decode pipelines (one short round each, for their register counts).
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
U=.devbin/upstream-shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
s=$(date +%s)
timeout 200 bash .gl/on-device.sh $V bench --against $U -o mul_mat_vec --time-limit 180 > $OUT/mv.log 2> $OUT/mv.err
echo "mv rc=$? $(( $(date +%s) - s )) s"; s=$(date +%s)
sed -n '/^summary/,$p' $OUT/mv.log | grep -v '^stats'
grep -E '^mul_mat_vec ' $OUT/mv.log | awk '$(NF-2) < 0.95 {print $3, $4, $6, "ours", $8, "up", $(NF-4), "ratio", $(NF-2), $NF}'
timeout 60 bash .gl/on-device.sh $V bench --against $U -o mul_mm --variant cm2 --rounds 1 --repeats 5 --time-limit 40 > $OUT/mm.log 2> $OUT/mm.err
echo "mm rc=$? $(( $(date +%s) - s )) s"; s=$(date +%s)
timeout 60 bash .gl/on-device.sh $V bench --against $U -o flash_attn --variant cm --row "N=1 " --rounds 1 --repeats 5 --time-limit 40 > $OUT/fa.log 2> $OUT/fa.err
echo "fa rc=$? $(( $(date +%s) - s )) s"
grep '^stats' $OUT/mm.log $OUT/fa.log | sed -E 's/Binary Size [0-9]+, //; s/Stack Size 0, //' | cut -c1-220 | head -40
gzip -f $OUT/*.err
