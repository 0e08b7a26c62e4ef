#version 450

// mul_mat_vec_q6_k.comp: D = A * B with A in q6_K (210-byte blocks of 256 elements, interface
// notes 2.4). Interface as mul_mat_vec.comp (mul_mat_vec_base.comp); body, work split and
// accumulation order in mul_mat_vec_superblock.comp.
//
// Group grp (elements 16 grp .. 16 grp + 15, n = grp / 8, g = (grp % 8) / 2, l = 16 (grp % 2)
// + j): low 4 bits = nibble g / 2 of ql[64 n + 32 (g % 2) + l], high 2 bits = bits 2g.. of
// qh[32 n + l], q_j = (low | high << 4) - 32; scale = the signed byte scales[grp].
// Element = d * scale * q.

#include "mul_mat_vec_base.comp"

#define KQ_HAS_MIN 0

void group_quants(uint ib, uint grp, out float q[16])
{
    const uint n = grp / 8;
    const uint g = (grp % 8) / 2;
    const uint l_first = 16 * (grp % 2);
    const uint low_first = 64 * n + 32 * (g % 2) + l_first;
    const uint low_shift = 4 * (g / 2);
    // ql[low_first..] at byte low_first, qh[32 n + l_first..] at 128 + 32 n + l_first of a
    // 210-byte block: 2-byte aligned.
    const uvec4 ql = a_bytes16(210 * ib + low_first, 2);
    const uvec4 qh = a_bytes16(210 * ib + 128 + 32 * n + l_first, 2);
    [[unroll]] for (uint j = 0; j < 16; ++j) {
        const uint low = (byte_of(ql, j) >> low_shift) & 0xFu;
        const uint high = (byte_of(qh, j) >> (2 * g)) & 3u;
        q[j] = uintBitsToFloat(low | (high << 4) | EXP23_BITS) - (8388608.0 + 32.0);
    }
}

vec2 group_scale(uint ib, uint grp)
{
    return vec2(float(data_a[ib].d) * float(int(data_a[ib].scales[grp])), 0.0);
}

#include "mul_mat_vec_superblock.comp"
