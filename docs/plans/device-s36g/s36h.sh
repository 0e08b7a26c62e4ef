#!/usr/bin/env bash
# Session 36's eighth device call: cm1k = 486f198 with K a tile ahead at D = 128 too (call 7:
# without K staging the prefill row took 1,626 us against 2,059, and call 5's test of K ahead
# was confounded by Of in local memory). Then the committed cm1 and cm2 rows against upstream.
source ci/device-calls.sh "$1" || exit 1
SA="-o flash_attn --variant f32_f16_f16_cm1$ --row N=512"
device_run cm1k_run 40 $T/cm1k -o flash_attn --variant 'cm1$' --cases 30 --devices 0,0,0,0
device_bench cm1k 20 --shaders $T/cm1k --against shaders $SA --rounds 2
device_bench cm1k_dec 20 --shaders $T/cm1k --against shaders -o flash_attn --variant 'f32_f16_f16_cm1$' --row 'N=1 ' --rounds 1
grep -h "^stats.*ours" "$LOGS"/cm1k.log | sort -u | cut -c1-200
device_bench cm1_up 45 --shaders shaders --against $U -o flash_attn --variant 'f32_f16_f16_cm1$' --rounds 3
device_bench cm2_up 45 --shaders shaders --against $U -o flash_attn --variant 'f32_f16_f16_cm2$' --rounds 3
