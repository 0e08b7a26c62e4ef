#version 450
// bench_fma.comp: the device's f32 FMA throughput ceiling for `vkdiff bench`.
// Binding 0: one float per invocation (written so the work is not optimised away);
// push constant: iterations. Each iteration is 8 independent vec4 FMAs: 64 flops.

layout(local_size_x = 256) in;

layout(binding = 0) writeonly buffer Out { float result[]; };
layout(push_constant) uniform Params { uint iterations; } p;

void main()
{
    const float seed = float(gl_GlobalInvocationID.x) * 1e-7;
    vec4 acc[8];
    for (int c = 0; c < 8; ++c) {
        acc[c] = vec4(seed + float(c));
    }
    const vec4 mul = vec4(0.999999);
    const vec4 add = vec4(1e-7);
    for (uint i = 0; i < p.iterations; ++i) {
        for (int c = 0; c < 8; ++c) {
            acc[c] = fma(acc[c], mul, add);
        }
    }
    vec4 sum = vec4(0.0);
    for (int c = 0; c < 8; ++c) {
        sum += acc[c];
    }
    result[gl_GlobalInvocationID.x] = sum.x + sum.y + sum.z + sum.w;
}
