#!/usr/bin/env bash
# Device call 1 (session 28): scalar flash attention with K and V a tile ahead (decode D = 64
# and 128; session 27's patch, re-applied): every flash-attention variant's differential cases,
# then the scalar f16 rows against upstream 0.1.109 and against HEAD's shaders (v_head), 3 rounds.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
t=$(date +%s)
timeout 170 bash .gl/on-device.sh $V run --shaders shaders -o flash_attn --cases 300 --devices 0,0,0,0 --out $OUT/run > $OUT/run.log 2>&1
echo "run rc=$? $(( $(date +%s) - t )) s"; grep -E "cases in|findings|FAIL|error|, [1-9][0-9]* failed" $OUT/run.log | cut -c1-200 | tail -8
rm -f $OUT/run/report.html; gzip -f $OUT/run/report.jsonl
b() { # name, limit, shaders, against, extra args
    local n=$1 l=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^flash_attn|^stats' $OUT/$n.log | cut -c1-200
}
F='flash_attn_f32_f16_f16$'
b tree_vs_up 100 shaders $U -o flash_attn --variant $F --rounds 3
b tree_vs_head 100 shaders $D/v_head -o flash_attn --variant $F --rounds 3
gzip -f $OUT/*.err
