#version 450

// mul_mat_vec_q2_k.comp: D = A * B with A in q2_K (84-byte blocks of 256 elements, interface
// notes 2.4). Interface as mul_mat_vec.comp (mul_mat_vec_base.comp); body, work split and
// accumulation order in mul_mat_vec_superblock.comp.
//
// Thread t's quad g (elements 128 n + 32 g + l + j, n = t / 8, l = 4 (t % 8), j < 4; see
// mul_mat_vec_superblock.comp): q = bits 2g.. of qs[32 n + l + j]. Group grp's scale and min
// are the low and high nibbles of scales[grp]. Element = d * scale * q - dmin * min.

#include "mul_mat_vec_base.comp"

#define KQ_HAS_MIN 1
#define KQ_SHARED_SCALES_MAX_COLS 4

void thread_quants(uint ib, uint t, out vec4 q[4])
{
    // qs at byte 16 of an 84-byte block: 4-byte aligned.
    const uint w = a_word(84 * ib + 16 + 32 * (t / 8) + 4 * (t % 8), 4);
    [[unroll]] for (uint g = 0; g < 4; ++g) {
        q[g] = bytes_minus((w >> (2 * g)) & 0x03030303u, 0.0);
    }
}

vec2 group_scale(uint ib, uint grp)
{
    const uint packed = uint(data_a[ib].scales[grp]);
    const vec2 d = vec2(data_a[ib].d);
    return vec2(d.x * float(packed & 0xFu), d.y * float(packed >> 4));
}

#include "mul_mat_vec_superblock.comp"
