#!/usr/bin/env bash
# Queued by session 45 (about 560 s): the committed cm2 MUL_MAT_ID (07afa08: division-free
# gather, narrow last tiles where the host enables them) against upstream 0.1.109 for the table
# (3 rounds) and against ggml 0.1.161 through its own host, both MoE shapes; then the cm2
# flash-attention prefill row against 0.1.161 with room to finish (it did not in 140 s).
# Stage (main, clean): GGML=0.1.161 UPSTREAM=0.1.109 bash ci/gpu.sh stage && bash ci/stage-trees.sh docs/plans/device-s46
# Run with carry [".gl", ".devbin"]: bash .devbin/s46a.sh $OUT; then, here, for each ggml row file:
#   python3 ci/ggml-gpu-times.py logs/NAME.log logs/NAME.err
source ci/device-calls.sh "$1" || exit 1
device_bench mmid_u 150 --against $U -o mul_mm_id --variant 'cm2$' --rounds 3 | cut -c1-180; device_pack
device_ggml mmid_g 150 0.1.161 cm2 -o mul_mm_id --variant 'cm2$' --rounds 3 | cut -c1-200; device_pack
device_ggml fa_pre_g 200 0.1.161 cm2 -o flash_attn --variant 'cm2$' --row 'N=512' --rounds 3 | cut -c1-200; device_pack
