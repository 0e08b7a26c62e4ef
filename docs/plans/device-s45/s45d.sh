#!/usr/bin/env bash
# Written by session 45 after s45c: mmidn's narrow tiles wrote nothing where the tile was 16
# wide (quantized MUL_MAT_ID config: BN 64, BK 16; q4_0 and q8_0 cases failed, f16 passed).
# mmidnga: narrow tiles only where the host enables smaller matrices (f16/bf16 large tile);
# mmidngb: narrow tiles never under 32 columns. Both with mmidng's gather. Cases of every cm2
# MUL_MAT_ID variant, then b against a (about 300 s).
source ci/device-calls.sh "$1" || exit 1
OUT=$1
pack() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
for t in mmidnga mmidngb; do
    QUIET=1 device_run ${t}_run 60 $T/$t -o mul_mm_id --variant '_cm2' --cases 40 --devices 0,0
    grep -E "cases, " $LOGS/${t}_run.log | grep -v " 0 failed" | cut -c1-100; pack
done
device_bench ngb_nga 170 --shaders $T/mmidngb --against $T/mmidnga -o mul_mm_id --variant 'cm2$' --rounds 3 | cut -c1-180; pack
