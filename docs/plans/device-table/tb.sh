#!/usr/bin/env bash
# Part of the whole bench table (docs/plans/device-table/README.md): committed shaders against
# upstream 0.1.109, 3 rounds a row.
source ci/device-calls.sh "$1" || exit 1
pack() { tar czf "$1/logs.tgz" -C "$1" logs; }
up() { local n=$1 l=$2; shift 2; device_bench "$n" "$l" --shaders shaders --against $U "$@" --rounds 3 | cut -c1-200; pack "$OUT_DIR"; }
OUT_DIR=$1
up mm 180 -o mul_mm
up mmid 120 -o mul_mm_id
