#version 450

// mul_mat_vec_q2_k.comp: D = A * B with A in q2_K (84-byte blocks of 256 elements, interface
// notes 2.4). Interface as mul_mat_vec.comp (mul_mat_vec_base.comp); body, work split and
// accumulation order in mul_mat_vec_superblock.comp.
//
// Group grp (elements 16 grp .. 16 grp + 15, n = grp / 8, g = (grp % 8) / 2): scale and min
// are the low and high nibbles of scales[grp]; q_j = bits 2g.. of qs[32 n + 16 (grp % 2) + j].
// Element = d * scale * q - dmin * min.

#include "mul_mat_vec_base.comp"

#define KQ_HAS_MIN 1

void group_quants(uint ib, uint grp, out float q[16])
{
    const uint first = 32 * (grp / 8) + 16 * (grp % 2);
    const uint shift = 2 * ((grp % 8) / 2);
    // qs[first..] at byte 16 + first of an 84-byte block: 4-byte aligned.
    const uvec4 w = a_bytes16(84 * ib + 16 + first, 4);
    [[unroll]] for (uint j = 0; j < 16; ++j) {
        q[j] = small_uint_to_float((byte_of(w, j) >> shift) & 3u);
    }
}

vec2 group_scale(uint ib, uint grp)
{
    const uint packed = uint(data_a[ib].scales[grp]);
    const vec2 d = vec2(data_a[ib].d);
    return vec2(d.x * float(packed & 0xFu), d.y * float(packed >> 4));
}

#include "mul_mat_vec_superblock.comp"
