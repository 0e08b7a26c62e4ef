#!/usr/bin/env bash
# Session 41, call 3 (about 420 s). Patches against shaders/ at db8f58d.
#   1. cm1lm: cm1 flash attention's end combination indexes O only with loop constants (the
#      committed shader's O blocks sit in local memory on the H100: 0x80 bytes at D = 128,
#      0x40 at 64, exactly O; upstream's and the pre-P·V tree's none), as cases, then its rows
#      against the committed tree and against upstream.
#   2. mvctail: the chunk path (q4_0 one column) in whole passes, then half passes (MoE
#      128x2048x768 q4_0 mat-vec ID was 0.97 of upstream).
#   3. q4_K mat-vec 4096x4096 against upstream (db8f58d: 4 columns one super-block a pass).
# Stage (main, clean): UPSTREAM=0.1.109 bash ci/gpu.sh stage &&
# bash ci/stage-trees.sh docs/plans/device-s41c
source ci/device-calls.sh "$1" || exit 1
pack() { tar czf "$1/logs.tgz" -C "$1" logs; }
QUIET=1 device_run cm1lm_run 90 $T/cm1lm -o flash_attn --variant '_cm1' --cases 20 --devices 0,0,0,0; pack "$1"
grep -E "cases, [1-9][0-9]* failed|error|skipped" "$LOGS"/cm1lm_run.log | cut -c1-160 | head -20
device_bench cm1lm 80 --shaders $T/cm1lm --against shaders -o flash_attn --variant 'f32_f16_f16_cm1$' --rounds 2 | cut -c1-180; pack "$1"
grep -h "^stats" "$LOGS"/cm1lm.log | sort -u | cut -c1-200
device_bench cm1lmu 90 --shaders $T/cm1lm --against $U -o flash_attn --variant 'f32_f16_f16_cm1$' --rounds 3 | cut -c1-180; pack "$1"
device_bench mvctail 40 --shaders $T/mvctail --against shaders -o mul_mat_vec_id --variant 'q4_0' --rounds 3 | cut -c1-180; pack "$1"
device_bench mvctail1 40 --shaders $T/mvctail --against shaders -o mul_mat_vec --variant 'q4_0_f32_f32' --rounds 2 | cut -c1-180; pack "$1"
device_bench q4ku 30 --shaders shaders --against $U -o mul_mat_vec --variant 'q4_k_f32_f32' --row '4096×4096' --rounds 3 | cut -c1-180; pack "$1"
