#!/usr/bin/env bash
# Device call (session 19): C3 = call 6's C2 without the ones-matrix row sums: only the
# whole-tile shortcuts (mask function without the ncols test when ncols == Bc; no logit pass
# without mask, softcap or a partial tile). Validated on every cm2 variant, timed against
# upstream 0.1.109 on the KV=4096 rows, 2 rounds.
OUT=$1
V=.devbin/vkdiff
U=.devbin/upstream-shaders
bash .gl/on-device.sh true
s=$(date +%s)
VKDIFF_SHADERS=$PWD/.devbin/exp/C3 timeout 40 bash .gl/on-device.sh $V run -o flash_attn --variant cm2 --cases 30 --jobs 8 --shrink-budget 8 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val C3 rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL' $OUT/val.log | head -5; rm -rf $OUT/val
s=$(date +%s)
VKDIFF_SHADERS=$PWD/shaders timeout 80 bash .gl/on-device.sh $V bench --shaders .devbin/exp/C3 --against $U --rounds 2 -o flash_attn --variant 'f16_f16_cm2' --row 'KV=4096' > $OUT/C3.log 2> $OUT/C3.err
echo "C3 bench rc=$? $(( $(date +%s) - s )) s"
grep -E '^flash_attn ' $OUT/C3.log | cut -c50-240
gzip -f $OUT/*.err
