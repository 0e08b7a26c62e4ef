#!/usr/bin/env bash
# Prepared in session 36, not run. cm1 flash attention's prefill row is 0.74 of upstream
# (2,047 / 1,512 us, H100) and its K staging (fetch, store, subgroup barrier) costs about 430 us
# (session 36, call 7: 1,626 us without it). Since session 36 each subgroup reads only its own
# keys, so for f16 K with 16-byte aligned rows (every real graph's K cache) `cm1d` loads the
# Kᵀ blocks straight from memory into the coopmat, staging only a partial last tile and
# quantized K. Same values, same bound. ~120 s. The working tree's shaders/ must be the
# committed tree (the device copies the working tree: it is the comparison).
# Stage here: UPSTREAM=0.1.109 bash ci/gpu.sh stage && bash ci/stage-trees.sh docs/plans/device-s37
source ci/device-calls.sh "$1" || exit 1
device_run cm1d_run 60 $T/cm1d -o flash_attn --variant 'cm1$' --cases 40 --devices 0,0,0,0
SA="-o flash_attn --variant f32_f16_f16_cm1$ --row N=512"
device_bench cm1d 20 --shaders $T/cm1d --against shaders $SA --rounds 2
device_bench cm1d_up 20 --shaders $T/cm1d --against $U $SA --rounds 2
device_bench cm1d_dec 30 --shaders $T/cm1d --against shaders -o flash_attn --variant 'f32_f16_f16_cm1$' --row 'N=1 ' --rounds 1
grep -h "^stats.*ours" "$LOGS"/cm1d.log | sort -u | cut -c1-200
