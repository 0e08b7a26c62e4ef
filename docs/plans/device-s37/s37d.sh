#!/usr/bin/env bash
# Session 37, call 3. Against the committed tree unless said; same values, same bounds in all.
#  - fa2vearly / fa2mearly / fa2allearly (cm2 flash attention, f16 K/V): V's tensor load
#    issued with Kᵀ's before S; the mask tile's load before S; both.
#  - q8c / q8d: cm2 q8_0 matmul with 4 K steps a pass instead of 8 (16-bit-word / byte decode).
#  - mm*: scalar mul_mm quantized-A candidates (see their patches).
# The working tree's shaders/ must be the committed tree.
source ci/device-calls.sh "$1" || exit 1
MM_TREES="mmf16dec mmf16pair mmkmajor"
for t in fa2vearly fa2mearly fa2allearly; do
    device_run ${t}_run 60 $T/$t -o flash_attn --variant 'cm2' --cases 30 --devices 0,0,0,0
done
for t in q8c q8d; do
    device_run ${t}_run 60 $T/$t -o mul_mm --variant 'q8_0_f16_cm2,q8_0_f16_f16acc_cm2' --cases 25 --devices 0,0,0,0
done
for t in $MM_TREES; do
    device_run ${t}_run 60 $T/$t -o mul_mm -o mul_mm_id --variant 'q4_0_f32,q8_0_f32,q4_k_f32,f16_f32' --cases 15 --devices 0,0,0,0
done
for t in fa2vearly fa2mearly fa2allearly; do
    device_bench $t 35 --shaders $T/$t --against shaders -o flash_attn --variant 'f32_f16_f16_cm2$' --rounds 2
done
for t in q8c q8d; do
    device_bench $t 40 --shaders $T/$t --against $U -o mul_mm --variant 'q8_0_f16_f16acc_cm2$' --rounds 2
done
for t in $MM_TREES; do
    device_bench $t 35 --shaders $T/$t --against shaders -o mul_mm --row '14336×512×4096' --variant 'matmul_q4_0_f32_f16acc$,matmul_q8_0_f32_f16acc$,matmul_f16_f32_f16acc$' --rounds 2
done
grep -h "^stats.*ours.*cm2\[" "$LOGS"/fa2*.log | sort -u | cut -c1-200
grep -h "^stats.*ours.*q8_0" "$LOGS"/q8c.log "$LOGS"/q8d.log | sort -u | cut -c1-200
for t in $MM_TREES; do grep -h "^stats.*ours.*q[48]_0_f32_aligned" "$LOGS"/$t.log | sort -u | cut -c1-200; done
