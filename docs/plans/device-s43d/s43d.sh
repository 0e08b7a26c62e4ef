#!/usr/bin/env bash
# Session 43, call 4 (about 220 s): call 3 ran the MUL_MAT_ID cm2 f16 rows 1.24 / 1.53 of
# upstream where session 42's table had 1.90 / 2.23, after c6fe4c1 put B's load first in every
# K step. The committed tree now keeps A first on the MUL_MAT_ID path: its cm2 rows against
# upstream, as many as 200 s allow.
source ci/device-calls.sh "$1" || exit 1
OUT=$1
device_bench mmid_up 200 --shaders shaders --against $U -o mul_mm_id --variant '_cm2' --rounds 3 | cut -c1-180
tar czf "$OUT/logs.tgz" -C "$OUT" logs
