#!/usr/bin/env bash
# Session 43, call 2 (about 330 s): call 1 (docs/runs/2026-12-06-s43/call1) ran cm2 mul_mm with
# B's tensor load before A's (cm2q8ba) 1.01-1.02x the committed tree on the f16 and q4_0 rows,
# but its time limit cut the q8_0 rows. Here: cm2q8ba against upstream on every cm2 mul_mm row,
# and cm2q8ba16 (the same plus 16 K steps a pass for q8_0) against upstream on the q8_0 rows,
# with 40 cases of every cm2 mul_mm variant of that tree first.
# Stage: UPSTREAM=0.1.109 bash ci/gpu.sh stage && bash ci/stage-trees.sh docs/plans/device-s43 docs/plans/device-s43b
source ci/device-calls.sh "$1" || exit 1
OUT=$1
pack() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
QUIET=1 device_run ba16_run 60 $T/cm2q8ba16 -o mul_mm --variant '_cm2' --cases 40 --devices 0,0,0,0; pack
device_bench ba_up 230 --shaders $T/cm2q8ba --against $U -o mul_mm --variant '_f16acc_cm2$' --rounds 3 | cut -c1-180; pack
device_bench ba16_up 80 --shaders $T/cm2q8ba16 --against $U -o mul_mm --variant 'q8_0_f16_f16acc_cm2$' --rounds 3 | cut -c1-180; pack
grep -h "^stats" "$LOGS"/ba*.log | grep q8_0 | sort -u | cut -c1-220
