#!/usr/bin/env bash
# Device call (session 19): on top of call 5's cm2 shader (the working tree): C2 = no per-key
# test on whole tiles (the mask function without the ncols test when ncols == Bc; no logit
# pass at all without mask, softcap or a partial tile) and the row sums by a product with a
# ones matrix; validated on every cm2 variant and timed against upstream 0.1.109 (KV=4096
# rows, 1 round). P1 = timing only: the mask added as a matrix (no −∞ test), prefill row.
OUT=$1
V=.devbin/vkdiff
U=.devbin/upstream-shaders
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
s=$(date +%s)
VKDIFF_SHADERS=$PWD/.devbin/exp/C2 timeout 40 bash .gl/on-device.sh $V run -o flash_attn --variant cm2 --cases 30 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val C2 rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL' $OUT/val.log | head -5; rm -rf $OUT/val
for x in C2 P1; do
  s=$(date +%s)
  row='KV=4096'; [ $x = P1 ] && row='N=512'
  timeout 70 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$x --against $U --rounds 1 -o flash_attn --variant 'f16_f16_cm2' --row "$row" --time-wrong > $OUT/$x.log 2> $OUT/$x.err
  echo "$x bench rc=$? $(( $(date +%s) - s )) s"
  grep -E '^flash_attn ' $OUT/$x.log | cut -c50-240
  grep '^stats' $OUT/$x.log | grep ours | sed -E 's/Stack Size 0, //; s/flash_attn_f32_f16_f16\S* //' | cut -c1-200
done
gzip -f $OUT/*.err
