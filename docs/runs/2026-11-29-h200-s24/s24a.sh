#!/usr/bin/env bash
# Device call 1 (session 24). Trees (copies of the committed shaders, v_base, with one file changed):
#   v_f1  flash_attn_cm2: the mask layout ends at kv_end with clamp value f16 -inf, so every tile
#         with a mask adds it as a matrix (ALiBi: the mask scaled by the row's slope first);
#         no per-element mask function
#   v_f2  v_f1 without the softcap, ALiBi and no-mask paths (timing only: the lean ceiling)
#   v_s1  mul_mm.comp: the K-step loop over BK fully unrolled
#   v_s2  mul_mm.comp: one warp tile per warp assumed in the inner loop (timing only)
#   v_s3  v_s1 + v_s2
#   v_c1  mul_mm_cm2: no K unrolling (UNROLL_K = BK)
#   v_c2  mul_mm_cm2: every tile stored per element (no f32 coopmat conversion for a tensor store)
#   v_c3  v_c1 + v_c2
#   v_c4  mul_mm_cm2: no BN/2, BN/4 accumulators (timing only)
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
bash .gl/on-device.sh true
t=$(date +%s)
timeout 110 bash .gl/on-device.sh $V run --shaders $D/v_f1 -o flash_attn --variant cm2 --time 90s --out $OUT/run_f1 > $OUT/run_f1.log 2>&1
echo "run f1 $(( $(date +%s) - t )) s"
grep -E "cases in|findings|worst|FAIL|error" $OUT/run_f1.log | cut -c1-200 | tail -12
rm -f $OUT/run_f1/report.html
b() { # name, limit, shaders, against, extra args
    local n=$1 l=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^(mul_mm|flash_attn) |^stats' $OUT/$n.log | cut -c1-230
}
MM='matmul_q8_0_f32_f16acc$,matmul_f16_f32_f16acc$'
CM='matmul_f16_f16acc_cm2$,matmul_q4_0_f16_f16acc_cm2$'
b f1_vs_base 40 $D/v_f1 $D/v_base -o flash_attn --variant cm2 --row "N=512"
b f2_vs_f1 40 $D/v_f2 $D/v_f1 -o flash_attn --variant cm2 --row "N=512" --time-wrong
for s in s1 s2 s3; do b ${s}_vs_base 40 $D/v_$s $D/v_base -o mul_mm --variant "$MM" --row "4096×512×4096" --rounds 2; done
for c in c1 c2 c3 c4; do b ${c}_vs_base 40 $D/v_$c $D/v_base -o mul_mm --variant "$CM" --row "4096×512×4096" --rounds 2; done
gzip -f $OUT/*.err
