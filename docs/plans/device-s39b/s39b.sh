#!/usr/bin/env bash
# Session 39: cm1 flash attention with P·V on the cooperative matrices (`cm1pv`). O is D/16
# accumulators of 16 × 16 per subgroup; per tile O_b = P × V_b + O_b·α, with V staged as f16
# in the subgroup's Ksh rows after S and α as a matrix (row r holds row r's α) read from the
# S region; a tile with a non-finite V half adds its keys one at a time through shared memory
# instead (zero weights skipped). `base` is the committed tree (68fb6c0). The binary has the
# error model's cm1 change (tensor-core P·V depth, block V's f16 decode). About 250 s.
# Stage (with shaders/ as committed): UPSTREAM=0.1.109 bash ci/gpu.sh stage &&
# bash ci/stage-trees.sh docs/plans/device-s39b
source ci/device-calls.sh "$1" || exit 1
pack() { tar czf "$1/logs.tgz" -C "$1" logs; }
SA="-o flash_attn --variant f32_f16_f16_cm1$ --row N=512"
device_run cm1pv_run 90 $T/cm1pv -o flash_attn --variant 'cm1$' --cases 40 --devices 0,0,0,0; pack "$1"
device_bench cm1pv 25 --shaders $T/cm1pv --against $T/base $SA --rounds 2 | cut -c1-180; pack "$1"
grep -h "^stats" "$LOGS"/cm1pv.log | sort -u | cut -c1-200
device_bench cm1pv_up 45 --shaders $T/cm1pv --against $U -o flash_attn --variant 'f32_f16_f16_cm1$' --rounds 3 | cut -c1-180; pack "$1"
# mvq8u16 (16 q8_0 quads a pass with one column; call 1 on an H200 timed it only against
# upstream: 1.03 / 1.08 / 1.00) against the committed tree on the same machine.
device_bench u16 25 --shaders $T/mvq8u16 --against $T/base -o mul_mat_vec --variant 'q8_0_f32_f32' --row '· 1 col' --rounds 3 | cut -c1-180; pack "$1"
