#!/usr/bin/env bash
# Prepared in session 37, not run (seven tries at a machine failed). The scalar mul_mm's
# q4_0/q8_0 staging on top of the k-major tiles (committed in session 37): `mmpair` decodes a
# prefetched quad straight to f16 (the byte as the f16 1024 + b by its bits, minus 1024 + bias,
# times d in f16: the same bits as rounding the exact f32 product) and lets one q4_0 word serve
# the quads of its low and high nibbles (half the prefetch registers and loads). Session 37,
# call 3, each on its own against the tree before k-major, 14336x512x4096: q4_0 1.07x, q8_0
# 0.96x (f16pair), k-major 1.09x / 1.08x. On lavapipe the combination gives the same outcome
# and error ratio as the committed tree in 640 of 640 cases; its cm1 q4_0/q8_0 variants (which
# the change reaches too) have not run anywhere. ~200 s.
# Stage: UPSTREAM=0.1.109 bash ci/gpu.sh stage && bash ci/stage-trees.sh docs/plans/device-s38
source ci/device-calls.sh "$1" || exit 1
QUIET=1 device_run mmpair_run 80 $T/mmpair -o mul_mm -o mul_mm_id --variant '_f32,matmul_f16,matmul_bf16,matmul_id_f16,matmul_id_bf16' --cases 8 --devices 0,0,0,0
echo "variants: $(grep -c 'cases, ' $LOGS/mmpair_run.log), with failures: $(grep 'cases, ' $LOGS/mmpair_run.log | grep -vc ' 0 failed')"
SC='matmul_q4_0_f32_f16acc$,matmul_q8_0_f32_f16acc$,matmul_f16_f32_f16acc$'
device_bench mmpair 40 --shaders $T/mmpair --against shaders -o mul_mm --variant "$SC" --row '14336×512×4096' --rounds 2
device_bench mmpair_up 100 --shaders $T/mmpair --against $U -o mul_mm --variant "$SC" --rounds 3
device_bench mm_id_up 60 --shaders shaders --against $U -o mul_mm_id --variant 'matmul_id_f16_f32_f16acc$,matmul_id_q4_0_f32_f16acc$,matmul_id_q8_0_f32_f16acc$' --rounds 3
grep -h "^stats.*_f32_aligned_f16acc\[" "$LOGS"/mmpair_up.log | sort -u | cut -c1-150
