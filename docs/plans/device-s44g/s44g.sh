#!/usr/bin/env bash
# Session 44 (about 480 s): our committed shaders against upstream's current backend, ggml
# 0.1.161 through its own host (`vkdiff bench --ggml`), on its best path (cm2), 3 rounds a
# row: every mat-vec, mat-vec ID and wkv7 row and the cm2 flash-attention, mul_mm and
# MUL_MAT_ID rows. The bench's ggml column is graph_compute's wall time; GGML_VK_PERF_LOGGER
# makes ggml print each compute's GPU time too, which ci/ggml-gpu-times.py sets beside ours.
# Stage (main, clean): GGML=0.1.161 bash ci/gpu.sh stage && bash ci/stage-trees.sh docs/plans/device-s44g
# Run with carry [".gl", ".devbin"]: bash .devbin/s44g.sh $OUT
source ci/device-calls.sh "$1" || exit 1
OUT=$1
pack() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
g() { device_ggml "$1" "$2" 0.1.161 cm2 "${@:3}" --rounds 3 | cut -c1-200; pack; }
g g_mv 170 -o mul_mat_vec
g g_mvid 30 -o mul_mat_vec_id
g g_wkv7 15 -o wkv7
g g_fa2 60 -o flash_attn --variant 'cm2$'
g g_mm2 90 -o mul_mm --variant 'cm2$'
g g_mmid2 80 -o mul_mm_id --variant 'cm2$'
