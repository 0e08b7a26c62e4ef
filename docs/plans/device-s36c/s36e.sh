#!/usr/bin/env bash
# Session 36's fifth device call: cm1y = cm1x with O's slots in fours (keys outer, four add
# chains interleaved; one row test per four), cm1z = cm1y with K a tile ahead again. The working
# tree's shaders/ must be the committed tree (the comparison).
source ci/device-calls.sh "$1" || exit 1
device_run cm1y_run 90 $T/cm1y -o flash_attn --variant 'cm1$' --cases 40 --devices 0,0,0,0
SA="-o flash_attn --variant f32_f16_f16_cm1$ --row N=512"
device_bench cm1y 20 --shaders $T/cm1y --against shaders $SA --rounds 2
device_bench cm1z 20 --shaders $T/cm1z --against shaders $SA --rounds 2
device_bench cm1y_dec 40 --shaders $T/cm1y --against shaders -o flash_attn --variant 'f32_f16_f16_cm1$' --row 'N=1 ' --rounds 1
device_bench cm1z_dec 40 --shaders $T/cm1z --against shaders -o flash_attn --variant 'f32_f16_f16_cm1$' --row 'N=1 ' --rounds 1
grep -h "^stats" "$LOGS"/cm1y.log "$LOGS"/cm1z.log | sort -u | cut -c1-250
