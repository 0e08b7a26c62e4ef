#!/usr/bin/env bash
# Session 35, device call 1 (staged by `bash ci/stage-trees.sh docs/plans/device-s35 docs/plans/device-s34`): session 34's prepared cm2 mask call
# (mund, mkhr: docs/plans/device-s34/s34a.sh), then where scalar flash attention's prefill row
# goes (0.79 of upstream): timing copies with one part taken out, one round each, --time-wrong:
#   snomask  no mask          snopv  P·V only adds V to one row (V still loaded)
#   snos     scores without Q (K still loaded)    snoexp  the weights without exp
# and snoahead (a candidate: K and V a tile ahead only on Br = 1 pipelines; same arithmetic).
source ci/device-calls.sh "$1" || exit 1
FV='f32_f16_f16_cm2$,f32_f16_f16_f16acc_cm2$,f32_f16_q4_0_cm2$,f32_f16_q8_0_cm2$'
FA="-o flash_attn --variant f32_f16_f16_cm2$ --row N=512"
device_bench mund 30 --shaders $T/mund --against shaders $FA --rounds 2
device_run mund_run 60 $T/mund -o flash_attn --variant "$FV" --cases 20 --devices 0,0,0,0
device_bench mkhr 30 --shaders $T/mkhr --against shaders $FA --rounds 2
SA="-o flash_attn --variant f32_f16_f16$ --row N=512"
device_bench s_base 30 --shaders shaders --against $U $SA --rounds 1
for c in snoahead snomask snopv snos snoexp; do
    device_bench $c 30 --shaders $T/$c $SA --rounds 1 --time-wrong
done
device_run snoahead_run 60 $T/snoahead -o flash_attn --variant 'f32_f16_f16$,f32_f16_q4_0$,f32_f16_q8_0$' --cases 20 --devices 0,0,0,0
