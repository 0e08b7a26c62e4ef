#version 450

// mul_mat_vec_q5_k.comp: D = A * B with A in q5_K (176-byte blocks of 256 elements, interface
// notes 2.4). Interface as mul_mat_vec.comp (mul_mat_vec_base.comp); body, work split and
// accumulation order in mul_mat_vec_superblock.comp.
//
// As q4_K, plus a fifth bit: thread t's quad g (sub-block sb = 4 n + g, n = t / 8,
// l = 4 (t % 8), j < 4) has q = nibble g % 2 of qs[64 n + 32 (g / 2) + l + j]
// + 16 * (bit sb of qh[l + j]). Element = d * scale * q - dmin * min.

#include "mul_mat_vec_base.comp"

#define KQ_HAS_MIN 1

#include "mul_mat_vec_k4_scales.comp"

void thread_quants(uint ib, uint t, out vec4 q[4])
{
    const uint n = t / 8;
    // qh at byte 16, qs at 48 of a 176-byte block: every word 4-byte aligned.
    const uint qs = 176 * ib + 48 + 64 * n + 4 * (t % 8);
    const uint low[2] = uint[2](a_word(qs, 4), a_word(qs + 32, 4));
    const uint qh = a_word(176 * ib + 16 + 4 * (t % 8), 4);
    [[unroll]] for (uint g = 0; g < 4; ++g) {
        const uint nibbles = (low[g / 2] >> (4 * (g % 2))) & 0x0F0F0F0Fu;
        const uint fifth = (qh >> (4 * n + g)) & 0x01010101u;
        q[g] = bytes_minus(nibbles | (fifth << 4), 0.0);
    }
}

#define KQ_THREAD_SCALES 1
void thread_scales(uint ib, uint t, out vec2 sc[4])
{
    k4_thread_scales(a_bytes16(176 * ib, 16), t, sc);
}

// Four super-blocks per pass with one column (H100, 2026-12-06: 1.01 / 1.02 / 1.02x two at
// 4096², 14336x4096, 4096x14336; q6_K lost 16-20% the same way), two with several columns,
// columns outer from 4 columns (mul_mat_vec_superblock.comp).
#define KQ_UNROLL 4
#define KQ_UNROLL_COLUMNS 2
#define KQ_COLUMNS_OUTER_FROM 4

#include "mul_mat_vec_superblock.comp"
