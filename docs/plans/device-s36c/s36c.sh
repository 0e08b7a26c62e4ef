#!/usr/bin/env bash
# Session 36's third device call: cm1 flash attention with its 4 subgroups as independent
# passes over their own keys of each tile (cm1w: own K staging, S block, M, L and O per
# subgroup, subgroup barriers only in the key loop; combined once at the end). Its cases
# first (every cm1 variant), then the prefill row against the committed tree and upstream,
# and the decode rows against the committed tree.
# Stage here: UPSTREAM=0.1.109 bash ci/gpu.sh stage && bash ci/stage-trees.sh docs/plans/device-s36c
source ci/device-calls.sh "$1" || exit 1
device_run cm1w_run 90 $T/cm1w -o flash_attn --variant 'cm1$' --cases 40 --devices 0,0,0,0
grep -E "FAIL|worst|error" "$LOGS/cm1w_run.log" | head -20 | cut -c1-400
SA="-o flash_attn --variant f32_f16_f16_cm1$ --row N=512"
device_bench cm1w 20 --shaders $T/cm1w --against shaders $SA --rounds 2
device_bench cm1w_up 20 --shaders $T/cm1w --against $U $SA --rounds 2
device_bench cm1w_dec 40 --shaders $T/cm1w --against shaders -o flash_attn --variant 'f32_f16_f16_cm1$' --row 'N=1 ' --rounds 2
grep -h "^stats" "$LOGS"/cm1w.log "$LOGS"/cm1w_dec.log | sort -u | cut -c1-250
