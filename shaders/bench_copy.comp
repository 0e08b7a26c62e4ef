#version 450
// bench_copy.comp: the device's shader memory bandwidth ceiling for `vkdiff bench`.
// Binding 0: source, binding 1: destination (uvec4 each); push constant: count of uvec4s.
// Each invocation copies one uvec4 per grid stride, so every byte is read once and written once.

layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Src { uvec4 src[]; };
layout(binding = 1) writeonly buffer Dst { uvec4 dst[]; };
layout(push_constant) uniform Params { uint count; } p;

void main()
{
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
        dst[i] = src[i];
    }
}
