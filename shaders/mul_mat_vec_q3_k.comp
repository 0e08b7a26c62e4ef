#version 450

// mul_mat_vec_q3_k.comp: D = A * B with A in q3_K (110-byte blocks of 256 elements, interface
// notes 2.4). Interface as mul_mat_vec.comp (mul_mat_vec_base.comp); body, work split and
// accumulation order in mul_mat_vec_superblock.comp.
//
// Group grp (elements 16 grp .. 16 grp + 15, n = grp / 8, g = (grp % 8) / 2, l = 16 (grp % 2)
// + j): q_j = (bits 2g.. of qs[32 n + l]) - (bit 4n + g of hmask[l] ? 0 : 4); the 6-bit
// scale s_grp has its low 4 bits in nibble grp / 8 of scales[grp % 8] and its high 2 bits at
// bits 2 (grp / 4).. of scales[8 + grp % 4]. Element = d * (s_grp - 32) * q.

#include "mul_mat_vec_base.comp"

#define KQ_HAS_MIN 0

void group_quants(uint ib, uint grp, out float q[16])
{
    const uint n = grp / 8;
    const uint g = (grp % 8) / 2;
    const uint l_first = 16 * (grp % 2);
    // qs[32 n + l_first..] at byte 32 + 32 n + l_first, hmask[l_first..] at l_first of a
    // 110-byte block: 2-byte aligned.
    const uvec4 qs = a_bytes16(110 * ib + 32 + 32 * n + l_first, 2);
    const uvec4 hmask = a_bytes16(110 * ib + l_first, 2);
    [[unroll]] for (uint j = 0; j < 16; ++j) {
        const uint low = (byte_of(qs, j) >> (2 * g)) & 3u;
        const uint high = (byte_of(hmask, j) >> (4 * n + g)) & 1u;
        // low - 4 without the high bit, low with it: (low | high << 2) - 4.
        q[j] = uintBitsToFloat(low | (high << 2) | EXP23_BITS) - (8388608.0 + 4.0);
    }
}

vec2 group_scale(uint ib, uint grp)
{
    const uint low = (uint(data_a[ib].scales[grp % 8]) >> (4 * (grp / 8))) & 0xFu;
    const uint high = (uint(data_a[ib].scales[8 + grp % 4]) >> (2 * (grp / 4))) & 3u;
    const int s = int(low | (high << 4)) - 32;
    return vec2(float(data_a[ib].d) * float(s), 0.0);
}

#include "mul_mat_vec_superblock.comp"
