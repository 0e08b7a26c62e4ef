#!/usr/bin/env bash
# Session 41, call 5 (about 150 s). vearly.patch against shaders/ at db8f58d+: cm2 flash
# attention with f16 K/V issues V's tensor load before the softmax (the prefill row is 0.89
# of upstream 0.1.109), as cases and against the committed tree and upstream.
source ci/device-calls.sh "$1" || exit 1
pack() { tar czf "$1/logs.tgz" -C "$1" logs; }
QUIET=1 device_run vearly_run 60 $T/vearly -o flash_attn --variant 'f16_f16_cm2,f16_f16_f16acc_cm2' --cases 60 --devices 0,0,0,0; pack "$1"
grep -E "cases, |cases in|error" "$LOGS"/vearly_run.log | cut -c1-160 | head
device_bench vearly 45 --shaders $T/vearly --against shaders -o flash_attn --variant 'f32_f16_f16_cm2$' --rounds 2 | cut -c1-180; pack "$1"
grep -h "^stats" "$LOGS"/vearly.log | sort -u | cut -c1-200
device_bench vearlyu 45 --shaders $T/vearly --against $U -o flash_attn --variant 'f32_f16_f16_cm2$' --rounds 3 | cut -c1-180; pack "$1"
