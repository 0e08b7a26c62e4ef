#!/usr/bin/env bash
# Device call 5 (session 29): the re-landed scalar flash attention (K and V a tile ahead,
# 402fe3f): every flash-attention variant, 100 cases each; the scalar f16 rows against
# upstream 0.1.109, 3 rounds.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
t=$(date +%s)
timeout 100 bash .gl/on-device.sh $V run --shaders shaders -o flash_attn --cases 100 --devices 0,0,0,0 --out $OUT/run > $OUT/run.log 2>&1
echo "run rc=$? $(( $(date +%s) - t )) s"; grep -E "cases in|findings|FAIL|error|, [1-9][0-9]* failed" $OUT/run.log | cut -c1-200 | tail -8
t=$(date +%s)
timeout 140 bash .gl/on-device.sh $V bench --shaders shaders --against $U -o flash_attn --variant 'flash_attn_f32_f16_f16$' --rounds 3 --time-limit 100 > $OUT/fa_vs_up.log 2> $OUT/fa_vs_up.err
echo "fa_vs_up rc=$? $(( $(date +%s) - t )) s"
grep -E '^flash_attn' $OUT/fa_vs_up.log | cut -c1-200
cd $OUT && rm -f run/report.html && tar czf call5.tgz *.log *.err run && rm -rf *.log *.err run
