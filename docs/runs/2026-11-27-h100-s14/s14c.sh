#!/usr/bin/env bash
# Device call (session 14): cm2 flash-attention softmax experiments against ours (2 rounds):
# sgrows (a subgroup per row, coalesced mask reads), nomask and nosoft (timing only); then
# sgrows validated on every cm2 variant.
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
for e in sgrows nomask nosoft; do
  for r in "N=512" "N=1 KV=16384"; do
    s=$(date +%s)
    timeout 90 bash .gl/on-device.sh $V bench --shaders .devbin/exp/$e --against $PWD/shaders --rounds 2 --time-wrong -o flash_attn --variant f16_f16_cm2 --row "$r" > $OUT/$e-${r%% *}.log 2> $OUT/$e.err
    echo "== $e $r rc=$? $(( $(date +%s) - s )) s"
    grep -E '^flash_attn ' $OUT/$e-${r%% *}.log | awk '{print $3,$4,$5,$6,"exp",$(NF-10),"base",$(NF-4),"ratio",$(NF-2),$NF}'
  done
  grep '^stats' $OUT/$e-N=512.log | grep -v reduce | sed -E 's/Binary Size [0-9]+, //; s/Stack Size 0, //' | cut -c1-190
done
s=$(date +%s)
timeout 120 bash .gl/on-device.sh $V run --shaders .devbin/exp/sgrows -o flash_attn --variant cm2 --cases 60 --jobs 8 --shrink-budget 4 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL|^flash_attn ' $OUT/val.log | cut -c1-150 | head -20; rm -rf $OUT/val
rm -f $OUT/*.err
