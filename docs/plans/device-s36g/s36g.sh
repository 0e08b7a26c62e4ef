#!/usr/bin/env bash
# Session 36's seventh device call: where cm1's prefill row goes now (timing copies of 486f198
# with one part taken out, one round each: nopv without step 4, nos without the S products,
# noexp without the softmax's exp, nok without K staging), and cm1u (V in chunks of 4 keys at
# P·V time with a finite test per chunk: fewer registers, 182 now; 168 would let 3 workgroups
# share an SM).
source ci/device-calls.sh "$1" || exit 1
SA="-o flash_attn --variant f32_f16_f16_cm1$ --row N=512"
device_run cm1u_run 60 $T/cm1u -o flash_attn --variant 'cm1$' --cases 30 --devices 0,0,0,0
device_bench cm1u 20 --shaders $T/cm1u --against shaders $SA --rounds 2
device_bench cm1u_dec 30 --shaders $T/cm1u --against shaders -o flash_attn --variant 'f32_f16_f16_cm1$' --row 'N=1 ' --rounds 1
for c in cm1_nopv cm1_nos cm1_noexp cm1_nok; do
    device_bench $c 15 --shaders $T/$c --against shaders $SA --rounds 1 --time-wrong
done
grep -h "^stats.*ours" "$LOGS"/*.log | sort -u | cut -c1-200
