#!/usr/bin/env bash
# Device call (session 17): where the scalar prefill row's time goes now (timing copies of the
# working tree, 1 round each, wrong results allowed): s_nopv (P·V loads V but adds 0·V),
# s_nosel (P·V without the zero-weight select), s_noqk (one fma of four in Q·K), s_noexp (no
# exp of the weights).
OUT=$1
V=.devbin/vkdiff
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
for x in s_nopv s_nosel s_noqk s_noexp; do
  s=$(date +%s)
  timeout 100 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$x --against $PWD/shaders --rounds 1 --time-wrong -o flash_attn --variant 'f32_f16_f16$' --row 'N=512' > $OUT/$x.log 2>> $OUT/err.txt
  echo "$x rc=$? $(( $(date +%s) - s )) s"
  grep -E '^flash_attn ' $OUT/$x.log | cut -c50-250; grep -E '^stats.*ours.*,128,0,8' $OUT/$x.log | cut -c1-200
done
gzip $OUT/err.txt
