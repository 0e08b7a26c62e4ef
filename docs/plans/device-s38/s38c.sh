#!/usr/bin/env bash
# Session 38: where the quantized mat-vec's time goes (q8_0 14336x4096 takes as long as f16,
# with half the bytes). Against the committed tree:
#   mvw32: the 2-byte-aligned blocks' qs words by aligned 32-bit loads (3 loads a chunk of
#          8 bytes instead of 4 16-bit ones): q4_0, q5_0, q8_0, iq4_nl (a real candidate)
#   mvquad: consecutive invocations take consecutive 4-element quads (each B load of the
#          workgroup one contiguous run) instead of 8-element chunks split in two halves
#   mvquadw: mvquad with mvw32's loads
#   mvnob: diagnostic, quantized bodies without B loads (wrong results: statuses fail)
#   mvnoa: diagnostic, quantized bodies without qs loads (wrong results)
source ci/device-calls.sh "$1" || exit 1
for t in mvw32 mvquad mvquadw; do
    device_bench $t 50 --shaders $T/$t --against shaders -o mul_mat_vec --variant 'q4_0_f32_f32,q8_0_f32_f32,q5_0_f32_f32,iq4_nl_f32_f32,q4_1_f32_f32' --rounds 2 | grep -v '^summary' | cut -c1-200
done
for t in mvnob mvnoa; do
    device_bench $t 30 --shaders $T/$t --against shaders -o mul_mat_vec --variant 'q4_0_f32_f32,q8_0_f32_f32' --row '· 1 col' --rounds 1 | grep -v '^summary' | cut -c1-200
done
