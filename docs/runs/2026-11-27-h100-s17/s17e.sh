#!/usr/bin/env bash
# Device call (session 17): the working tree's scalar flash attention (logits after both keys'
# dot products) validated and benched against upstream 0.1.109 (3 rounds, all scalar rows);
# then copies against the working tree:
#   s_fast   - scalar: the softmax step without live selects where all the lane's keys are live
#   cm1_nopv - cm1 without P·V (wrong)     cm1_nos - cm1 without S = Q·Kᵀ (wrong)
#   cm1_nopf - cm1 fetching each tile's K at its start instead of during the previous tile
OUT=$1
V=.devbin/vkdiff
U=.devbin/upstream-shaders
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V run -o flash_attn --variant 'f16_f16$,q4_0$,q8_0$' --cases 60 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL|error|dst\[' $OUT/val.log | head -20; rm -rf $OUT/val/report.html
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V bench --against $U --rounds 3 -o flash_attn --variant 'f32_f16_f16$' > $OUT/scalar.log 2> $OUT/scalar.err
echo "scalar rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/scalar.log | cut -c50-250; grep -E '^stats' $OUT/scalar.log | cut -c1-200
b() { # name variant row rounds
  s=$(date +%s)
  timeout 150 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$1 --against $PWD/shaders --rounds $4 --time-wrong -o flash_attn --variant "$2" --row "$3" > $OUT/$1.log 2> $OUT/$1.err
  echo "$1 rc=$? $(( $(date +%s) - s )) s"
  grep -E '^flash_attn ' $OUT/$1.log | cut -c50-250
  grep -E '^stats.*ours.*,128,0,8' $OUT/$1.log | cut -c1-200
}
b s_fast 'f32_f16_f16$' 'D=128' 2
b cm1_nopv 'f16_f16_cm1' 'N=512' 1
b cm1_nos 'f16_f16_cm1' 'N=512' 1
b cm1_nopf 'f16_f16_cm1' 'D=128' 2
gzip -f $OUT/*.err
