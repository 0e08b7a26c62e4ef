#!/usr/bin/env bash
# Written by session 45 for its last device budget (about 200 s): s45d trimmed. Cases of every
# cm2 MUL_MAT_ID variant for mmidnga and mmidngb, then each against the committed tree on the
# cm2 MUL_MAT_ID rows, one round.
source ci/device-calls.sh "$1" || exit 1
OUT=$1
pack() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
for t in mmidnga mmidngb; do
    QUIET=1 device_run ${t}_run 50 $T/$t -o mul_mm_id --variant '_cm2' --cases 40 --devices 0,0,0
    grep -E "cases, " $LOGS/${t}_run.log | grep -v " 0 failed" | cut -c1-100; pack
    device_bench ${t}_b 45 --shaders $T/$t --against shaders -o mul_mm_id --variant 'q4_0_f16_cm2$,q8_0_f16_cm2$,q4_k_f16_cm2$' --rounds 1 | cut -c1-180; pack
done
