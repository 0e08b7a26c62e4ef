#version 450

// mul_mat_vec_q5_k.comp: D = A * B with A in q5_K (176-byte blocks of 256 elements, interface
// notes 2.4). Interface as mul_mat_vec.comp (mul_mat_vec_base.comp); body, work split and
// accumulation order in mul_mat_vec_superblock.comp.
//
// As q4_K, plus a fifth bit: group grp (elements 16 grp .. 16 grp + 15, sub-block
// sb = grp / 2, l = 16 (grp % 2) + j) has q_j = nibble (high for odd sb) of
// qs[32 (grp / 4) + l] + 16 * (bit sb of qh[l]). Element = d * scale * q - dmin * min.

#include "mul_mat_vec_base.comp"

#define KQ_HAS_MIN 1

#include "mul_mat_vec_k4_scales.comp"

void group_quants(uint ib, uint grp, out float q[16])
{
    const uint sb = grp / 2;
    const uint l_first = 16 * (grp % 2);
    const uint first = 32 * (grp / 4) + l_first;
    const uint shift = 4 * (sb % 2);
    // qs[first..] at byte 48 + first, qh[l_first..] at 16 + l_first of a 176-byte block: both
    // 16-byte aligned.
    const uvec4 qs = a_bytes16(176 * ib + 48 + first, 16);
    const uvec4 qh = a_bytes16(176 * ib + 16 + l_first, 16);
    [[unroll]] for (uint j = 0; j < 16; ++j) {
        const uint low = (byte_of(qs, j) >> shift) & 0xFu;
        const uint fifth = (byte_of(qh, j) >> sb) & 1u;
        q[j] = small_uint_to_float(low | (fifth << 4));
    }
}

vec2 group_scale(uint ib, uint grp)
{
    return k4_group_scale(a_bytes16(176 * ib, 16), grp);
}

#include "mul_mat_vec_superblock.comp"
