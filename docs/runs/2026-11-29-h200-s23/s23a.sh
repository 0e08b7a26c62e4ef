#!/usr/bin/env bash
# Device call 1 (session 23): cm2 flash attention. Trees (each a copy of the committed shaders,
# v_base, with flash_attn_cm2.comp changed):
#   v_h    Q, K, V and mask row strides hinted as multiples of 8 on the aligned pipeline
#   v_hu   v_h + K and V layouts with the clamp mode of spec constant 4 (Undefined when aligned)
#   v_hm   v_h + the mask added as a matrix on whole tiles (SignedZeroInfNanPreserve declared,
#          NMax for the row maxima, the weights 0 under a -inf mask)
#   v_hum  v_hm + v_hu's clamp mode
#   v_q5   q5_K mat-vec without the 2-super-block unroll with several columns
# First the cm2 differential cases on v_hum and v_hm (side by side), then the timings.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
bash .gl/on-device.sh true
t=$(date +%s)
for v in hum hm; do
    timeout 110 bash .gl/on-device.sh $V run --shaders $D/v_$v -o flash_attn --variant cm2 --time 90s --out $OUT/run_$v > $OUT/run_$v.log 2>&1 &
done
wait
echo "runs $(( $(date +%s) - t )) s"
for v in hum hm; do
    echo "== v_$v"; grep -E "cases in|findings|worst|FAIL|error" $OUT/run_$v.log | cut -c1-200 | tail -12
    rm -f $OUT/run_$v/report.html
done
b() { # name, limit, shaders, against, extra args
    local n=$1 l=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((l + 30)) bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^(mul_mat_vec|flash_attn)' $OUT/$n.log | cut -c1-200
}
b h_vs_base 60 $D/v_h $D/v_base -o flash_attn --variant cm2
b hu_vs_h 60 $D/v_hu $D/v_h -o flash_attn --variant cm2
b hm_vs_h 40 $D/v_hm $D/v_h -o flash_attn --variant cm2 --row "N=512"
b hum_vs_up 60 $D/v_hum $U -o flash_attn --variant cm2
b q5_vs_base 40 $D/v_q5 $D/v_base -o mul_mat_vec --variant q5_k_f32
gzip -f $OUT/*.err
