#!/usr/bin/env bash
# Session 36's sixth device call: cm1v = cm1y with the end combination's loops on fixed bounds
# (cm1y's 128 B of local memory is Of's size: a loop bound with min() left Of indexed at run
# time there). Then the committed scalar rows against upstream, 3 rounds.
source ci/device-calls.sh "$1" || exit 1
device_run cm1v_run 90 $T/cm1v -o flash_attn --variant 'cm1$' --cases 40 --devices 0,0,0,0
SA="-o flash_attn --variant f32_f16_f16_cm1$ --row N=512"
device_bench cm1v 20 --shaders $T/cm1v --against shaders $SA --rounds 2
device_bench cm1v_dec 40 --shaders $T/cm1v --against shaders -o flash_attn --variant 'f32_f16_f16_cm1$' --row 'N=1 ' --rounds 1
grep -h "^stats" "$LOGS"/cm1v.log | sort -u | cut -c1-250
device_bench scalar_up 90 --shaders shaders --against $U -o flash_attn --variant 'f32_f16_f16$' --rounds 3
