#!/usr/bin/env bash
# The whole bench table, one part per device call (docs/plans/device-table/README.md):
# committed shaders against upstream 0.1.109, 3 rounds a row. Usage: table.sh OUT a|b|c|d
source ci/device-calls.sh "$1" || exit 1
up() { local n=$1 l=$2; shift 2; device_bench "$n" "$l" --shaders shaders --against $U "$@" --rounds 3 | cut -c1-200; tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
OUT=$1
case $2 in
a) up fa 250 -o flash_attn; up wkv7 30 -o wkv7; up mvid 150 -o mul_mat_vec_id ;;
b) up mm 330 -o mul_mm ;;
c) up mv 300 -o mul_mat_vec ;;
d) up mmid 380 -o mul_mm_id ;;
*) echo "usage: table.sh OUT a|b|c|d" >&2; exit 2 ;;
esac
