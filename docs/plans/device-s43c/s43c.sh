#!/usr/bin/env bash
# Session 43, call 3 (about 320 s): after c6fe4c1 (cm2 mul_mm loads B before A; q8_0 at
# 0.95-0.96 of upstream), two tries at the store of the fast path, where ours keeps a
# per-element fallback in each tile that upstream does not have (its q8_0 pipeline has no
# local memory, ours 0x220 bytes):
#   stmm  every fast tile stored per element (no tensor store)
#   stpb  D per batch as upstream stores it (N x M at offset pos_d), one tensor store, no fallback
# and the MUL_MAT_ID cm2 q8_0 rows of the committed tree against upstream (same K_STEP macro).
# Stage: UPSTREAM=0.1.109 bash ci/gpu.sh stage && bash ci/stage-trees.sh docs/plans/device-s43c
source ci/device-calls.sh "$1" || exit 1
OUT=$1
pack() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
for t in stpb stmm; do
    QUIET=1 device_run ${t}_run 45 $T/$t -o mul_mm --variant 'f16_f16acc_cm2,q8_0_f16_cm2,q4_0_f16_f16acc_cm2' --cases 30 --devices 0,0,0,0; pack
    device_bench $t 60 --shaders $T/$t --against shaders -o mul_mm --variant '_f16acc_cm2$' --row '4096×512×4096' --rounds 3 | cut -c1-180; pack
done
device_bench mmid_up 60 --shaders shaders --against $U -o mul_mm_id --variant 'id_q8_0_f16_cm2$,id_f16_f16acc_cm2$' --rounds 3 | cut -c1-180; pack
grep -h "^stats" "$LOGS"/st*.log | grep q8_0 | sort -u | cut -c1-220
