#!/usr/bin/env bash
# Queued by session 43 (about 450 s): the cm2 rows at the final shaders of session 43 against
# upstream 0.1.109. b2aea65 (q8_0 decode from 16-bit words) was timed only against the tree
# before it (1.01 / 1.00 / 1.01), and its MUL_MAT_ID q8_0 variants ran no GPU case yet. Then
# two tries for the cm2 flash-attention prefill row (0.90 of upstream), whose mask block costs
# about 70 of its 235 us: the mask tile's load issued before Kᵀ's (famask) or right after it
# (famaskk), so its latency hides behind S = Q·Kᵀ (both compile: every_variant_of_every_path_compiles).
# Stage (main, clean): UPSTREAM=0.1.109 bash ci/gpu.sh stage && bash ci/stage-trees.sh docs/plans/device-s44
# Run with carry [".gl", ".devbin"]: bash .devbin/s44a.sh $OUT
source ci/device-calls.sh "$1" || exit 1
OUT=$1
pack() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
QUIET=1 device_run id_q8_run 40 shaders -o mul_mm_id --variant 'q8_0_f16_cm2,q8_0_f16_f16acc_cm2' --cases 40 --devices 0,0; pack
device_bench mm_cm2 150 --shaders shaders --against $U -o mul_mm --variant 'q8_0_f16_f16acc_cm2$,q4_0_f16_f16acc_cm2$' --rounds 3 | cut -c1-180; pack
device_bench mmid_cm2 110 --shaders shaders --against $U -o mul_mm_id --variant 'id_q8_0_f16_cm2$,id_q4_k_f16_cm2$' --rounds 3 | cut -c1-180; pack
for t in famask famaskk; do
    QUIET=1 device_run ${t}_run 30 $T/$t -o flash_attn --variant 'f16_f16_cm2,q8_0_cm2' --cases 30 --devices 0,0; pack
    device_bench $t 50 --shaders $T/$t --against shaders -o flash_attn --variant 'f16_f16_cm2$' --row 'N=512' --rounds 3 | cut -c1-180; pack
done
