#!/usr/bin/env bash
# Device call 1 (session 33). Copies in .devbin/trees/:
#   q8w, q8e   cm2 matmul q8_0 decode from 16-bit words (q8w: sign-extended by shifts;
#              q8e: q + 128 as an f16 through its exponent bits), same values
#   sguard     scalar flash attention: P·V without a test per element where every V of the
#              subgroup is finite (subgroupAll), the guarded loop otherwise; same results
#   snoguard   scalar flash attention without the zero-weight guard (timing only)
#   fround     cm2 flash attention without the weights' redundant f16 rounding (same results)
#   fno*       cm2 flash attention with one part taken out (timing only)
# First the copies that could be kept run cases; then the rows against upstream 0.1.109.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
T=.devbin/trees
LOGS=$OUT/logs; mkdir -p $LOGS
bash .gl/on-device.sh true
c() { # name, limit, tree, extra args
    local n=$1 l=$2 t=$3; shift 3
    local s=$(date +%s)
    timeout $l bash .gl/on-device.sh $V run --shaders $T/$t "$@" --out $LOGS/$n > $LOGS/$n.log 2>&1
    echo "$n rc=$? $(( $(date +%s) - s )) s"; tail -3 $LOGS/$n.log | cut -c1-200
}
b() { # name, limit, extra args
    local n=$1 l=$2; shift 2
    local s=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench "$@" --time-limit $l > $LOGS/$n.log 2> $LOGS/$n.err
    echo "$n rc=$? $(( $(date +%s) - s )) s"
    grep -E '^(flash_|mul_|summary)' $LOGS/$n.log | cut -c1-250
}
c q8w_run 40 q8w -o mul_mm,mul_mm_id --variant 'q8_0_f16_f16acc_cm2,q8_0_f16_cm2' --cases 25 --devices 0,0,0,0
c sguard_run 60 sguard -o flash_attn --variant 'f32_f16_f16$,f32_f16_q4_0$,f32_f16_q8_0$' --cases 50 --devices 0,0,0,0
MM="-o mul_mm --variant q8_0_f16_f16acc_cm2 --row 14336 --rounds 3"
b q8base 60 --shaders shaders --against $U $MM
b q8w 60 --shaders $T/q8w --against $U $MM
b q8e 60 --shaders $T/q8e --against $U $MM
FS="-o flash_attn --variant f32_f16_f16$ --row N=512"
b s_base 60 --shaders shaders --against $U $FS --rounds 2
b sguard 60 --shaders $T/sguard --against shaders $FS --rounds 2
b snoguard 40 --shaders $T/snoguard $FS --rounds 1 --time-wrong
FA="-o flash_attn --variant f32_f16_f16_cm2$ --row N=512"
b fa_base 50 --shaders shaders --against $U $FA --rounds 2
b fround 50 --shaders $T/fround --against shaders $FA --rounds 2
for t in fnomask fnoexp fnosum fnopv fnoalpha fnomax; do
    b $t 25 --shaders $T/$t $FA --rounds 1 --time-wrong
done
nvidia-smi -q -d CLOCK,POWER > $LOGS/gpu.txt 2>&1 || true
