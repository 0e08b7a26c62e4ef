#version 450

// mul_mat_vec_q3_k.comp: D = A * B with A in q3_K (110-byte blocks of 256 elements, interface
// notes 2.4). Interface as mul_mat_vec.comp (mul_mat_vec_base.comp); body, work split and
// accumulation order in mul_mat_vec_superblock.comp.
//
// Thread t's quad g (elements 128 n + 32 g + l + j, n = t / 8, l = 4 (t % 8), j < 4; see
// mul_mat_vec_superblock.comp): q = (bits 2g.. of qs[32 n + l + j]) - (bit 4n + g of
// hmask[l + j] ? 0 : 4). Group grp's 6-bit scale s_grp has its low 4 bits in nibble grp / 8
// of scales[grp % 8] and its high 2 bits at bits 2 (grp / 4).. of scales[8 + grp % 4].
// Element = d * (s_grp - 32) * q.

#include "mul_mat_vec_base.comp"

#define KQ_HAS_MIN 0
#define KQ_SHARED_SCALES_MAX_COLS 2

void thread_quants(uint ib, uint t, out vec4 q[4])
{
    const uint n = t / 8;
    const uint l = 4 * (t % 8);
    // hmask at byte 0, qs at 32 of a 110-byte block: 2-byte aligned.
    const uint qs = a_word(110 * ib + 32 + 32 * n + l, 2);
    const uint hmask = a_word(110 * ib + l, 2);
    [[unroll]] for (uint g = 0; g < 4; ++g) {
        const uint low = (qs >> (2 * g)) & 0x03030303u;
        const uint high = (hmask >> (4 * n + g)) & 0x01010101u;
        // low - 4 without the high bit, low with it: (low | high << 2) - 4.
        q[g] = bytes_minus(low | (high << 2), 4.0);
    }
}

vec2 group_scale(uint ib, uint grp)
{
    const uint low = (uint(data_a[ib].scales[grp % 8]) >> (4 * (grp / 8))) & 0xFu;
    const uint high = (uint(data_a[ib].scales[8 + grp % 4]) >> (2 * (grp / 4))) & 3u;
    const int s = int(low | (high << 4)) - 32;
    return vec2(float(data_a[ib].d) * float(s), 0.0);
}

// Two super-blocks per pass with several columns too (mul_mat_vec_superblock.comp).
#define KQ_UNROLL_COLUMNS 2

#include "mul_mat_vec_superblock.comp"
