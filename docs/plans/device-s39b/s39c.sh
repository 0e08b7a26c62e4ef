#!/usr/bin/env bash
# s39b cut to the device time left (about 270 s with the start): cm1pv's correctness first
# (20 cases of each cm1 variant), then its prefill row against the committed tree, 1 round.
source ci/device-calls.sh "$1" || exit 1
pack() { tar czf "$1/logs.tgz" -C "$1" logs; }
device_run cm1pv_run 50 $T/cm1pv -o flash_attn --variant 'cm1$' --cases 20 --devices 0,0,0,0; pack "$1"
device_bench cm1pv 15 --shaders $T/cm1pv --against $T/base -o flash_attn --variant 'f32_f16_f16_cm1$' --row N=512 --rounds 1 | cut -c1-180; pack "$1"
grep -h "^stats" "$LOGS"/cm1pv.log | sort -u | cut -c1-200
