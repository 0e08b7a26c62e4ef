#version 450
// bench_coopmat.comp: the device's cooperative-matrix (VK_KHR_cooperative_matrix) f16×f16→f32
// throughput ceiling for `vkdiff bench`, the peak that coopmat kernels get a share of.
// One subgroup per workgroup (local_size_x = constant 3, the subgroup size); constants 0-2 are
// the shape M×N×K the driver reports. Each iteration is 4 independent coopMatMulAdd: 8·M·N·K
// flops per subgroup. Binding 0: one M×N f32 tile per workgroup (written so nothing is
// optimised away); push constant: iterations.

#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require

layout(local_size_x_id = 3) in;
layout(constant_id = 0) const uint M = 16;
layout(constant_id = 1) const uint N = 16;
layout(constant_id = 2) const uint K = 16;

layout(binding = 0) writeonly buffer Out { float result[]; };
layout(push_constant) uniform Params { uint iterations; } p;

void main()
{
    const float16_t seed = float16_t(float(gl_WorkGroupID.x % 7u) * 1e-3);
    coopmat<float16_t, gl_ScopeSubgroup, M, K, gl_MatrixUseA> a =
        coopmat<float16_t, gl_ScopeSubgroup, M, K, gl_MatrixUseA>(seed);
    coopmat<float16_t, gl_ScopeSubgroup, K, N, gl_MatrixUseB> b =
        coopmat<float16_t, gl_ScopeSubgroup, K, N, gl_MatrixUseB>(float16_t(0.5));
    coopmat<float, gl_ScopeSubgroup, M, N, gl_MatrixUseAccumulator> acc[4];
    for (int c = 0; c < 4; ++c) {
        acc[c] = coopmat<float, gl_ScopeSubgroup, M, N, gl_MatrixUseAccumulator>(float(c));
    }
    for (uint i = 0; i < p.iterations; ++i) {
        for (int c = 0; c < 4; ++c) {
            acc[c] = coopMatMulAdd(a, b, acc[c]);
        }
    }
    coopmat<float, gl_ScopeSubgroup, M, N, gl_MatrixUseAccumulator> sum = acc[0];
    for (int c = 1; c < 4; ++c) {
        sum = sum + acc[c];
    }
    coopMatStore(sum, result, gl_WorkGroupID.x * M * N, N, gl_CooperativeMatrixLayoutRowMajor);
}
