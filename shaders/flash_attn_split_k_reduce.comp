#version 450

// flash_attn_split_k_reduce.comp: combines the k_num partial results of split-k flash
// attention (interface.md §9.7) into dst.
//
// Bindings (set 0): 0 the scratch written by flash_attn.comp (float, readonly), 1 dst
//   (float, writeonly). Push constants: uint D (head size), N (rows = dst.ne1 = H), k_num.
// Specialization constants: none; WG invocations. Dispatch: N workgroups; workgroup n
//   combines row n.
// Scratch layout: split s holds the unnormalised O of row n at D·N·s + D·n + d; after all
//   k_num of those, split s holds L (its sum of exponentials) of row n at D·N·k_num + 2·N·s + n
//   and M (the maximum its exponentials are relative to) at D·N·k_num + 2·N·s + N + n.
// Result: over the splits with L_s ≠ 0 (the others had every key masked), with m = max M_s
//   and f_s = exp(M_s − m), dst[D·n + d] = Σ_s f_s·O_s[d] · (1 / Σ_s f_s·L_s). Sums run over s
//   in order, with fma. With no such split the row is NaN, like the unsplit kernel.
//
// Work: the invocations share the splits' L_s and f_s through shared memory, WG splits at a
// time, and each keeps the sums of columns tid and tid + WG (head sizes are at most 256,
// interface.md §9.5). (With 32 invocations, each walking every split's L and M again for each of
// its columns, the reduce was about half of a decode row's time on the H200: 11 of 22.8 µs at KV
// 4096, D 64, 33 splits.)
//
// Worked example (D = 64, N = 2, k_num = 3): the O blocks take 3·2·64 = 384 floats; row 1's
// L values are at 384 + 1, 384 + 5, 384 + 9 and its M values at 384 + 3, 384 + 7, 384 + 11;
// invocation 5 of workgroup 1 writes dst[64 + 5] from O_s[1][5] at 128·s + 69, and no
// invocation has a second column (64 ≤ WG).

#extension GL_EXT_control_flow_attributes : enable

const uint WG = 128;
layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;

layout(binding = 0) readonly buffer A { float data_a[]; };
layout(binding = 1) writeonly buffer Dst { float data_d[]; };

layout(push_constant) uniform parameter {
    uint D;
    uint N;
    uint k_num;
} p;

shared float partial_max[WG];
shared float split_l[WG];       // L_s of the current WG splits
shared float split_f[WG];       // f_s = exp(M_s − m) of the same splits (where L_s ≠ 0)

void main()
{
    const uint n = gl_WorkGroupID.x;
    const uint tid = gl_LocalInvocationID.x;
    const uint lm = p.D * p.N * p.k_num;

    // m over the splits with L_s ≠ 0 (initially −FLT_MAX/2, a split's M before any live key):
    // a tree of maxima, exact in any order.
    float m = uintBitsToFloat(0xFEFFFFFFu);
    for (uint s = tid; s < p.k_num; s += WG) {
        if (data_a[lm + 2 * p.N * s + n] != 0.0) {
            m = max(m, data_a[lm + 2 * p.N * s + p.N + n]);
        }
    }
    partial_max[tid] = m;
    barrier();
    [[unroll]] for (uint w = WG / 2; w > 0; w /= 2) {
        if (tid < w) {
            partial_max[tid] = max(partial_max[tid], partial_max[tid + w]);
        }
        barrier();
    }
    m = partial_max[0];

    float l = 0.0;
    float o[2] = float[2](0.0, 0.0);
    for (uint s0 = 0; s0 < p.k_num; s0 += WG) {
        barrier();   // the previous splits' values are read by everyone
        const uint s = s0 + tid;
        if (s < p.k_num) {
            const float ls = data_a[lm + 2 * p.N * s + n];
            split_l[tid] = ls;
            split_f[tid] = ls != 0.0 ? exp(data_a[lm + 2 * p.N * s + p.N + n] - m) : 0.0;
        }
        barrier();
        const uint count = min(WG, p.k_num - s0);
        for (uint i = 0; i < count; ++i) {
            const float ls = split_l[i];
            if (ls != 0.0) {
                const float f = split_f[i];
                l = fma(f, ls, l);
                const uint at = p.D * p.N * (s0 + i) + p.D * n;
                [[unroll]] for (uint j = 0; j < 2; ++j) {
                    const uint d = tid + j * WG;
                    if (d < p.D) {
                        o[j] = fma(f, data_a[at + d], o[j]);
                    }
                }
            }
        }
    }
    const float inv = 1.0 / l;
    [[unroll]] for (uint j = 0; j < 2; ++j) {
        const uint d = tid + j * WG;
        if (d < p.D) {
            data_d[p.D * n + d] = l == 0.0 ? uintBitsToFloat(0x7FC00000u) : o[j] * inv;
        }
    }
}
