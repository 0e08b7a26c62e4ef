#version 450

// mul_mat_vec.comp: D = A * B for few B columns, A in f32, f16, bf16, q4_0, q4_1, q5_0,
// q5_1, q8_0, iq4_nl or iq4_xs (the K-quants have their own files, mul_mat_vec_q*_k.comp).
// Interface (defines, bindings, push constants, specialization constants, dispatch) is
// described in mul_mat_vec_base.comp.
//
// Each workgroup computes NUM_ROWS rows x NUM_COLS columns of D. Invocation tid takes
// K-units tid, tid + BLOCK_SIZE, ... (for float A a group of 4 elements, or one element where
// the offsets are not multiples of 4; for block A an 8-element chunk, for q8_0 and for q4_0
// with 8 columns a 4-element quad), folds them in that order into one float sum per output,
// UNROLL units per pass of its loop (2 UNROLL quads), and the BLOCK_SIZE partials are then
// tree-reduced (reduce_and_store). Per unit and output the arithmetic is fixed (see step4,
// chunk_step and quad_step), so results do not depend on UNROLL.
//
// Worked example (q4_0, M = 3, K = 64, NUM_ROWS = 2, BLOCK_SIZE = 8, NUM_COLS = 2,
// ne02 = 1, ne12 = 2, broadcast2 = 2, batch_stride_b = 64, batch_stride_d = 3):
//   dispatch (ceil(3 / 2), 2, 1) = (2, 2, 1). Workgroup (1, 1, 0): first_row = 2,
//   num_rows = min(2, 3 - 2) = 1, its second row re-reads row 2 and is never stored.
//   batch y = 1: i12 = 1, i02 = 1 / 2 = 0 so a_offset = 0 (broadcast), b_offset = 64,
//   d_offset = 3. Row 2 starts at block 0 / 32 + 2 * 64 / 32 = 4; the row has 8 chunks,
//   one per invocation: tid 5 -> block 4 + 1, chunk 1 = qs bytes 4..7, i.e. elements
//   36..39 (low nibbles) and 52..55 (high nibbles) of the row; it reads B column j at
//   64 + 64 j + {36..39, 52..55}. Results land in D[3 + 3 j + 2] for j = 0, 1.
//   (The host only uses NUM_COLS > 1 with a single batch; both are combined here just
//   to show every term of the addressing.)

#include "mul_mat_vec_base.comp"
#include "dequant_funcs.comp"

// A rows past the end of the matrix (last workgroup) re-read the last row: the reads stay
// in bounds and those outputs are never stored.
uint clamped_row(uint first_row, uint num_rows, uint row)
{
    return first_row + min(row, num_rows - 1);
}

// Independent steps per pass of the K loop: their loads are all issued before the first
// one's arithmetic, which keeps enough bytes in flight per invocation to cover memory
// latency. Fewer with many columns, whose B vectors take the registers.
const uint UNROLL = NUM_COLS >= 4 ? 1 : 4 / NUM_COLS;

#if QUANT_K == 1

// One K element per step; handles any ncols and alignment.
void accumulate_scalar(uint a_offset, uint b_offset, uint first_row, uint num_rows)
{
    for (uint k = gl_LocalInvocationID.x; k < p.ncols; k += BLOCK_SIZE) {
        float b[NUM_COLS];
        [[unroll]] for (uint col = 0; col < NUM_COLS; ++col) {
            b[col] = float(data_b[b_offset + col * p.batch_stride_b + k]);
        }
        [[unroll]] for (uint row = 0; row < NUM_ROWS; ++row) {
            const float a = a_value(a_offset + clamped_row(first_row, num_rows, row) * p.ncols + k);
            [[unroll]] for (uint col = 0; col < NUM_COLS; ++col) {
                const uint o = col * NUM_ROWS + row;
                partial_sums[o] = fma(a, b[col], partial_sums[o]);
            }
        }
    }
}

// Four consecutive K elements (group g: 4g..4g+3) per row, folded by 4 sequential fmas;
// nothing is added when !valid (a re-read group past the row's end).
void step4(uint g, bool valid, uint a_offset, uint b_offset, uint first_row, uint num_rows)
{
    vec4 b[NUM_COLS];
    [[unroll]] for (uint col = 0; col < NUM_COLS; ++col) {
        b[col] = load_b4(b_offset + col * p.batch_stride_b + 4 * g);
    }
    [[unroll]] for (uint row = 0; row < NUM_ROWS; ++row) {
        const vec4 a = a_value4(a_offset + clamped_row(first_row, num_rows, row) * p.ncols + 4 * g);
        [[unroll]] for (uint col = 0; col < NUM_COLS; ++col) {
            const uint o = col * NUM_ROWS + row;
            float acc = partial_sums[o];
            acc = fma(a.x, b[col].x, acc);
            acc = fma(a.y, b[col].y, acc);
            acc = fma(a.z, b[col].z, acc);
            acc = fma(a.w, b[col].w, acc);
            partial_sums[o] = valid ? acc : partial_sums[o];
        }
    }
}

// Groups of 4 elements tid, tid + BLOCK_SIZE, ..., UNROLL per pass; in the last pass the
// groups past the end re-read the last one and add nothing (one copy of the step, no
// separate tail loop). An invocation's chain is 4 ceil(K / 4 BLOCK_SIZE) <=
// ceil(K / BLOCK_SIZE) + 3 fmas long, within the float bound of the error model.
void accumulate_vec4(uint a_offset, uint b_offset, uint first_row, uint num_rows)
{
    const uint groups = p.ncols / 4;
    for (uint g = gl_LocalInvocationID.x; g < groups; g += UNROLL * BLOCK_SIZE) {
        [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
            const uint gu = g + u * BLOCK_SIZE;
            step4(min(gu, groups - 1), gu < groups, a_offset, b_offset, first_row, num_rows);
        }
    }
}

void accumulate(uint a_offset, uint b_offset, uint first_row, uint num_rows)
{
    // Vector loads need every A row (row * ncols + a_offset) and B column
    // (b_offset + col * batch_stride_b) to start at a multiple of 4 elements.
    const uint b_stride = NUM_COLS > 1 ? p.batch_stride_b : 0u;
    if (((p.ncols | a_offset | b_offset | b_stride) & 3u) == 0u) {
        accumulate_vec4(a_offset, b_offset, first_row, num_rows);
    } else {
        accumulate_scalar(a_offset, b_offset, first_row, num_rows);
    }
}

#else

// The 4-term sequential fma chain q . b from 0.
float quad_dot(vec4 q, vec4 b)
{
    float s = q.x * b.x;
    s = fma(q.y, b.y, s);
    s = fma(q.z, b.z, s);
    return fma(q.w, b.w, s);
}

#if defined(DATA_A_Q8_0) || defined(DATA_A_Q4_0)
// Quads: 4 elements each, consecutive invocations on consecutive quads, so each of the
// workgroup's B loads is one contiguous run of 16 BLOCK_SIZE bytes (the chunks' two halves
// leave gaps). q8_0 always goes by quads (a quad is one qs word); q4_0, whose words hold two
// quads, only with 8 columns, where B's loads dominate. H100, against the chunk body
// (2026-12-05): q8_0 14336x4096 1.02x with one column, 1.16-1.52x with 2-8; q4_0 1.17-1.21x
// with 8 columns but 0.85-0.93x with 1-4; q4_1 and q5_0 lost 9-32% with one column.
#if defined(DATA_A_Q8_0)
const bool BY_QUADS = true;
#else
const bool BY_QUADS = NUM_COLS >= 8;
#endif
const uint QUADS_PER_BLOCK = QUANT_K / 4;

// Quad `quad` of the row (elements 4 quad .. 4 quad + 3, in block quad / QUADS_PER_BLOCK)
// for every row and column: acc = fma(quad_dot(q, b), d, acc). A term goes through 4 + 1
// roundings in its quad and one per later quad of the invocation: at most 2c quads for c
// chunks' worth, 2c + 4 <= 8c (the chunk body's allowance, src/model/tolerance.rs).
void quad_step(uint quad, bool valid, uint a_first_block, uint blocks_per_row,
               uint b_offset, uint first_row, uint num_rows)
{
    const uint block_in_row = quad / QUADS_PER_BLOCK;
    const uint e = 4 * (quad % QUADS_PER_BLOCK);

    vec4 b[NUM_COLS];
    [[unroll]] for (uint col = 0; col < NUM_COLS; ++col) {
        b[col] = load_b4(b_offset + col * p.batch_stride_b + 4 * quad);
    }
    [[unroll]] for (uint row = 0; row < NUM_ROWS; ++row) {
        const uint ib = a_first_block
                      + clamped_row(first_row, num_rows, row) * blocks_per_row + block_in_row;
        const float d = block_dm(ib).x;
        const vec4 q = quad_quants(ib, e);
        [[unroll]] for (uint col = 0; col < NUM_COLS; ++col) {
            const uint o = col * NUM_ROWS + row;
            const float acc = fma(quad_dot(q, b[col]), d, partial_sums[o]);
            partial_sums[o] = valid ? acc : partial_sums[o];
        }
    }
}

// Quads tid, tid + BLOCK_SIZE, ... of each row, in order, QUAD_UNROLL per pass: twice UNROLL
// (a quad is half a chunk), and 16 with one column, where more loads in flight pay (q8_0
// against 8, H200: 1.05 / 1.06 / 1.04x at 4096², 14336x4096, 4096x14336); past the end as in
// the chunk body below.
const uint QUAD_UNROLL = NUM_COLS == 1 ? 16 : 2 * UNROLL;
// Whole passes while all QUAD_UNROLL quads lie in the row, then the rest QUAD_TAIL a pass: a
// short row (the MoE rows' K = 768 is 192 quads, a pass 512 with 32 invocations) would
// otherwise spend most of its one pass re-reading the clamped last quad: H100, that q8_0 MoE
// row 1.19x the single pass, 0.86 -> 1.01 of upstream 0.1.109. Same quads in the same order
// per invocation, so the same sums.
const uint QUAD_TAIL = QUAD_UNROLL / 2;
void accumulate_quads(uint a_offset, uint b_offset, uint first_row, uint num_rows)
{
    const uint blocks_per_row = p.ncols / QUANT_K;
    const uint a_first_block = a_offset / QUANT_K;
    const uint quads_per_row = p.ncols / 4;
    uint quad = gl_LocalInvocationID.x;
    for (; quad + (QUAD_UNROLL - 1) * BLOCK_SIZE < quads_per_row; quad += QUAD_UNROLL * BLOCK_SIZE) {
        [[unroll]] for (uint u = 0; u < QUAD_UNROLL; ++u) {
            quad_step(quad + u * BLOCK_SIZE, true, a_first_block, blocks_per_row, b_offset,
                      first_row, num_rows);
        }
    }
    for (; quad < quads_per_row; quad += QUAD_TAIL * BLOCK_SIZE) {
        [[unroll]] for (uint u = 0; u < QUAD_TAIL; ++u) {
            const uint qu = quad + u * BLOCK_SIZE;
            quad_step(min(qu, quads_per_row - 1), qu < quads_per_row, a_first_block,
                      blocks_per_row, b_offset, first_row, num_rows);
        }
    }
}
#else
const bool BY_QUADS = false;
#endif

// s_low + s_high, each the 4-term sequential fma chain q . b from 0.
float chunk_dot(vec4 q_low, vec4 q_high, vec4 b_low, vec4 b_high)
{
    return quad_dot(q_low, b_low) + quad_dot(q_high, b_high);
}

// Chunk `chunk` of the row (block chunk / CHUNKS_PER_BLOCK, its chunk chunk % CHUNKS_PER_BLOCK)
// for every row and column. Without a min: acc = fma(s, d, acc) with s = chunk_dot(q, b);
// with one: acc += chunk_dot(q * d + m, b). A term goes through at most 4 + 1 + 1 roundings in
// its chunk (+1 for "+ m") and one per later chunk of the invocation: c + 5 (c + 6) for c
// chunks, within the 8c (8c + 1) the error model allows (src/model/tolerance.rs).
void chunk_step(uint chunk, bool valid, uint a_first_block, uint blocks_per_row,
                uint b_offset, uint first_row, uint num_rows)
{
    const uint block_in_row = chunk / CHUNKS_PER_BLOCK;
    const uint c = chunk % CHUNKS_PER_BLOCK;
    const uint k_low = block_in_row * QUANT_K + chunk_low_start(c);
    const uint k_high = block_in_row * QUANT_K + chunk_high_start(c);

    vec4 b_low[NUM_COLS];
    vec4 b_high[NUM_COLS];
    [[unroll]] for (uint col = 0; col < NUM_COLS; ++col) {
        const uint b_col = b_offset + col * p.batch_stride_b;
        b_low[col] = load_b4(b_col + k_low);
        b_high[col] = load_b4(b_col + k_high);
    }

    [[unroll]] for (uint row = 0; row < NUM_ROWS; ++row) {
        const uint ib = a_first_block
                      + clamped_row(first_row, num_rows, row) * blocks_per_row + block_in_row;
        const vec2 dm = block_dm(ib);
        vec4 q_low, q_high;
        chunk_quants(ib, c, q_low, q_high);
#if BLOCK_HAS_MIN
        // q * d is exact; + m is the only rounding.
        q_low = fma(q_low, vec4(dm.x), vec4(dm.y));
        q_high = fma(q_high, vec4(dm.x), vec4(dm.y));
#endif
        [[unroll]] for (uint col = 0; col < NUM_COLS; ++col) {
            const uint o = col * NUM_ROWS + row;
            const float s = chunk_dot(q_low, q_high, b_low[col], b_high[col]);
#if BLOCK_HAS_MIN
            const float acc = partial_sums[o] + s;
#else
            const float acc = fma(s, dm.x, partial_sums[o]);
#endif
            partial_sums[o] = valid ? acc : partial_sums[o];
        }
    }
}

// 8-element chunks tid, tid + BLOCK_SIZE, ... of each row (ncols a multiple of QUANT_K), in
// order: whole passes of UNROLL, then the rest half as many a pass, where the chunks past the
// end re-read the last one and add nothing (as accumulate_quads; H100, q4_0 MoE 128x2048x768
// 1.02x one pass of 4, the 4096-wide rows 1.00-1.02x). iq4_nl keeps one loop of UNROLL a pass
// with the clamp in every step: H100 (2026-12-06), its one-column rows ran 1.05 / 1.01 / 1.09x
// faster that way, while iq4_xs ran 0.92-0.96x and q4_1 / q5_1 0.97-1.00x.
#if defined(DATA_A_IQ4_NL)
#define CHUNK_WHOLE_PASSES 0
const uint CHUNK_TAIL = UNROLL;
#else
#define CHUNK_WHOLE_PASSES 1
const uint CHUNK_TAIL = UNROLL >= 2 ? UNROLL / 2 : 1;   // (max() is no spec-constant op)
#endif
void accumulate_chunks(uint a_offset, uint b_offset, uint first_row, uint num_rows)
{
    const uint blocks_per_row = p.ncols / QUANT_K;
    const uint a_first_block = a_offset / QUANT_K;
    const uint chunks_per_row = blocks_per_row * CHUNKS_PER_BLOCK;
    uint chunk = gl_LocalInvocationID.x;
#if CHUNK_WHOLE_PASSES
    for (; chunk + (UNROLL - 1) * BLOCK_SIZE < chunks_per_row; chunk += UNROLL * BLOCK_SIZE) {
        [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
            chunk_step(chunk + u * BLOCK_SIZE, true, a_first_block, blocks_per_row, b_offset,
                       first_row, num_rows);
        }
    }
#endif
    for (; chunk < chunks_per_row; chunk += CHUNK_TAIL * BLOCK_SIZE) {
        [[unroll]] for (uint u = 0; u < CHUNK_TAIL; ++u) {
            const uint cu = chunk + u * BLOCK_SIZE;
            chunk_step(min(cu, chunks_per_row - 1), cu < chunks_per_row, a_first_block,
                       blocks_per_row, b_offset, first_row, num_rows);
        }
    }
}

void accumulate(uint a_offset, uint b_offset, uint first_row, uint num_rows)
{
#if defined(DATA_A_Q8_0) || defined(DATA_A_Q4_0)
    if (BY_QUADS) {
        accumulate_quads(a_offset, b_offset, first_row, num_rows);
        return;
    }
#endif
    accumulate_chunks(a_offset, b_offset, first_row, num_rows);
}

#endif

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
