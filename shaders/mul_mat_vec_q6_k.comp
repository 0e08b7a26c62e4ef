#version 450

// mul_mat_vec_q6_k.comp: D = A * B with A in q6_K (210-byte blocks of 256 elements, interface
// notes 2.4). Interface as mul_mat_vec.comp (mul_mat_vec_base.comp); body, work split and
// accumulation order in mul_mat_vec_superblock.comp.
//
// Thread t's quad g (elements 128 n + 32 g + l + j, n = t / 8, l = 4 (t % 8), j < 4; see
// mul_mat_vec_superblock.comp): low 4 bits = nibble g / 2 of ql[64 n + 32 (g % 2) + l + j],
// high 2 bits = bits 2g.. of qh[32 n + l + j], q = (low | high << 4) - 32; group grp's scale
// is the signed byte scales[grp]. Element = d * scale * q.

#include "mul_mat_vec_base.comp"

#define KQ_HAS_MIN 0
#define KQ_SHARED_SCALES_MAX_COLS 8

void thread_quants(uint ib, uint t, out vec4 q[4])
{
    const uint n = t / 8;
    const uint l = 4 * (t % 8);
    // ql at byte 0, qh at 128 of a 210-byte block: 2-byte aligned.
    const uint ql[2] = uint[2](a_word(210 * ib + 64 * n + l, 2), a_word(210 * ib + 64 * n + 32 + l, 2));
    const uint qh = a_word(210 * ib + 128 + 32 * n + l, 2);
    [[unroll]] for (uint g = 0; g < 4; ++g) {
        const uint low = (ql[g % 2] >> (4 * (g / 2))) & 0x0F0F0F0Fu;
        const uint high = (qh >> (2 * g)) & 0x03030303u;
        q[g] = bytes_minus(low | (high << 4), 32.0);
    }
}

vec2 group_scale(uint ib, uint grp)
{
    return vec2(float(data_a[ib].d) * float(int(data_a[ib].scales[grp])), 0.0);
}

#include "mul_mat_vec_superblock.comp"
