#!/usr/bin/env bash
# Device call (session 14): mask read as 4-half vectors by lanes on consecutive keys, cm2
# (mvec) and cm1 (mvec1): validate every variant of the path, then against ours (2 rounds).
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
for e in mvec:cm2 mvec1:cm1; do
  x=${e%%:*}; path=${e##*:}
  s=$(date +%s)
  timeout 100 bash .gl/on-device.sh $V run --shaders .devbin/exp/$x -o flash_attn --variant $path --cases 50 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val-$x > $OUT/val-$x.log 2>&1
  echo "val $x rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL' $OUT/val-$x.log | cut -c1-150 | head -8
  for r in prefill decode; do
    row="N=512"; [ $r = decode ] && row="N=1 KV=16384"
    s=$(date +%s)
    timeout 100 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$x --against $PWD/shaders --rounds 2 -o flash_attn --variant f16_f16_$path --row "$row" > $OUT/$x-$r.log 2> $OUT/$x-$r.err
    echo "== $x $r rc=$? $(( $(date +%s) - s )) s"
    grep -E '^flash_attn ' $OUT/$x-$r.log | cut -c50-240
    grep -E 'WRONG|^  ' $OUT/$x-$r.err | head -8
  done
  grep '^stats' $OUT/$x-prefill.log | grep -v reduce | sed -E 's/Binary Size [0-9]+, //; s/Stack Size 0, //' | cut -c1-190
done
gzip -f $OUT/*.err
