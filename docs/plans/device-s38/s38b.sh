#!/usr/bin/env bash
# Session 38: where our cm2 q8_0 matmul's spill comes from (it spills 112-320 B at 255
# registers, upstream's none, with the same decode). Diagnostic trees, each one change to
# mul_mm_cm2.comp (b, c, e drop paths a real run needs: only for the register statistics and
# the 4096x512x4096 row, whose tiles all take the fast path with full-width stores):
#   cm2a: the unrolled K loop without [[dont_unroll]]
#   cm2b: the fast path's store is only the tensor store (no per-element fallback)
#   cm2c: the fast path has only the full BN tile (no BN/2, BN/4 accumulators)
#   cm2d: b and c
#   cm2e: no general (clamped) path
# One round each against the committed tree; the stats lines give registers and local memory.
source ci/device-calls.sh "$1" || exit 1
for t in cm2a cm2d cm2e; do
    device_bench $t 20 --shaders $T/$t --against shaders -o mul_mm --variant 'q8_0_f16_f16acc_cm2$,q4_0_f16_f16acc_cm2$' --row '4096×512×4096' --rounds 1 | grep -v '^summary'
    grep -h "^stats" "$LOGS"/$t.log | sed 's/Binary Size [0-9]*, Stack Size 0, //' | cut -c1-200
done
