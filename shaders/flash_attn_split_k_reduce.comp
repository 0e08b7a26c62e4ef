#version 450

// flash_attn_split_k_reduce.comp: combines the k_num partial results of split-k flash
// attention (§9.7) into dst.
//
// Bindings (set 0): 0 the scratch written by flash_attn.comp (float, readonly), 1 dst
//   (float, writeonly). Push constants: uint D (head size), N (rows = dst.ne1 = H), k_num.
// Specialization constants: none; 32 invocations. Dispatch: N workgroups; workgroup n
//   combines row n.
// Scratch layout: split s holds the unnormalised O of row n at D·N·s + D·n + d; after all
//   k_num of those, split s holds L (its sum of exponentials) of row n at D·N·k_num + 2·N·s + n
//   and M (the maximum its exponentials are relative to) at D·N·k_num + 2·N·s + N + n.
// Result: over the splits with L_s ≠ 0 (the others had every key masked), with m = max M_s
//   and f_s = exp(M_s − m), dst[D·n + d] = Σ_s f_s·O_s[d] · (1 / Σ_s f_s·L_s). Sums run over s
//   in order, with fma. With no such split the row is NaN, like the unsplit kernel.
//
// Worked example (D = 64, N = 2, k_num = 3): the O blocks take 3·2·64 = 384 floats; row 1's
// L values are at 384 + 1, 384 + 5, 384 + 9 and its M values at 384 + 3, 384 + 7, 384 + 11;
// invocation 5 of workgroup 1 writes dst[64 + 5] and dst[64 + 37] from O_s[1][5] at
// 128·s + 69 and O_s[1][37] at 128·s + 101.

#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x = 32, local_size_y = 1, local_size_z = 1) in;

layout(binding = 0) readonly buffer A { float data_a[]; };
layout(binding = 1) writeonly buffer Dst { float data_d[]; };

layout(push_constant) uniform parameter {
    uint D;
    uint N;
    uint k_num;
} p;

void main()
{
    const uint n = gl_WorkGroupID.x;
    const uint tid = gl_LocalInvocationID.x;
    const uint lm = p.D * p.N * p.k_num;

    // Splits whose keys were all masked (L_s = 0, M_s still the initial −FLT_MAX/2) take no
    // part; with none left the row is NaN, as in the unsplit kernel.
    float m = uintBitsToFloat(0xFEFFFFFFu);
    for (uint s = 0; s < p.k_num; ++s) {
        if (data_a[lm + 2 * p.N * s + n] != 0.0) {
            m = max(m, data_a[lm + 2 * p.N * s + p.N + n]);
        }
    }
    float l = 0.0;
    for (uint s = 0; s < p.k_num; ++s) {
        const float ls = data_a[lm + 2 * p.N * s + n];
        if (ls != 0.0) {
            l = fma(exp(data_a[lm + 2 * p.N * s + p.N + n] - m), ls, l);
        }
    }
    const float inv = 1.0 / l;

    for (uint d = tid; d < p.D; d += 32) {
        float o = 0.0;
        for (uint s = 0; s < p.k_num; ++s) {
            if (data_a[lm + 2 * p.N * s + n] != 0.0) {
                const float f = exp(data_a[lm + 2 * p.N * s + p.N + n] - m);
                o = fma(f, data_a[p.D * p.N * s + p.D * n + d], o);
            }
        }
        data_d[p.D * n + d] = l == 0.0 ? uintBitsToFloat(0x7FC00000u) : o * inv;
    }
}
