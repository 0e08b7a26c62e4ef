#!/usr/bin/env bash
# Queued by session 44 (about 500 s): the rest of the cm2 rows against ggml 0.1.161 through its
# own host, which session 44's calls did not reach (docs/bench.md, session 44): the
# flash-attention prefill row (one row of about 100 s: host work on both sides), cm2 mul_mm at
# 14336×512×4096 and cm2 MUL_MAT_ID at 128×2048×768, with ggml's GPU times from its perf logger.
# Stage (main, clean): GGML=0.1.161 bash ci/gpu.sh stage && bash ci/stage-trees.sh docs/plans/device-s45
# Run with carry [".gl", ".devbin"]: bash .devbin/s45a.sh $OUT; then, here, for each row file:
#   python3 ci/ggml-gpu-times.py logs/NAME.log logs/NAME.err
source ci/device-calls.sh "$1" || exit 1
OUT=$1
pack() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
g() { device_ggml "$1" "$2" 0.1.161 cm2 "${@:3}" --rounds 3 | cut -c1-200; pack; }
g j_fa_pre 100 -o flash_attn --variant 'cm2$' --row 'N=512'
g j_mm2 120 -o mul_mm --variant 'cm2$' --row '14336×512×4096'
g j_mmid2 100 -o mul_mm_id --variant 'cm2$' --row '128×2048×768'
