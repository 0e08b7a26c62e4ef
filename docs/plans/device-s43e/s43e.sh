#!/usr/bin/env bash
# Session 43, call 5 (about 120 s, the session's last device seconds): cm2 q8_0 decode reading
# qs as 16-bit words with unpack8 (q8u8), on top of B-first (c6fe4c1), against the committed
# tree. Session 34's word form used shifts (H200: 0.87 of upstream, the byte reads 0.90-0.91).
# Stage: bash ci/stage-trees.sh docs/plans/device-s43e (the binary of ci/gpu.sh stage at 426d783)
source ci/device-calls.sh "$1" || exit 1
OUT=$1
pack() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
QUIET=1 device_run q8u8_run 40 $T/q8u8 -o mul_mm --variant 'q8_0_f16_f16acc_cm2,q8_0_f16_cm2' --cases 20 --devices 0,0; pack
device_bench q8u8 50 --shaders $T/q8u8 --against shaders -o mul_mm --variant 'q8_0_f16_f16acc_cm2$' --rounds 3 | cut -c1-180; pack
grep -h "^stats" "$LOGS"/q8u8.log | sort -u | cut -c1-220
