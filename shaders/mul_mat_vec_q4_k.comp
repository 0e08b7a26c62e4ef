#version 450

// mul_mat_vec_q4_k.comp: D = A * B with A in q4_K (144-byte blocks of 256 elements, interface
// notes 2.4). Interface as mul_mat_vec.comp (mul_mat_vec_base.comp); body, work split and
// accumulation order in mul_mat_vec_superblock.comp.
//
// Thread t's quad g (elements 128 n + 32 g + l + j, n = t / 8, l = 4 (t % 8), j < 4; see
// mul_mat_vec_superblock.comp) lies in 32-element sub-block sb = 4 n + g: q = nibble g % 2
// of qs[64 n + 32 (g / 2) + l + j], with the sub-block's 6-bit scale and min (k4_thread_scales).
// Element = d * scale * q - dmin * min.

#include "mul_mat_vec_base.comp"

#define KQ_HAS_MIN 1

#include "mul_mat_vec_k4_scales.comp"

void thread_quants(uint ib, uint t, out vec4 q[4])
{
    // qs at byte 16 of a 144-byte block: both words 4-byte aligned.
    const uint qs = 144 * ib + 16 + 64 * (t / 8) + 4 * (t % 8);
    const uint w01 = a_word(qs, 4);
    const uint w23 = a_word(qs + 32, 4);
    q[0] = bytes_minus(w01 & 0x0F0F0F0Fu, 0.0);
    q[1] = bytes_minus((w01 >> 4) & 0x0F0F0F0Fu, 0.0);
    q[2] = bytes_minus(w23 & 0x0F0F0F0Fu, 0.0);
    q[3] = bytes_minus((w23 >> 4) & 0x0F0F0F0Fu, 0.0);
}

#define KQ_THREAD_SCALES 1
void thread_scales(uint ib, uint t, out vec2 sc[4])
{
    k4_thread_scales(a_bytes16(144 * ib, 16), t, sc);
}

// Two super-blocks per pass with 2 columns; one with 4 (H100, 4096 x 4096: 1.06x two a pass,
// which was 0.96 of upstream 0.1.109; 2 columns took 0.96x with one); with 8, rows outer and
// one a pass (mul_mat_vec_superblock.comp).
#define KQ_UNROLL_COLUMNS 2
#define KQ_UNROLL_4_COLUMNS 1
#define KQ_UNROLL_8_COLUMNS 1
#define KQ_COLUMNS_OUTER_FROM 9

#include "mul_mat_vec_superblock.comp"
