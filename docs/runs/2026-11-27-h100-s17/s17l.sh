#!/usr/bin/env bash
# Device call (session 17): s_kpf, a scalar copy that fetches the next tile's K into registers
# right after this tile's dot products (in flight during the softmax and P·V): validate it,
# then against the working tree on every scalar row (2 rounds).
OUT=$1
V=.devbin/vkdiff
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
s=$(date +%s)
timeout 120 bash .gl/on-device.sh $V run --shaders .devbin/exp/s_kpf -o flash_attn --variant 'f16_f16$,q4_0$,q8_0$' --cases 60 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL|error|dst\[' $OUT/val.log | head -10; rm -rf $OUT/val
s=$(date +%s)
timeout 150 bash .gl/on-device.sh $V bench --shaders .devbin/exp/s_kpf --against $PWD/shaders --rounds 2 -o flash_attn --variant 'f32_f16_f16$' > $OUT/s_kpf.log 2> $OUT/err.txt
echo "s_kpf rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/s_kpf.log | cut -c50-250; grep -E '^stats.*ours' $OUT/s_kpf.log | cut -c1-200
gzip $OUT/err.txt
