// mul_mat_vec_iq_lattice.comp: the mat-vec body of the lattice i-quants, included by the
// per-type files mul_mat_vec_iq1_s.comp ... mul_mat_vec_iq3_s.comp (upstream's file names;
// each sets nothing but its name). Interface as mul_mat_vec.comp (mul_mat_vec_base.comp);
// work split and accumulation order in mul_mat_vec_superblock.comp (16 invocations per
// super-block, four quads each); decoding in iq_decode.comp: a 16-element group has one scale,
// d * (sub-block factor), and exact integer quants.

#include "mul_mat_vec_base.comp"

#define IQ_ARG uint ib
#define IQ_BLK data_a[ib]
#define IQ_PASS ib
#include "iq_decode.comp"

#define KQ_HAS_MIN 0
// One super-block per pass: the lattice decode (table lookups in shared memory) costs more
// than the loads, and a second inlined copy of it only lengthens the JIT compile.
#define KQ_UNROLL 1

// Not unrolled: the body inlines this NUM_ROWS x NUM_COLS times, and sixteen inlined lattice
// decodes each made the pipelines slow to JIT-compile (over a minute on lavapipe).
void thread_quants(uint ib, uint t, out vec4 q[4])
{
    const uint first = kq_thread_first(t);
    [[dont_unroll]] for (uint k = 0; k < 16; ++k) {
        q[k / 4][k % 4] = iq_quant(ib, first + 32 * (k / 4) + k % 4);
    }
}

vec2 group_scale(uint ib, uint grp)
{
    return vec2(iq_group_scale(ib, grp), 0.0);
}

#include "mul_mat_vec_superblock.comp"
