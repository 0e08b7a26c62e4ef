// mul_mat_vec_iq_lattice.comp: the mat-vec body of the lattice i-quants, included by the
// per-type files mul_mat_vec_iq1_s.comp ... mul_mat_vec_iq3_s.comp (upstream's file names;
// each sets nothing but its name). Interface as mul_mat_vec.comp (mul_mat_vec_base.comp);
// work split and accumulation order in mul_mat_vec_superblock.comp (16 invocations per
// super-block, one 16-element group each); decoding in iq_decode.comp: a group has one scale,
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
void group_quants(uint ib, uint grp, out float q[16])
{
    [[dont_unroll]] for (uint j = 0; j < 16; ++j) {
        q[j] = iq_quant(ib, 16 * grp + j);
    }
}

vec2 group_scale(uint ib, uint grp)
{
    return vec2(iq_group_scale(ib, grp), 0.0);
}

#include "mul_mat_vec_superblock.comp"
