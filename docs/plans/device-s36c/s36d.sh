#!/usr/bin/env bash
# Session 36's fourth device call: cm1x = cm1w with K fetched at the tile's start (no K a
# tile ahead: cm1w had 255 registers and 176 B of local memory) and the end combination
# skipping slots whose rows are past N (decode: one pass instead of two).
source ci/device-calls.sh "$1" || exit 1
device_run cm1x_run 90 $T/cm1x -o flash_attn --variant 'cm1$' --cases 40 --devices 0,0,0,0
SA="-o flash_attn --variant f32_f16_f16_cm1$ --row N=512"
device_bench cm1x 20 --shaders $T/cm1x --against shaders $SA --rounds 2
device_bench cm1x_dec 40 --shaders $T/cm1x --against shaders -o flash_attn --variant 'f32_f16_f16_cm1$' --row 'N=1 ' --rounds 1
grep -h "^stats" "$LOGS"/cm1x.log "$LOGS"/cm1x_dec.log | sort -u | cut -c1-250
