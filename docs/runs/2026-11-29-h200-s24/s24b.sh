#!/usr/bin/env bash
# Device call 2 (session 24). Trees (copies of v_base with mul_mm.comp changed):
#   v_s4  B's aligned quad picked from the mat2x4 by a select (no dynamic column index), and
#         b_value's element by selects
#   v_s5  v_s4 + the inner loop's warp-tile test folded for t = 0 when NUM_WARPS <= WARP_TILES
#   v_s6  v_s4 + one warp tile per warp assumed (timing only, as call 1's v_s2)
# Then v_s5's mul_mm and mul_mm_id differential cases, and v_f1's cm2 flash attention against
# upstream 0.1.109.
OUT=$1
U=.devbin/upstream-shaders
V=.devbin/vkdiff
D=.devbin
bash .gl/on-device.sh true
t=$(date +%s)
for o in mul_mm mul_mm_id; do
    timeout 90 bash .gl/on-device.sh $V run --shaders $D/v_s5 -o $o --time 70s --out $OUT/run_$o > $OUT/run_$o.log 2>&1 &
done
wait
echo "runs $(( $(date +%s) - t )) s"
for o in mul_mm mul_mm_id; do
    grep -E "cases in|findings|FAIL|error" $OUT/run_$o.log | cut -c1-200 | tail -6
    rm -f $OUT/run_$o/report.html $OUT/run_$o/report.jsonl
done
b() { # name, limit, shaders, against, extra args
    local n=$1 l=$2 s=$3 a=$4; shift 4
    local t=$(date +%s)
    timeout $((l + 40)) bash .gl/on-device.sh $V bench --shaders $s --against $a "$@" --time-limit $l > $OUT/$n.log 2> $OUT/$n.err
    echo "$n rc=$? $(( $(date +%s) - t )) s"
    grep -E '^(mul_mm|flash_attn) |^stats' $OUT/$n.log | cut -c1-230
}
MM='matmul_q8_0_f32_f16acc$,matmul_f16_f32_f16acc$,matmul_q4_0_f32_f16acc$'
for s in s4 s5 s6; do b ${s}_vs_base 50 $D/v_$s $D/v_base -o mul_mm --variant "$MM" --row "4096×512×4096" --rounds 2; done
b f1_vs_up 90 $D/v_f1 $U -o flash_attn --variant cm2
gzip -f $OUT/*.err
