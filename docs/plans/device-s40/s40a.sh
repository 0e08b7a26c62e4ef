#!/usr/bin/env bash
# Session 40, call 1. First session 39's cm1pv plan (docs/plans/device-s39b/s39b.sh: cm1
# flash attention with P·V on the cooperative matrices, never run yet), then scalar mul_mm
# with loads a K step ahead for more types:
#   mmapf:  f16 A's quads prefetched into registers a step ahead (as q4_0/q8_0 since session
#           25), for the f16 4096x512x14336 row (0.97 on the H100 and the H200).
#   mmabpf: mmapf plus B's quads (aligned f32/f16 B) prefetched a step ahead, every A type.
# Stage (main, clean, binary from branch s39-cm1pv): see docs/plans/device-s39b/README.md,
# then bash ci/stage-trees.sh docs/plans/device-s39 docs/plans/device-s39b docs/plans/device-s40
source ci/device-calls.sh "$1" || exit 1
pack() { tar czf "$1/logs.tgz" -C "$1" logs; }
SA="-o flash_attn --variant f32_f16_f16_cm1$ --row N=512"
device_run cm1pv_run 90 $T/cm1pv -o flash_attn --variant 'cm1$' --cases 40 --devices 0,0,0,0; pack "$1"
device_bench cm1pv 25 --shaders $T/cm1pv --against $T/base $SA --rounds 2 | cut -c1-180; pack "$1"
grep -h "^stats" "$LOGS"/cm1pv.log | sort -u | cut -c1-200
MMV='matmul_f16_f32_f16acc$,matmul_q4_0_f32_f16acc$,matmul_q8_0_f32_f16acc$'
QUIET=1 device_run mmabpf_run 60 $T/mmabpf -o mul_mm -o mul_mm_id --variant 'f16,f32,q4_0,q8_0,q4_k' --cases 8 --devices 0,0,0,0; pack "$1"
device_bench mmabpf 70 --shaders $T/mmabpf --against $T/base -o mul_mm --variant "$MMV" --rounds 2 | cut -c1-180; pack "$1"
grep -h "^stats" "$LOGS"/mmabpf.log | sort -u | cut -c1-200
device_bench mmapf 25 --shaders $T/mmapf --against $T/base -o mul_mm --variant 'matmul_f16_f32_f16acc$' --rounds 2 | cut -c1-180; pack "$1"
device_bench cm1pv_up 45 --shaders $T/cm1pv --against $U -o flash_attn --variant 'f32_f16_f16_cm1$' --rounds 3 | cut -c1-180; pack "$1"
device_bench u16 25 --shaders $T/mvq8u16 --against $T/base -o mul_mat_vec --variant 'q8_0_f32_f32' --row '· 1 col' --rounds 3 | cut -c1-180; pack "$1"
