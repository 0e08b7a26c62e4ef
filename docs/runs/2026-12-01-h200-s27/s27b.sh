#!/usr/bin/env bash
# Device call 2 (session 27): scalar flash attention with a group's K and V of a tile loaded
# together before its scores (v_fa_hoist), with the next tile's K and V loaded a tile ahead
# everywhere (v_fa_ahead_all), and the working tree (a tile ahead where a group's share is at
# most 4 vectors, decode D = 64; else v_fa_hoist's order), each against HEAD (v_head), then
# the working tree against upstream 0.1.109; the flash-attention differential cases first.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
t=$(date +%s)
timeout 100 bash .gl/on-device.sh $V run --shaders shaders -o flash_attn --time 80s --devices 0,0,0,0 --out $OUT/run > $OUT/run.log 2>&1
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
b tree_vs_head 90 shaders $D/v_head -o flash_attn --variant $F --rounds 3
b hoist_vs_head 90 $D/v_fa_hoist $D/v_head -o flash_attn --variant $F --rounds 3
b ahead_all_vs_head 90 $D/v_fa_ahead_all $D/v_head -o flash_attn --variant $F --rounds 3
b tree_vs_up 90 shaders $U -o flash_attn --variant $F --rounds 3
gzip -f $OUT/*.err
