#version 450

// mul_mat_split_k_reduce.comp (`split_k_reduce`, docs/interface.md §8.3): adds up the k_num
// partial results mul_mm.comp wrote for a split-k MUL_MAT.
//
// Bindings (set 0): 0 the scratch (float, readonly): split s holds its partial D at
//   s * ne + i; 1 dst (float, writeonly).
// Push constants: uint ne (= M * N * batches), uint k_num (= split_k).
// Workgroup: 256 invocations, no specialization constants. Dispatch: ceil(ne / 1024)
//   workgroups; invocation g writes outputs 4g .. 4g + 3 (those below ne).
// Arithmetic: d[i] = ((0 + a[i]) + a[ne + i]) + ... + a[(k_num - 1) * ne + i], in float, in
//   that order (src/model/tolerance.rs charges one rounding per split).
//
// Worked example (ne = 6, k_num = 3): one workgroup; invocation 1 writes d[4] = a[4] + a[10]
// + a[16] and d[5] = a[5] + a[11] + a[17]; invocations 2.. have nothing to write.

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

layout(binding = 0) readonly buffer A { float data_a[]; };
layout(binding = 1) writeonly buffer D { float data_d[]; };

layout(push_constant) uniform parameter {
    uint ne;
    uint k_num;
} p;

void main()
{
    const uint first = gl_GlobalInvocationID.x * 4;
    for (uint j = 0; j < 4; ++j) {
        const uint i = first + j;
        if (i >= p.ne) {
            return;
        }
        float sum = 0.0;
        for (uint s = 0; s < p.k_num; ++s) {
            sum += data_a[s * p.ne + i];
        }
        data_d[i] = sum;
    }
}
