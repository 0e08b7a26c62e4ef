#!/usr/bin/env bash
# Device call (session 14): the cm2 flash-attention rows after the mask change, then every
# mat-vec row, against upstream 0.1.109 (3 rounds).
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
U=.devbin/upstream-shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
s=$(date +%s)
timeout 130 bash .gl/on-device.sh $V bench --against $U -o flash_attn --variant cm2 --time-limit 110 > $OUT/fa-cm2.log 2> $OUT/fa-cm2.err
echo "fa-cm2 rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/fa-cm2.log | cut -c50-240; sed -n '/^summary/,$p' $OUT/fa-cm2.log | grep -v '^stats'
s=$(date +%s)
timeout 380 bash .gl/on-device.sh $V bench --against $U -o mul_mat_vec -o mul_mat_vec_id --time-limit 360 > $OUT/mv.log 2> $OUT/mv.err
echo "mv rc=$? $(( $(date +%s) - s )) s"
grep -E '^mul_mat_vec' $OUT/mv.log | awk '{print $1,$3,$4,$5,$6,$7,$8,"ours",$(NF-10),"%bw",$(NF-7),"up",$(NF-4),"ratio",$(NF-2),$NF}'; sed -n '/^summary/,$p' $OUT/mv.log | grep -v '^stats'
gzip -f $OUT/*.err
