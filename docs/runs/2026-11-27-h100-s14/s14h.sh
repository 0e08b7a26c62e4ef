#!/usr/bin/env bash
# Device call (session 14): cm2 softmax register experiments (lbits: live flags as bits;
# lbits2: and the logits re-read from Ssh), validated and against ours (2 rounds); then the
# four mul_mm cm2 rows call 7 did not reach, against upstream 0.1.109 (3 rounds).
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
U=.devbin/upstream-shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
for x in lbits lbits2; do
  s=$(date +%s)
  timeout 60 bash .gl/on-device.sh $V run --shaders .devbin/exp/$x -o flash_attn --variant cm2 --cases 40 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val-$x > $OUT/val-$x.log 2>&1
  echo "val $x rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL' $OUT/val-$x.log | cut -c1-150 | head -8; rm -rf $OUT/val-$x
  for r in prefill decode; do
    row="N=512"; [ $r = decode ] && row="N=1 KV=16384"
    s=$(date +%s)
    timeout 80 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$x --against $PWD/shaders --rounds 2 -o flash_attn --variant f16_f16_cm2 --row "$row" > $OUT/$x-$r.log 2> $OUT/$x-$r.err
    echo "== $x $r rc=$? $(( $(date +%s) - s )) s"
    grep -E '^flash_attn ' $OUT/$x-$r.log | cut -c50-240
  done
  grep '^stats' $OUT/$x-prefill.log | grep -v reduce | sed -E 's/Binary Size [0-9]+, //; s/Stack Size 0, //' | cut -c1-190
done
s=$(date +%s)
timeout 100 bash .gl/on-device.sh $V bench --against $U -o mul_mm --variant q8_0_f16_f16acc_cm2 --time-limit 90 > $OUT/mm-q8.log 2> $OUT/mm-q8.err
echo "mm-q8 rc=$? $(( $(date +%s) - s )) s"; grep -E '^mul_mm ' $OUT/mm-q8.log | cut -c16-240
s=$(date +%s)
timeout 60 bash .gl/on-device.sh $V bench --against $U -o mul_mm --variant q4_0_f16_f16acc_cm2 --row "4096×512×14336" > $OUT/mm-q4.log 2> $OUT/mm-q4.err
echo "mm-q4 rc=$? $(( $(date +%s) - s )) s"; grep -E '^mul_mm ' $OUT/mm-q4.log | cut -c16-240
gzip -f $OUT/*.err
