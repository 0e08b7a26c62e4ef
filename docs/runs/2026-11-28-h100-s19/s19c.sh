#!/usr/bin/env bash
# Device call (session 19): the flash-attention key loop kept rolled ([[dont_unroll]], as
# upstream's three shaders mark theirs). K = the committed tree with the attribute on the
# scalar, cm1 and cm2 key loops; I = exp B (K and V direct at every Br, stride hint) with it;
# L = exp D (B + row sums by a product with ones) with it. Bench against shaders/ (2 rounds,
# KV=4096 rows: decode D64, D128, prefill), then validation of every flash-attention path.
OUT=$1
V=.devbin/vkdiff
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
run_bench() { # tree variant tag
  s=$(date +%s)
  timeout 90 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$1 --against $PWD/shaders --rounds 2 -o flash_attn --variant "$2" --row 'KV=4096' --time-limit 70 > $OUT/$3.log 2> $OUT/$3.err
  echo "$3 bench rc=$? $(( $(date +%s) - s )) s"
  grep -E '^flash_attn ' $OUT/$3.log | cut -c50-240
  grep '^stats' $OUT/$3.log | grep -v reduce | sed -E 's/Stack Size 0, //; s/flash_attn_f32_f16_f16\S* //' | cut -c1-200
}
run_bench I 'f16_f16_cm2' I
run_bench L 'f16_f16_cm2' L
run_bench K 'f16_f16_cm2' K-cm2
run_bench K 'f16_f16_cm1' K-cm1
run_bench K 'f32_f16_f16$' K-scalar
for x in I K; do
  s=$(date +%s)
  VKDIFF_SHADERS=$PWD/.devbin/exp/$x timeout 70 bash .gl/on-device.sh $V run -o flash_attn --cases 12 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val$x > $OUT/val$x.log 2>&1
  echo "val $x rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL' $OUT/val$x.log | head -5; rm -rf $OUT/val$x
done
gzip -f $OUT/*.err
