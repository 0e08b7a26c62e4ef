#!/usr/bin/env bash
# Device call (session 14): flash attention (every path: decode and prefill) and wkv7 against
# upstream 0.1.109 (3 rounds), then the cm2 MUL_MAT_ID rows; a short FA validation first.
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
U=.devbin/upstream-shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
s=$(date +%s)
timeout 60 bash .gl/on-device.sh $V run -o flash_attn --cases 20 --jobs 8 --shrink-budget 4 --max-findings 2 --out $OUT/val > $OUT/val.log 2>&1
echo "val rc=$? $(( $(date +%s) - s )) s"; grep -E 'cases in|distinct|^FAIL' $OUT/val.log; rm -rf $OUT/val
s=$(date +%s)
timeout 260 bash .gl/on-device.sh $V bench --against $U -o flash_attn -o wkv7 --time-limit 240 > $OUT/fa.log 2> $OUT/fa.err
echo "fa rc=$? $(( $(date +%s) - s )) s"
grep -E '^(flash_attn|wkv7) ' $OUT/fa.log | cut -c1-230; sed -n '/^summary/,$p' $OUT/fa.log | grep -v '^stats'
grep -E 'took|WRONG|^  ' $OUT/fa.err | head -30
s=$(date +%s)
timeout 230 bash .gl/on-device.sh $V bench --against $U -o mul_mm_id --row cm2 --time-limit 200 > $OUT/mmid.log 2> $OUT/mmid.err
echo "mmid rc=$? $(( $(date +%s) - s )) s"
grep -E '^mul_mm_id ' $OUT/mmid.log | cut -c1-230; sed -n '/^summary/,$p' $OUT/mmid.log | grep -v '^stats'; grep took $OUT/mmid.err | head -3
gzip -f $OUT/*.err
