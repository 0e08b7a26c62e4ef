#!/usr/bin/env bash
# Device call (session 19): cm2 flash attention experiments against the committed tree
# (shaders/), f16 K/V rows: A = K/V row strides hinted as multiples of 8 on the host's aligned
# pipeline (Clamp == 0, §9.5 rule 5); B = A + K and V straight from memory at every Br (prefill
# too); C = B with the K/V layouts' clamp mode from spec constant 4 (Undefined when aligned);
# D = B + the tile's row sums by a matrix product with ones instead of a row reduction.
# Each: bench against shaders/ (2 rounds, prefill + two decode rows), then validation.
OUT=$1
V=.devbin/vkdiff
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
for x in A B C D; do
  s=$(date +%s)
  timeout 110 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$x --against $PWD/shaders --rounds 2 -o flash_attn --variant 'f16_f16_cm2' --row 'KV=4096' --time-limit 80 > $OUT/$x.log 2> $OUT/$x.err
  echo "$x bench rc=$? $(( $(date +%s) - s )) s"
  grep -E '^flash_attn ' $OUT/$x.log | cut -c50-240
  grep '^stats' $OUT/$x.log | grep -E '128,64,64|256,32,32,128' | sed -E 's/Stack Size 0, //' | cut -c1-220
done
for x in A B C D; do
  s=$(date +%s)
  VKDIFF_SHADERS=$PWD/.devbin/exp/$x timeout 60 bash .gl/on-device.sh $V run -o flash_attn --variant cm2 --cases 30 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val$x > $OUT/val$x.log 2>&1
  echo "val $x rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL' $OUT/val$x.log | head -5; rm -rf $OUT/val$x
done
gzip -f $OUT/*.err
