#!/usr/bin/env bash
# Device call 3 (session 21): cm2 flash attention. v_f4 = the committed shaders plus (f1) the
# row sums of P as P times ones on the tensor cores and (f3) no per-element pass over a whole
# tile without mask or softcap; v_f1 and v_f3 each alone; v_fb the committed shaders. First the
# differential cases of the cm2 variants with v_f4 (the error model with the tensor-core row
# sum), then the timings; then the K-quant 8-column rows with and without 2 super-blocks per
# pass (v_fb against v_mb, the shaders before session 21's mat-vec commit).
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
bash .gl/on-device.sh true
t=$(date +%s)
timeout 100 bash .gl/on-device.sh $V run --shaders $D/v_f4 -o flash_attn --variant cm2 --time 80s --out $OUT/run > $OUT/run.log 2>&1
echo "run rc=$? $(( $(date +%s) - t )) s"; grep -E "^flash_attn .*(llvm|NVIDIA)|cases in|findings|worst" $OUT/run.log | cut -c1-200 | tail -40
b() { # name, shaders, against, extra args
    local n=$1 s=$2 a=$3; shift 3
    local t=$(date +%s)
    timeout 150 bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" --time-limit 120 > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^(mul_mat_vec|flash_attn)' $OUT/$n.log | cut -c1-200
}
b f4_vs_up $D/v_f4 $U -o flash_attn --variant cm2
b f4_vs_fb $D/v_f4 $D/v_fb -o flash_attn --variant cm2 --row "D=128"
b f1_vs_fb $D/v_f1 $D/v_fb -o flash_attn --variant cm2 --row "D=128"
b f3_vs_fb $D/v_f3 $D/v_fb -o flash_attn --variant cm2 --row "D=128"
b mv8 $D/v_fb $D/v_mb -o mul_mat_vec --all --variant q2_k_f32,q3_k_f32,q5_k_f32,q6_k_f32 --row "8 col"
gzip -f $OUT/*.err
rm -f $OUT/run/report.html
