#!/usr/bin/env bash
# Session 41, call 4 (about 330 s), the committed tree (cm1lm and mvctail merged): cm1 flash
# attention as cases (100 a variant), the mat-vec ID and cm2 flash attention rows against
# upstream 0.1.109. Stage: UPSTREAM=0.1.109 bash ci/gpu.sh stage && cp this .devbin/
source ci/device-calls.sh "$1" || exit 1
pack() { tar czf "$1/logs.tgz" -C "$1" logs; }
QUIET=1 device_run cm1_run 100 shaders -o flash_attn --variant '_cm1' --cases 100 --devices 0,0,0,0; pack "$1"
grep -E "cases, |cases in|error" "$LOGS"/cm1_run.log | cut -c1-160 | head -20
up() { local n=$1 l=$2; shift 2; device_bench "$n" "$l" --shaders shaders --against $U "$@" --rounds 3 | cut -c1-180; pack "$OUT"; }
OUT=$1
up mvid 150 -o mul_mat_vec_id
up facm2 60 -o flash_attn --variant 'f32_f16_f16_cm2$'
