#!/usr/bin/env bash
# Device call 2 of session 34, run in session 35 as part of its call 1 (docs/bench.md, session 35: a tie). cm2 flash attention's mask (session 34's call 1: without the
# mask block the prefill row took 168.4 us against 238.5): copies in .devbin/trees/
#   mund   the mask's tensor layout takes the pipeline's Clamp mode: on the aligned pipeline
#          no bounds checks, dimension (nem1, kv_end) (mund.patch)
#   mkhr   as mund, and on the aligned pipeline without GQA a plain strided coopMatLoad (mkhr.patch)
source ci/device-calls.sh "$1" || exit 1
FV='f32_f16_f16_cm2$,f32_f16_f16_f16acc_cm2$,f32_f16_q4_0_cm2$,f32_f16_q8_0_cm2$'
FA="-o flash_attn --variant f32_f16_f16_cm2$ --row N=512"
device_bench mund 30 --shaders $T/mund --against shaders $FA --rounds 2
device_run mund_run 60 $T/mund -o flash_attn --variant "$FV" --cases 20 --devices 0,0,0,0
device_bench mund_up 30 --shaders $T/mund --against $U $FA --rounds 2
device_bench mkhr 30 --shaders $T/mkhr --against shaders $FA --rounds 2
