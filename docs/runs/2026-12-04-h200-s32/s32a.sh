#!/usr/bin/env bash
# Device call 1 (session 32): cm1 flash-attention timing copies (prefill and D=64 decode rows),
# then the cm2 matmul with legacy quants unrolled 8 K steps (u8) against upstream 0.1.109.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
T=.devbin/trees
bash .gl/on-device.sh true
b() { # name, limit, extra args
    local n=$1 l=$2; shift 2
    local s=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - s )) s"
    grep -E '^(flash_|mul_|summary)' $OUT/$n.log | cut -c1-250
}
FA="-o flash_attn --variant f32_f16_f16_cm1$"
b base_pf 60 --shaders shaders --against $U $FA --row "N=512" --rounds 1
for t in nopv nos nomask noexp nostorek; do
    b ${t}_pf 40 --shaders $T/$t $FA --row "N=512" --rounds 1 --time-wrong
done
b base_dec 40 --shaders shaders $FA --row "KV=32768 D=64" --rounds 1
for t in nopv nos nomask noexp nostorek; do
    b ${t}_dec 40 --shaders $T/$t $FA --row "KV=32768 D=64" --rounds 1 --time-wrong
done
b u8_q8 150 --shaders $T/u8 --against $U -o mul_mm --variant 'q8_0_f16_f16acc_cm2' --rounds 3
b u8_q4 60 --shaders $T/u8 --against $U -o mul_mm --variant 'q4_0_f16_f16acc_cm2' --row 14336 --rounds 3
tar czf $OUT/s32a.tgz -C $OUT --exclude s32a.tgz . 2>/dev/null
