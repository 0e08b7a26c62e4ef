#!/usr/bin/env bash
# Device call (session 14): experiments against ours (2 rounds, statistics), then the prefill
# flash-attention and MUL_MAT_ID rows against upstream 0.1.109 (3 rounds).
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
U=.devbin/upstream-shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
ex() { # name, timeout, bench args...
  local e=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t bash .gl/on-device.sh $V bench --shaders .devbin/exp/$e --against $PWD/shaders --rounds 2 "$@" > $OUT/$e.log 2> $OUT/$e.err
  echo "== $e rc=$? $(( $(date +%s) - s )) s"
  grep -E '^(flash_attn|mul_mat_vec|mul_mm) ' $OUT/$e.log | awk '{print $3,$4,$5,$6,$7,"exp",$(NF-10),"base",$(NF-4),"ratio",$(NF-2),$NF}'
  grep '^stats' $OUT/$e.log | grep -v reduce | sed -E 's/Binary Size [0-9]+, //; s/Stack Size 0, //' | cut -c1-190
}
for e in og_split keys_outer og_outer keys_rolled; do ex $e 45 -o flash_attn --variant f16_f16_cm1 --row "N=1 KV=16384"; done
ex cchunk 60 -o mul_mat_vec --variant q4_k_f32_f32 --row "8 col"
ex mmq 60 -o mul_mm --variant q8_0 --row "4096×512×4096"
cp $OUT/mmq.log $OUT/mmq8.log; ex mmq 60 -o mul_mm --variant q4_0 --row "4096×512×4096"
s=$(date +%s)
timeout 100 bash .gl/on-device.sh $V bench --against $U -o flash_attn --row "N=512" --time-limit 80 > $OUT/prefill.log 2> $OUT/prefill.err
echo "prefill rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/prefill.log | cut -c1-220; grep -E 'took' $OUT/prefill.err | head
s=$(date +%s)
timeout 170 bash .gl/on-device.sh $V bench --against $U -o mul_mm_id --time-limit 150 > $OUT/mmid.log 2> $OUT/mmid.err
echo "mmid rc=$? $(( $(date +%s) - s )) s"
grep -E '^mul_mm_id ' $OUT/mmid.log | cut -c1-220; sed -n '/^summary/,$p' $OUT/mmid.log | grep -v '^stats'
gzip -f $OUT/*.err
