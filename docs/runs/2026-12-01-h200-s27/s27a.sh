#!/usr/bin/env bash
# Device call 1 (session 27): wkv7 with the next token's inputs loaded a token ahead (v_pf),
# and with that plus 4-vector state rows (the working tree), against HEAD's wkv7 (v_head) and
# upstream 0.1.109, 3 rounds each; then the differential wkv7 cases of both new trees.
OUT=$1
V=.devbin/vkdiff
D=.devbin
U=.devbin/upstream-shaders
export VKDIFF_SHADERS=$PWD/shaders
bash .gl/on-device.sh true
b() { # name shaders against args...
    local name=$1 s=$2 a=$3; shift 3
    local t=$(date +%s)
    timeout 200 bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" > $OUT/$name.log 2> $OUT/$name.err
    echo "$name rc=$? $(( $(date +%s) - t )) s"
    grep -E '^wkv7|^rwkv|summary|^  ' $OUT/$name.log | cut -c1-230
}
b pfq_vs_head shaders $D/v_head -o wkv7 --rounds 3
b pf_vs_head $D/v_pf $D/v_head -o wkv7 --rounds 3
b pfq_vs_up shaders $U -o wkv7 --rounds 3
b pf_vs_up $D/v_pf $U -o wkv7 --rounds 3
for s in shaders $D/v_pf; do
    n=$(basename $s)
    timeout 120 bash .gl/on-device.sh $V run --shaders $s -o wkv7 --cases 400 --devices 0,0,0,0 --out $OUT/run-$n > $OUT/run-$n.log 2>&1
    echo "run $n rc=$?"; grep -E 'cases in|failed' $OUT/run-$n.log | head -5
done
gzip -f $OUT/*.err
