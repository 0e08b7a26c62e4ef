// mul_mat_vec_superblock.comp: the body shared by the per-type K-quant mat-vec files
// mul_mat_vec_q2_k.comp ... mul_mat_vec_q6_k.comp and the lattice i-quants'
// (mul_mat_vec_iq_lattice.comp). Same interface as mul_mat_vec.comp
// (defines, bindings, push constants, specialization constants, dispatch: see
// mul_mat_vec_base.comp); the host passes BLOCK_SIZE = max(subgroup size, 16), a power of two.
//
// The including file includes mul_mat_vec_base.comp first and then defines, for its type
// (QUANT_K = 256, sixteen 16-element groups grp per super-block):
//   KQ_HAS_MIN   1 when an element is d * sc * q - dmin * m (q2_K, q4_K, q5_K), else 0
//   void group_quants(uint ib, uint grp, out float q[16])
//                the quants q_j of elements 16 grp + j of block ib (exact integers)
//   vec2 group_scale(uint ib, uint grp)
//                (d * sc, dmin * m) of that group (m = 0 without a min). Both products are
//                exact in float: d has at most 11 significant bits, a scale or min at most 8
//                (i-quants: d times 2s + 1 and a power of two, see iq_decode.comp).
//                Element 16 grp + j = group_scale.x * q_j - group_scale.y.
// Every K-quant keeps one scale (and min) per 16-element group: q2_K, q3_K and q6_K have
// sixteen, q4_K and q5_K eight 32-element sub-blocks, i.e. one per pair of groups.
//
// Work split (interface notes 5.4: 16 invocations per super-block): invocation tid owns
// group grp = tid % 16 of super-blocks tid / 16, tid / 16 + BLOCK_SIZE / 16, ... of each row.
// Per (row, column, super-block) it computes
//   s_qb = sum_j q_j * b_j          16 sequential fmas from 0
//   s_b  = sum_j b_j                15 sequential adds (formats with a min only)
//   acc  = fma(d*sc, s_qb, fma(-dmin*m, s_b, acc))     or fma(d*sc, s_qb, acc) without a min
// so any term goes through at most 16 roundings inside its group and 1 (2 with a min) per
// super-block folded into acc, whether or not the device fuses fma; then the tree of
// reduce_and_store. src/tolerance.rs (mul_mat_vec_depth_of) bounds exactly this.
//
// Worked example (q4_K, BLOCK_SIZE = 32, K = 768 = 3 super-blocks): invocations 0..15 take
// super-blocks 0 and 2 of each row, invocations 16..31 super-block 1. Invocation 21 has
// grp = 5: elements 80..95 of super-block 1 = row elements 336..351, i.e. the second half of
// sub-block 2 (elements 64..95): the low nibbles of qs[32 * 1 + 16 .. 32 * 1 + 31] with the
// scale and min of sub-block 2, against B elements b_offset + 336..351 of each column.

#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require

// A rows past the end of the matrix (last workgroup) re-read the last row: the reads stay
// in bounds and those outputs are never stored.
uint clamped_row(uint first_row, uint num_rows, uint row)
{
    return first_row + min(row, num_rows - 1);
}

// Super-blocks per pass of the K loop (see UNROLL in mul_mat_vec.comp): their loads are issued
// together. A group's B and quants take 16 registers each, so 2 with one column, else 1.
// A type's file may set KQ_UNROLL 1 where decoding, not loading, is the cost.
#ifndef KQ_UNROLL
#define KQ_UNROLL 2
#endif
const uint UNROLL = NUM_COLS >= 2 ? 1 : KQ_UNROLL;

// Group grp of super-block blk of every row, for every column (the arithmetic above); nothing
// is added when !valid (a re-read super-block past the row's end). Rows outer: a row's quants
// and scale are decoded once for all its columns (with columns outer they were decoded once
// per column, 8 times at 8 columns); a column's B group is re-read per row, from cache.
void group_step(uint blk, bool valid, uint grp, uint a_first_block, uint blocks_per_row,
                uint b_offset, uint first_row, uint num_rows)
{
    const uint k_first = blk * QUANT_K + 16 * grp;
    [[unroll]] for (uint row = 0; row < NUM_ROWS; ++row) {
        const uint ib = a_first_block
                      + clamped_row(first_row, num_rows, row) * blocks_per_row + blk;
        float q[16];
        group_quants(ib, grp, q);
        const vec2 scale = group_scale(ib, grp);
        [[unroll]] for (uint col = 0; col < NUM_COLS; ++col) {
            const uint b_first = b_offset + col * p.batch_stride_b + k_first;
            float b[16];
            [[unroll]] for (uint j = 0; j < 16; j += 4) {
                const vec4 b4 = load_b4(b_first + j);
                b[j] = b4.x;
                b[j + 1] = b4.y;
                b[j + 2] = b4.z;
                b[j + 3] = b4.w;
            }
            float s_qb = 0.0;
            [[unroll]] for (uint j = 0; j < 16; ++j) {
                s_qb = fma(q[j], b[j], s_qb);
            }
            const uint o = col * NUM_ROWS + row;
#if KQ_HAS_MIN
            float s_b = b[0];
            [[unroll]] for (uint j = 1; j < 16; ++j) {
                s_b += b[j];
            }
            const float acc = fma(scale.x, s_qb, fma(-scale.y, s_b, partial_sums[o]));
#else
            const float acc = fma(scale.x, s_qb, partial_sums[o]);
#endif
            partial_sums[o] = valid ? acc : partial_sums[o];
        }
    }
}

// UNROLL super-blocks per pass; in the last pass the ones past the end re-read the last one
// and add nothing (one copy of the step, no separate tail loop).
void accumulate(uint a_offset, uint b_offset, uint first_row, uint num_rows)
{
    const uint tid = gl_LocalInvocationID.x;
    const uint grp = tid % 16;
    const uint blocks_per_row = p.ncols / QUANT_K;
    const uint a_first_block = a_offset / QUANT_K;
    const uint lanes = BLOCK_SIZE / 16;
    for (uint blk = tid / 16; blk < blocks_per_row; blk += UNROLL * lanes) {
        [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
            const uint bu = blk + u * lanes;
            group_step(min(bu, blocks_per_row - 1), bu < blocks_per_row, grp, a_first_block,
                       blocks_per_row, b_offset, first_row, num_rows);
        }
    }
}

void main()
{
#ifdef NEEDS_INIT_IQ_SHMEM
    // Before the early return: the whole workgroup must reach its barrier.
    init_iq_shmem(gl_WorkGroupSize);
#endif
    const uint first_row = workgroup_first_row();
    // Uniform per workgroup, so leaving before the reduction's barriers is safe.
    if (first_row >= p.stride_d) {
        return;
    }
    const uint num_rows = min(NUM_ROWS, p.stride_d - first_row);

    uint a_offset, b_offset, d_offset;
    get_offsets(a_offset, b_offset, d_offset);

    [[unroll]] for (uint o = 0; o < NUM_OUTPUTS; ++o) {
        partial_sums[o] = 0.0;
    }
    accumulate(a_offset, b_offset, first_row, num_rows);
    reduce_and_store(d_offset, first_row, num_rows);
}
