#version 450

// mul_mat_vec_q4_k.comp: D = A * B with A in q4_K (144-byte blocks of 256 elements, interface
// notes 2.4). Interface as mul_mat_vec.comp (mul_mat_vec_base.comp); body, work split and
// accumulation order in mul_mat_vec_superblock.comp.
//
// Group grp (elements 16 grp .. 16 grp + 15) lies in 32-element sub-block sb = grp / 2:
// q_j = nibble (high for odd sb) of qs[32 (grp / 4) + 16 (grp % 2) + j], with the sub-block's
// 6-bit scale and min (k4_scale_min). Element = d * scale * q - dmin * min.

#include "mul_mat_vec_base.comp"

#define KQ_HAS_MIN 1

#include "mul_mat_vec_k4_scales.comp"

void group_quants(uint ib, uint grp, out float q[16])
{
    const uint first = 32 * (grp / 4) + 16 * (grp % 2);
    const uint shift = 4 * ((grp / 2) % 2);
    // qs[first..first + 15]: byte 16 + first of a 144-byte block, 16-byte aligned.
    const uvec4 w = a_bytes16(144 * ib + 16 + first, 16);
    [[unroll]] for (uint j = 0; j < 16; ++j) {
        q[j] = small_uint_to_float((byte_of(w, j) >> shift) & 0xFu);
    }
}

vec2 group_scale(uint ib, uint grp)
{
    return k4_group_scale(a_bytes16(144 * ib, 16), grp);
}

#include "mul_mat_vec_superblock.comp"
