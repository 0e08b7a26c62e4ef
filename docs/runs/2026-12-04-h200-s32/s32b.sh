#!/usr/bin/env bash
# Device call 2 (session 32): scalar flash attention with the combination's row loop rolled
# (fa_v8) and also one key loop (fa_v5): cases, then timed against the committed tree; the
# cm1 timing copy with one P.V copy (onecopy); the cm2 legacy-quant cases of u8.
OUT=$1
W=$(mktemp -d)   # logs here, one tarball in OUT (the tool returns only a few files)
V=.devbin/vkdiff
T=.devbin/trees
bash .gl/on-device.sh true
r() { # name, limit, extra args
    local n=$1 l=$2; shift 2
    local s=$(date +%s)
    timeout $l bash .gl/on-device.sh $V run --out $W/$n "$@" > $W/$n.log 2>&1
    echo "$n rc=$? $(( $(date +%s) - s )) s"; grep -E "cases in|findings|failed, [1-9]" $W/$n.log | head
    rm -rf $W/$n/*.html
}
b() { # name, limit, extra args
    local n=$1 l=$2; shift 2
    local s=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench "$@" --time-limit $l > $W/$n.log 2> $W/$n.err
    echo "$n rc=$? $(( $(date +%s) - s )) s"
    grep -E '^(flash_|mul_|summary)|^stats' $W/$n.log | cut -c1-250
}
FAS='f32_f16_f16$,f32_f16_q4_0$,f32_f16_q8_0$'
r v8_cases 120 --shaders $T/fa_v8 -o flash_attn --variant "$FAS" --cases 60 --devices 0,0,0,0
r v5_cases 120 --shaders $T/fa_v5 -o flash_attn --variant "$FAS" --cases 60 --devices 0,0,0,0
b v8_bench 110 --shaders $T/fa_v8 --against shaders -o flash_attn --variant 'f32_f16_f16$' --rounds 3
b v5_bench 110 --shaders $T/fa_v5 --against shaders -o flash_attn --variant 'f32_f16_f16$' --rounds 3
FA="-o flash_attn --variant f32_f16_f16_cm1$"
b onecopy_pf 40 --shaders $T/onecopy $FA --row "N=512" --rounds 1 --time-wrong
b onecopy_dec 30 --shaders $T/onecopy $FA --row "KV=32768 D=64" --rounds 1 --time-wrong
CM2='q4_0_f16_cm2,q4_0_f16_f16acc_cm2,q4_1_f16_cm2,q4_1_f16_f16acc_cm2,q5_0_f16_cm2,q5_0_f16_f16acc_cm2,q5_1_f16_cm2,q5_1_f16_f16acc_cm2,q8_0_f16_cm2,q8_0_f16_f16acc_cm2,iq4_nl_f16_cm2,iq4_nl_f16_f16acc_cm2'
r u8_cases 170 --shaders $T/u8 -o mul_mm --variant "$CM2" --cases 15 --devices 0,0,0,0
tar czf $OUT/s32b.tgz -C $W .
