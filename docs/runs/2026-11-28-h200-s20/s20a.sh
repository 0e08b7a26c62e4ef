#!/usr/bin/env bash
# Device call (session 20; the device is now an H200): the first half of the whole table against
# upstream 0.1.109's shaders on the same runner, 3 rounds: every mat-vec and mat-vec ID row,
# then every flash-attention row (scalar, cm1, cm2) and wkv7.
OUT=$1
export VKDIFF_SHADERS=$PWD/shaders
U=.devbin/upstream-shaders
V=.devbin/vkdiff
bash .gl/on-device.sh true
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total --format=csv > $OUT/gpu.txt 2>&1
bash .gl/on-device.sh $V devices > $OUT/devices.txt 2>&1
cat $OUT/gpu.txt
s=$(date +%s)
timeout 330 bash .gl/on-device.sh $V bench --against $U -o mul_mat_vec -o mul_mat_vec_id --time-limit 300 > $OUT/mv.log 2> $OUT/mv.err
echo "mv rc=$? $(( $(date +%s) - s )) s"
sed -n '/^summary/,$p' $OUT/mv.log | grep -v '^stats'
s=$(date +%s)
timeout 240 bash .gl/on-device.sh $V bench --against $U -o flash_attn -o wkv7 --time-limit 215 > $OUT/fa.log 2> $OUT/fa.err
echo "fa rc=$? $(( $(date +%s) - s )) s"
grep -E '^(flash_attn|wkv7) ' $OUT/fa.log | cut -c1-230; sed -n '/^summary/,$p' $OUT/fa.log | grep -v '^stats'
gzip -f $OUT/*.err
