#!/usr/bin/env bash
# Device call 3 (session 20, H200), as run inline: the cm2 mul_mm rows and the cm2 MUL_MAT_ID rows
# that call 2's time limits left out, against upstream 0.1.109, 3 rounds.
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders; U=.devbin/upstream-shaders; V=.devbin/vkdiff; bash .gl/on-device.sh true
timeout 170 bash .gl/on-device.sh $V bench --against $U -o mul_mm --variant cm2 --time-limit 140 > $OUT/mmcm2.log 2> $OUT/mmcm2.err
timeout 250 bash .gl/on-device.sh $V bench --against $U -o mul_mm_id --variant cm2 --time-limit 200 > $OUT/mmidcm2.log 2> $OUT/mmidcm2.err
gzip -f $OUT/*.err
