#!/usr/bin/env bash
# Written by session 45 (about 480 s): cm2 MUL_MAT_ID with mmidn (narrow last column tile) plus
# a cheaper gather (mmidng.patch): both scans of the ids walk (slot, token) with counters
# instead of a division and a remainder per pair, the second scan runs only in invocations
# whose matches meet the workgroup's own column tiles, and a workgroup with no tile of its own
# leaves after the gather. Cases, then against the committed tree and against mmidn alone.
# Stage (main, clean): GGML=0.1.161 UPSTREAM=0.1.109 bash ci/gpu.sh stage && bash ci/stage-trees.sh docs/plans/device-s45
# Run with carry [".gl", ".devbin"]: bash .devbin/s45c.sh $OUT
source ci/device-calls.sh "$1" || exit 1
OUT=$1
pack() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
QUIET=1 device_run mmidng_run 70 $T/mmidng -o mul_mm_id --variant '_cm2' --cases 40 --devices 0,0; pack
device_bench mmidng 170 --shaders $T/mmidng --against shaders -o mul_mm_id --variant 'cm2$' --rounds 3 | cut -c1-180; pack
device_bench mmidng_n 170 --shaders $T/mmidng --against $T/mmidn -o mul_mm_id --variant 'cm2$' --rounds 3 | cut -c1-180; pack
