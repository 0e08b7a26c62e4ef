#!/usr/bin/env bash
# Device call 3 (session 27): the committed scalar flash attention (K and V a tile ahead where
# a group's share of a tile is at most 8 vectors: decode D = 64 and 128) against upstream
# 0.1.109 and HEAD (v_head), 3 rounds, after the flash-attention differential cases.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
t=$(date +%s)
timeout 150 bash .gl/on-device.sh $V run --shaders shaders -o flash_attn --cases 300 --devices 0,0,0,0 --out $OUT/run > $OUT/run.log 2>&1
echo "run rc=$? $(( $(date +%s) - t )) s"; grep -E "cases in|findings|FAIL|error|, [1-9][0-9]* failed" $OUT/run.log | cut -c1-200 | tail -8
rm -f $OUT/run/report.html $OUT/run/report.jsonl
b() { # name, limit, shaders, against, extra args
    local n=$1 l=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^flash_attn|^stats' $OUT/$n.log | cut -c1-200
    gzip -f $OUT/$n.log $OUT/$n.err
}
F='flash_attn_f32_f16_f16$'
b tree_vs_up 90 shaders $U -o flash_attn --variant $F --rounds 3
b tree_vs_head 90 shaders $D/v_head -o flash_attn --variant $F --rounds 3
