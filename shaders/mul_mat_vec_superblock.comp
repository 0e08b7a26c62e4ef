// mul_mat_vec_superblock.comp: the body shared by the per-type K-quant mat-vec files
// mul_mat_vec_q2_k.comp ... mul_mat_vec_q6_k.comp and the lattice i-quants'
// (mul_mat_vec_iq_lattice.comp). Same interface as mul_mat_vec.comp
// (defines, bindings, push constants, specialization constants, dispatch: see
// mul_mat_vec_base.comp); the host passes BLOCK_SIZE = max(subgroup size, 16), a power of two.
//
// Work split (docs/interface.md §5.4: 16 invocations per super-block): invocation tid is thread
// t = tid % 16 of super-blocks tid / 16, tid / 16 + BLOCK_SIZE / 16, ... of each row. In a
// super-block, thread t takes four quads (4 consecutive elements): quad g = 0..3 is elements
// kq_thread_first(t) + 32 g + 0..3, with kq_thread_first(t) = 128 (t / 8) + 4 (t % 8)
// (mul_mat_vec_base.comp). Why this split: a K-quant stores the elements 32 apart together
// (q6_K's qh byte holds 2 bits of each of 4 such elements, q2_K's qs byte 2 bits of 4, q4_K's
// qs byte the nibbles of 2), so a thread's quant bytes are all its own and each is read once;
// and eight threads read 128 consecutive bytes of B per load, whole cache lines (with one
// 16-element group per thread, a load instruction's 32 threads touched 16 lines).
//
// The including file includes mul_mat_vec_base.comp first and then defines, for its type
// (QUANT_K = 256; a 16-element group grp = elements 16 grp .. 16 grp + 15 has one scale):
//   KQ_HAS_MIN   1 when an element is d * sc * q - dmin * m (q2_K, q4_K, q5_K), else 0
//   void thread_quants(uint ib, uint t, out vec4 q[4])
//                the quants of thread t's quads in block ib (exact integers): q[g][j] of
//                element kq_thread_first(t) + 32 g + j
//   vec2 group_scale(uint ib, uint grp)
//                (d * sc, dmin * m) of group grp (m = 0 without a min). Both products are
//                exact in float: d has at most 11 significant bits, a scale or min at most 8
//                (i-quants: d times 2s + 1 and a power of two, see iq_decode.comp).
//                Element = group_scale.x * q - group_scale.y.
//   or, instead of group_scale, define KQ_THREAD_SCALES and
//   void thread_scales(uint ib, uint t, out vec2 sc[4])
//                group_scale of quad g's group for g = 0..3, where a type decodes the four
//                together more cheaply (q4_K, q5_K: mul_mat_vec_k4_scales.comp).
// Quad g of thread t lies in group quad_group(t, g) = 8 (t / 8) + 2 g + (t % 8) / 4.
//
// Per (row, column, super-block) a thread computes, for its quads g = 0..3,
//   s_g  = q.x b.x, then fma(q.y, b.y, s_g), ... (4 roundings)
//   sb_g = ((b.x + b.y) + b.z) + b.w                            (formats with a min only)
//   t_q  = sc_0 s_0, then fma(sc_g, s_g, t_q) for g = 1..3       (sc = d * sc of quad g's group)
//   t_m  = m_0 sb_0, then fma(m_g, sb_g, t_m)                    (m = dmin * m; with a min)
//   acc  = (acc - t_m) + t_q      or acc + t_q without a min
// so a term goes through at most 8 roundings inside its super-block (7 for the b sums) and
// 1 (2 with a min) per super-block folded into acc, fused or not: within the model of
// src/model/cases/mul_mat_vec/bounds.rs (mul_mat_vec_depth_of: 16 inside a share, which also
// covers upstream's per-type bodies, plus the folds), then the tree of reduce_and_store.
//
// Worked example (q4_K, BLOCK_SIZE = 32, K = 768 = 3 super-blocks): invocations 0..15 take
// super-blocks 0 and 2 of each row, invocations 16..31 super-block 1. Invocation 21 is thread
// t = 5: elements 20..23, 52..55, 84..87, 116..119 of super-block 1 (row elements 276..279,
// ...), sub-blocks 0..3: the low and high nibbles of qs[20..23] and of qs[52..55] with the
// scales and mins of sub-blocks 0..3, against the B elements at the same offsets from b_offset
// in each column.

#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require

// A rows past the end of the matrix (last workgroup) re-read the last row: the reads stay
// in bounds and those outputs are never stored.
uint clamped_row(uint first_row, uint num_rows, uint row)
{
    return first_row + min(row, num_rows - 1);
}

// Super-blocks per pass of the K loop (see UNROLL in mul_mat_vec.comp): their loads are issued
// together. A type's file may set KQ_UNROLL 1 where decoding, not loading, is the cost. With
// several columns one per pass unless the type sets KQ_UNROLL_COLUMNS: on the H200 (2026-11-28)
// 2 per pass with 8 columns ran q3_K 1.06-1.37x and q4_K 1.17-1.20x one per
// pass, but q2_K 0.60-0.93x and q6_K 0.86-0.93x (q5_K keeps it: 0.87-0.89x against the shaders
// before its new scales, not yet understood); 4 per pass with one column gained nothing.
#ifndef KQ_UNROLL
#define KQ_UNROLL 2
#endif
#ifndef KQ_UNROLL_COLUMNS
#define KQ_UNROLL_COLUMNS 1
#endif
// With 4 (4 to 7) or 8 columns a type may take another count (q4_K: 2 only with 2 and 3).
#ifndef KQ_UNROLL_4_COLUMNS
#define KQ_UNROLL_4_COLUMNS KQ_UNROLL_COLUMNS
#endif
#ifndef KQ_UNROLL_8_COLUMNS
#define KQ_UNROLL_8_COLUMNS KQ_UNROLL_COLUMNS
#endif
const uint UNROLL = NUM_COLS >= 8 ? KQ_UNROLL_8_COLUMNS
                  : NUM_COLS >= 4 ? KQ_UNROLL_4_COLUMNS
                  : NUM_COLS >= 2 ? KQ_UNROLL_COLUMNS
                                  : KQ_UNROLL;

uint quad_group(uint t, uint g)
{
    return 8 * (t / 8) + 2 * g + (t % 8) / 4;
}

// Shared scales: a pass's group scales go through shared memory, slot [u][row][16 lane + grp]
// holding group grp of the super-block that lane `lane` (tid / 16) takes at step u of the
// pass, in A row `row` of the workgroup. Each of a super-block's 16 threads decodes one group
// (group_scale) where it would otherwise decode the four its quads lie in. Two buffers, taken
// in turn by the passes: one barrier a pass, as a pass's writes only meet reads two passes
// back. A type's file turns it on up to KQ_SHARED_SCALES_MAX_COLS columns. H200 (2026-12-02,
// against the per-thread decode): q6_K 1.02-1.06x with 1 column, 1.24-1.46x with 4 and 8;
// q2_K 1.08-1.18x with 1 and 2, 0.73x with 8; q3_K 1.19-1.29x with 1 and 2, 0.96x with 4.
#ifndef KQ_SHARED_SCALES_MAX_COLS
#define KQ_SHARED_SCALES_MAX_COLS 0
#endif
const bool SHARED_SCALES = NUM_COLS <= KQ_SHARED_SCALES_MAX_COLS;
#if KQ_SHARED_SCALES_MAX_COLS > 0
shared vec2 kq_scales[2][UNROLL][NUM_ROWS][BLOCK_SIZE];
uint kq_buf = 0;

// This thread's group of every (step, row) of the pass whose first super-block is `first`.
void share_scales(uint first, uint a_first_block, uint blocks_per_row, uint first_row,
                  uint num_rows)
{
    const uint tid = gl_LocalInvocationID.x;
    kq_buf ^= 1;
    [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
        const uint blk = min(first + tid / 16 + u * (BLOCK_SIZE / 16), blocks_per_row - 1);
        [[unroll]] for (uint row = 0; row < NUM_ROWS; ++row) {
            const uint ib = a_first_block + clamped_row(first_row, num_rows, row) * blocks_per_row + blk;
            kq_scales[kq_buf][u][row][tid] = group_scale(ib, tid % 16);
        }
    }
    barrier();
}
#endif

#ifndef KQ_THREAD_SCALES
void thread_scales(uint ib, uint t, out vec2 sc[4])
{
    [[unroll]] for (uint g = 0; g < 4; ++g) {
        sc[g] = group_scale(ib, quad_group(t, g));
    }
}
#endif

// Thread t's quants and group scales of super-block blk (step u of the pass) of A row `row`
// of the workgroup.
void decode_row(uint row, uint u, uint blk, uint t, uint a_first_block, uint blocks_per_row,
                uint first_row, uint num_rows, out vec4 q[4], out vec2 sc[4])
{
    const uint ib = a_first_block + clamped_row(first_row, num_rows, row) * blocks_per_row + blk;
    thread_quants(ib, t, q);
#if KQ_SHARED_SCALES_MAX_COLS > 0
    if (SHARED_SCALES) {
        const uint lane_first = gl_LocalInvocationID.x - t;
        [[unroll]] for (uint g = 0; g < 4; ++g) {
            sc[g] = kq_scales[kq_buf][u][row][lane_first + quad_group(t, g)];
        }
        return;
    }
#endif
    thread_scales(ib, t, sc);
}

// The sums sb_g of a column's B quads (the min term's, formats with a min; unused and so
// dropped by the compiler in the others). They do not depend on the row: with columns outer
// they are summed once per column for all NUM_ROWS rows.
void quad_sums(vec4 b[4], out float b_sum[4])
{
    [[unroll]] for (uint g = 0; g < 4; ++g) {
        b_sum[g] = ((b[g].x + b[g].y) + b[g].z) + b[g].w;
    }
}

// Output o's share of one super-block from thread t's quads: quants q and group scales sc of
// its A row, B quads b of its column and their sums b_sum (the arithmetic above); nothing is
// added when !valid (a re-read super-block past the row's end).
void add_quads(uint o, bool valid, vec4 q[4], vec2 sc[4], vec4 b[4], float b_sum[4])
{
    float t_q = 0.0;
    float t_m = 0.0;
    [[unroll]] for (uint g = 0; g < 4; ++g) {
        float s = q[g].x * b[g].x;
        s = fma(q[g].y, b[g].y, s);
        s = fma(q[g].z, b[g].z, s);
        s = fma(q[g].w, b[g].w, s);
        t_q = g == 0 ? sc[g].x * s : fma(sc[g].x, s, t_q);
#if KQ_HAS_MIN
        t_m = g == 0 ? sc[g].y * b_sum[g] : fma(sc[g].y, b_sum[g], t_m);
#endif
    }
    const float acc = (partial_sums[o] - t_m) + t_q;
    partial_sums[o] = valid ? acc : partial_sums[o];
}

// The order of the (row, column) outputs in a step; each output's arithmetic is the same
// either way. Columns outer loads a column's B quads once for all rows; rows outer re-reads
// them per row, from cache. H100, q4_K (2026-11-28): columns outer 1.06-1.10x with 8 columns,
// but 0.90x with 4, so only from 8 unless a type's file sets KQ_COLUMNS_OUTER_FROM (9: never,
// NUM_COLS ≤ 8). H200 (2026-12-02): q4_K's 8 columns 1.15-1.40x rows outer, one super-block a
// pass; q5_K's 4 columns 1.11x columns outer (rows outer slowed when B's sums left add_quads).
#ifndef KQ_COLUMNS_OUTER_FROM
#define KQ_COLUMNS_OUTER_FROM 8
#endif
const bool COLUMNS_OUTER = NUM_COLS >= KQ_COLUMNS_OUTER_FROM;

// Thread t's quads of super-block blk of every row, for every column. A row's quants and
// scales are decoded once for all its columns: all rows first when columns are outer, each row
// as its turn comes when rows are outer (decoding all first cost the 4-column row 11%).
void thread_step(uint u, uint blk, bool valid, uint t, uint a_first_block, uint blocks_per_row,
                 uint b_offset, uint first_row, uint num_rows)
{
    const uint k_first = blk * QUANT_K + kq_thread_first(t);
    vec4 q[NUM_ROWS][4];
    vec2 scale[NUM_ROWS][4];
    [[unroll]] for (uint row = 0; row < (COLUMNS_OUTER ? NUM_ROWS : 0); ++row) {
        decode_row(row, u, blk, t, a_first_block, blocks_per_row, first_row, num_rows, q[row],
                   scale[row]);
    }
    [[unroll]] for (uint outer = 0; outer < (COLUMNS_OUTER ? NUM_COLS : NUM_ROWS); ++outer) {
        if (!COLUMNS_OUTER) {
            decode_row(outer, u, blk, t, a_first_block, blocks_per_row, first_row, num_rows,
                       q[outer], scale[outer]);
        }
        vec4 b[4];
        float b_sum[4];
        [[unroll]] for (uint inner = 0; inner < (COLUMNS_OUTER ? NUM_ROWS : NUM_COLS); ++inner) {
            const uint row = COLUMNS_OUTER ? inner : outer;
            const uint col = COLUMNS_OUTER ? outer : inner;
            if (!COLUMNS_OUTER || inner == 0) {
                const uint b_first = b_offset + col * p.batch_stride_b + k_first;
                [[unroll]] for (uint g = 0; g < 4; ++g) {
                    b[g] = load_b4(b_first + 32 * g);
                }
                quad_sums(b, b_sum);
            }
            add_quads(col * NUM_ROWS + row, valid, q[row], scale[row], b, b_sum);
        }
    }
}

// UNROLL super-blocks per lane and pass; in the last pass the ones past the end re-read the
// last one and add nothing (one copy of the step, no separate tail loop). Every thread runs
// every pass (the same count for the whole workgroup: share_scales has a barrier).
void accumulate(uint a_offset, uint b_offset, uint first_row, uint num_rows)
{
    const uint tid = gl_LocalInvocationID.x;
    const uint t = tid % 16;
    const uint blocks_per_row = p.ncols / QUANT_K;
    const uint a_first_block = a_offset / QUANT_K;
    const uint lanes = BLOCK_SIZE / 16;
    for (uint first = 0; first < blocks_per_row; first += UNROLL * lanes) {
#if KQ_SHARED_SCALES_MAX_COLS > 0
        if (SHARED_SCALES) {
            share_scales(first, a_first_block, blocks_per_row, first_row, num_rows);
        }
#endif
        [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
            const uint bu = first + tid / 16 + u * lanes;
            thread_step(u, min(bu, blocks_per_row - 1), bu < blocks_per_row, t, a_first_block,
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
