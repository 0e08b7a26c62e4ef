#!/usr/bin/env bash
# Session 44, call 3 (about 330 s): the cm2 matmul, MUL_MAT_ID and flash-attention prefill rows
# against ggml 0.1.161 again, now that the bench's heater pauses for ggml's computes only (in
# call 2 it paused for the whole case, the GPU clocked down during the host's seconds of work,
# and ggml's large rows ran 4x slower in two of three rounds).
# Stage (main, clean): GGML=0.1.161 bash ci/gpu.sh stage && bash ci/stage-trees.sh docs/plans/device-s44g
# Run with carry [".gl", ".devbin"]: bash .devbin/s44h.sh $OUT
source ci/device-calls.sh "$1" || exit 1
OUT=$1
pack() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
g() { device_ggml "$1" "$2" 0.1.161 cm2 "${@:3}" --rounds 3 | cut -c1-200; pack; }
g h_mm2 90 -o mul_mm --variant 'cm2$' --row '4096×512×4096'
g h_mmid2 70 -o mul_mm_id --variant 'cm2$' --row '128×768×2048'
g h_fa2 30 -o flash_attn --variant 'cm2$' --row 'N=512'
