#!/usr/bin/env bash
# Device call 5 (session 23), timing copies of the committed cm2 shader (v_new2) on the prefill
# row: tA without the partial-tile, ALiBi and softcap paths (the mask always added as a
# matrix: right for the bench row only); tC = tA with O = α·O + f16(P·V) as one expression.
OUT=$1
V=.devbin/vkdiff
D=.devbin
bash .gl/on-device.sh true
b() { # name, limit, shaders, against, extra args
    local n=$1 l=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^(flash_attn|stats)' $OUT/$n.log | cut -c1-220
}
b tA_vs_new2 20 $D/tA $D/v_new2 -o flash_attn --variant cm2 --row "N=512"
b tC_vs_new2 20 $D/tC $D/v_new2 -o flash_attn --variant cm2 --row "N=512"
gzip -f $OUT/*.err
