#!/usr/bin/env bash
# Session 42, call 1 (about 450 s). Stage (main, clean): UPSTREAM=0.1.109 bash ci/gpu.sh stage &&
# bash ci/stage-trees.sh docs/plans/device-s42
# 1. cm2 flash attention, f16 K/V, V's tensor load moved earlier: right after S (vearly, session
#    41's plan), after the row sums as upstream places it (vmid), and vmid with O = α·O + f16(P·V)
#    as one expression (vmido). Cases first, then the prefill and a D=64 decode row against the
#    committed tree, then the best-looking against upstream.
# 2. cm2 q8_0 mul_mm with 1 (cm2q8u1, upstream's loop) or 2 (cm2q8u2) K steps a pass instead of 8.
# 3. The 4 table rows not yet measured against upstream.
source ci/device-calls.sh "$1" || exit 1
OUT=$1
pack() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
for t in vearly vmid vmido; do
    QUIET=1 device_run ${t}_run 50 $T/$t -o flash_attn --variant 'f16_f16_cm2,f16_f16_f16acc_cm2' --cases 40 --devices 0,0,0,0; pack
done
for t in vearly vmid vmido; do
    device_bench $t 30 --shaders $T/$t --against shaders -o flash_attn --variant 'f32_f16_f16_cm2$' --row 'KV=4096 D=' --rounds 3 | cut -c1-180; pack
done
for t in cm2q8u1 cm2q8u2; do
    QUIET=1 device_run ${t}_run 50 $T/$t -o mul_mm --variant 'q8_0_f16' --cases 40 --devices 0,0,0,0; pack
    device_bench ${t}u 40 --shaders $T/$t --against $U -o mul_mm --variant 'q8_0_f16_f16acc_cm2$' --row '×512×4096' --rounds 3 | cut -c1-180; pack
done
up() { local n=$1 l=$2; shift 2; device_bench "$n" "$l" --shaders shaders --against $U "$@" --rounds 3 | cut -c1-180; pack; }
up mmq8cm2 40 -o mul_mm --variant 'q8_0_f16_f16acc_cm2$' --row '4096×512×14336'
up mmidcm2 100 -o mul_mm_id --variant 'matmul_id_q8_0_f16_cm2$,matmul_id_q4_k_f16_cm2$'
grep -h "^stats" "$LOGS"/*.log | grep -E "prefill|128,64,64,128|q8_0" | sort -u | cut -c1-220 | head -20
