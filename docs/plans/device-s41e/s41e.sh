#!/usr/bin/env bash
# Session 41, call 5 (about 350 s): not run (refused: too little device time left to start a
# machine); for the next session. vearly.patch against shaders/ at 5319836: cm2 flash attention
# with f16 K/V issues V's tensor load before the softmax (the prefill row is 0.89 of upstream
# 0.1.109), as cases and against the committed tree and upstream; then the 4 table rows not yet
# measured against upstream (docs/runs/2026-12-06-s41/h100-table.md).
# Stage (main, clean): UPSTREAM=0.1.109 bash ci/gpu.sh stage &&
# bash ci/stage-trees.sh docs/plans/device-s41e
source ci/device-calls.sh "$1" || exit 1
pack() { tar czf "$1/logs.tgz" -C "$1" logs; }
QUIET=1 device_run vearly_run 60 $T/vearly -o flash_attn --variant 'f16_f16_cm2,f16_f16_f16acc_cm2' --cases 60 --devices 0,0,0,0; pack "$1"
grep -E "cases, |cases in|error" "$LOGS"/vearly_run.log | cut -c1-160 | head
device_bench vearly 45 --shaders $T/vearly --against shaders -o flash_attn --variant 'f32_f16_f16_cm2$' --rounds 2 | cut -c1-180; pack "$1"
grep -h "^stats" "$LOGS"/vearly.log | sort -u | cut -c1-200
device_bench vearlyu 45 --shaders $T/vearly --against $U -o flash_attn --variant 'f32_f16_f16_cm2$' --rounds 3 | cut -c1-180; pack "$1"
up() { local n=$1 l=$2; shift 2; device_bench "$n" "$l" --shaders shaders --against $U "$@" --rounds 3 | cut -c1-180; pack "$OUT"; }
OUT=$1
up mmq8cm2 40 -o mul_mm --variant 'q8_0_f16_f16acc_cm2$' --row '4096×512×14336'
up mmidcm2 140 -o mul_mm_id --variant 'matmul_id_q8_0_f16_cm2$,matmul_id_q4_k_f16_cm2$'
