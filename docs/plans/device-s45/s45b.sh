#!/usr/bin/env bash
# Queued by session 44 (about 450 s): cm2 MUL_MAT_ID with an expert's last column tile as narrow
# as its matches allow (mmidn.patch: BN / 4 or BN / 2 wide, as the MUL_MAT fast path does for
# the last tile). With 512 tokens, 8 of 128 experts each, an expert has about 32 matches, and
# the f16 large tile computes 256 columns for them. Against ggml 0.1.161 the cm2 MUL_MAT_ID rows
# are 0.28-0.34 (session 44). Compiles (every_cm2_variant_compiles); never ran on a GPU.
# Stage (main, clean): GGML=0.1.161 UPSTREAM=0.1.109 bash ci/gpu.sh stage && bash ci/stage-trees.sh docs/plans/device-s45
# Run with carry [".gl", ".devbin"]: bash .devbin/s45b.sh $OUT
source ci/device-calls.sh "$1" || exit 1
OUT=$1
pack() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
QUIET=1 device_run mmidn_run 60 $T/mmidn -o mul_mm_id --variant '_cm2' --cases 40 --devices 0,0; pack
device_bench mmidn 150 --shaders $T/mmidn --against shaders -o mul_mm_id --variant 'cm2$' --rounds 3 | cut -c1-180; pack
TREE=$T/mmidn device_ggml mmidn_g 100 0.1.161 cm2 -o mul_mm_id --variant 'cm2$' --row '128×768×2048' --rounds 3 | cut -c1-200; pack
