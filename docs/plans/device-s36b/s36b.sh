#!/usr/bin/env bash
# Session 36's second device call: scalar flash attention with the scores reduce-scattered
# across a group's lanes (scat: each lane keeps Br/D_split rows, reads its own mask entries from
# memory a tile ahead; no mask tile in shared memory, no barrier in the key loop; weights and
# rescale factors reach O by subgroupShuffle). Same arithmetic, same results bit for bit.
# Stage here: UPSTREAM=0.1.109 bash ci/gpu.sh stage && bash ci/stage-trees.sh docs/plans/device-s36b
source ci/device-calls.sh "$1" || exit 1
SA="-o flash_attn --variant f32_f16_f16$ --row N=512"
device_bench scat 20 --shaders $T/scat --against shaders $SA --rounds 2
device_bench scat_up 20 --shaders $T/scat --against $U $SA --rounds 2
device_bench scat_dec 40 --shaders $T/scat --against shaders -o flash_attn --variant 'f32_f16_f16$' --row 'N=1 ' --rounds 2
device_run scat_run 60 $T/scat -o flash_attn --variant 'f32_f16_f16$,f32_f16_q4_0$,f32_f16_q8_0$' --cases 60 --devices 0,0,0,0
device_bench scat_q 40 --shaders $T/scat --against shaders -o flash_attn --variant 'f32_f16_q4_0$,f32_f16_q8_0$' --rounds 1
