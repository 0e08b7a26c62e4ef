#!/usr/bin/env bash
# Session 36's device call, prepared in session 35 (docs/bench.md, session 35): scalar flash
# attention's prefill row (0.79 of upstream on H100 and H200), where the mask costs about 960 us
# of 2,843 (H100): its barrier about 290, the live test of -inf entries about 180. Copies, all
# with the committed arithmetic (same bound):
#   sraw    f16 K and V kept packed while a tile ahead (2 registers a vector; no spill on the
#           H100, prefill 1.01x of committed); its decode rows were never timed
#   slive2  no live flags: a key that is not live keeps the finite score -FLT_MAX, which never
#           raises the maximum; its weight is 0 by a compare where it is used
#   srl     sraw + slive2         srn  sraw with K/V a tile ahead only at Br = 1
#   srln    srl with K/V a tile ahead only at Br = 1
# ~200 s. Every copy's prefill row against the committed tree (2 rounds), decode rows of the
# best, then 40 cases of each scalar variant for each copy. Stage here first:
#   UPSTREAM=0.1.109 bash ci/gpu.sh stage && bash ci/stage-trees.sh docs/plans/device-s36
source ci/device-calls.sh "$1" || exit 1
SA="-o flash_attn --variant f32_f16_f16$ --row N=512"
device_bench base 20 --shaders shaders --against $U $SA --rounds 1
for c in sraw slive2 srl srn srln; do
    device_bench $c 20 --shaders $T/$c --against shaders $SA --rounds 2
done
device_bench srl_dec 40 --shaders $T/srl --against shaders -o flash_attn --variant 'f32_f16_f16$' --row 'N=1 ' --rounds 2
device_bench sraw_dec 40 --shaders $T/sraw --against shaders -o flash_attn --variant 'f32_f16_f16$' --row 'N=1 ' --rounds 2
for c in sraw slive2 srl; do
    device_run ${c}_run 40 $T/$c -o flash_attn --variant 'f32_f16_f16$,f32_f16_q4_0$,f32_f16_q8_0$' --cases 40 --devices 0,0,0,0
done
