#!/usr/bin/env bash
# Device call (session 17): the scalar flash-attention mask staged in shared memory (working
# tree): validate the scalar variants, then every scalar row against upstream 0.1.109 (3
# rounds). Then where cm1's prefill time goes: copies of the cm1 shader under .devbin/exp/
# against the working tree on the prefill row (1 round, timing only where marked):
#   cm1_nomask - no mask read (wrong)   cm1_nosel - P·V without the zero-weight select
#   cm1_nopv   - no P·V at all (wrong)
OUT=$1
V=.devbin/vkdiff
U=.devbin/upstream-shaders
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V run -o flash_attn --variant 'f16_f16$,q4_0$,q8_0$' --cases 60 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL|error' $OUT/val.log | head -20; rm -rf $OUT/val
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V bench --against $U --rounds 3 -o flash_attn --variant 'f32_f16_f16$' > $OUT/scalar.log 2> $OUT/scalar.err
echo "scalar rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/scalar.log | cut -c50-250; grep -E '^stats' $OUT/scalar.log | cut -c1-200
for x in cm1_nomask cm1_nosel cm1_nopv; do
  s=$(date +%s)
  timeout 120 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$x --against $PWD/shaders --rounds 1 --time-wrong -o flash_attn --variant 'f16_f16_cm1' --row "N=512" > $OUT/$x.log 2> $OUT/$x.err
  echo "$x rc=$? $(( $(date +%s) - s )) s"
  grep -E '^flash_attn ' $OUT/$x.log | cut -c50-250
  grep -E '^stats.*ours.*cm1\[' $OUT/$x.log | cut -c1-200
done
gzip -f $OUT/*.err
