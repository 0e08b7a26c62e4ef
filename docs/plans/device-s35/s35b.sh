#!/usr/bin/env bash
# Session 35, device call 2 (staged by `bash ci/stage-trees.sh docs/plans/device-s35 docs/plans/device-s34`). Call 1: scalar prefill 2,877 us, without the
# mask 1,894 (upstream 2,276). Here: is it the mask's barrier (snobar: no barrier, racy) or the
# live test (snolive)? And the candidate smask4 / smask8: the mask staged 4 / 8 key tiles at a
# time, one barrier per stage (same arithmetic); sraw: f16 K and V kept packed while a tile ahead
# (2 registers a vector, widened where used); smr: both.
source ci/device-calls.sh "$1" || exit 1
SA="-o flash_attn --variant f32_f16_f16$ --row N=512"
for c in snobar; do
    device_bench $c 30 --shaders $T/$c $SA --rounds 1 --time-wrong
done
device_bench smask4 30 --shaders $T/smask4 --against $U $SA --rounds 2
device_bench smask8 30 --shaders $T/smask8 --against $U $SA --rounds 2
device_bench sraw 30 --shaders $T/sraw --against $U $SA --rounds 2
device_bench smr 30 --shaders $T/smr --against $U $SA --rounds 2
device_bench smr8 30 --shaders $T/smr8 --against $U $SA --rounds 2
device_bench smr_dec 60 --shaders $T/smr --against shaders -o flash_attn --variant 'f32_f16_f16$' --row 'N=1 ' --rounds 1
device_run smr_run 90 $T/smr -o flash_attn --variant 'f32_f16_f16$,f32_f16_q4_0$,f32_f16_q8_0$' --cases 40 --devices 0,0,0,0
