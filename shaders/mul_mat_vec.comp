#version 450

// mul_mat_vec.comp: D = A * B for few B columns, A in f32, f16, bf16, q4_0, q4_1, q5_0,
// q5_1, q8_0, iq4_nl or iq4_xs (the K-quants have their own files, mul_mat_vec_q*_k.comp).
// Interface (defines, bindings, push constants, specialization constants, dispatch) is
// described in mul_mat_vec_base.comp.
//
// Each workgroup computes NUM_ROWS rows x NUM_COLS columns of D. Invocation tid takes
// K-units tid, tid + BLOCK_SIZE, ... (an element for float A, an 8-element chunk for
// block A), accumulates each output sequentially in float with fma, and the BLOCK_SIZE
// partials are then tree-reduced (reduce_and_store).
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

#if QUANT_K == 1

// One K element per step; handles any ncols.
void accumulate(uint a_offset, uint b_offset, uint first_row, uint num_rows)
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

#else

vec4 load_b4(uint index)
{
    return vec4(float(data_b[index]), float(data_b[index + 1]),
                float(data_b[index + 2]), float(data_b[index + 3]));
}

// Sequential sum over the 8 chunk elements: acc + a_low . b_low + a_high . b_high.
float fma_chunk(vec4 a_low, vec4 a_high, vec4 b_low, vec4 b_high, float acc)
{
    acc = fma(a_low.x, b_low.x, acc);
    acc = fma(a_low.y, b_low.y, acc);
    acc = fma(a_low.z, b_low.z, acc);
    acc = fma(a_low.w, b_low.w, acc);
    acc = fma(a_high.x, b_high.x, acc);
    acc = fma(a_high.y, b_high.y, acc);
    acc = fma(a_high.z, b_high.z, acc);
    acc = fma(a_high.w, b_high.w, acc);
    return acc;
}

// One 8-element chunk per step; ncols must be a multiple of QUANT_K.
void accumulate(uint a_offset, uint b_offset, uint first_row, uint num_rows)
{
    const uint blocks_per_row = p.ncols / QUANT_K;
    const uint a_first_block = a_offset / QUANT_K;
    const uint chunks_per_row = blocks_per_row * CHUNKS_PER_BLOCK;
    for (uint chunk = gl_LocalInvocationID.x; chunk < chunks_per_row; chunk += BLOCK_SIZE) {
        const uint block_in_row = chunk / CHUNKS_PER_BLOCK;
        const uint chunk_in_block = chunk % CHUNKS_PER_BLOCK;
        const uint k_low = block_in_row * QUANT_K + chunk_low_start(chunk_in_block);
        const uint k_high = block_in_row * QUANT_K + chunk_high_start(chunk_in_block);

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
            chunk_quants(ib, chunk_in_block, q_low, q_high);
            // q * d is exact; + m is the only rounding.
            const vec4 a_low = fma(q_low, vec4(dm.x), vec4(dm.y));
            const vec4 a_high = fma(q_high, vec4(dm.x), vec4(dm.y));
            [[unroll]] for (uint col = 0; col < NUM_COLS; ++col) {
                const uint o = col * NUM_ROWS + row;
                partial_sums[o] = fma_chunk(a_low, a_high, b_low[col], b_high[col], partial_sums[o]);
            }
        }
    }
}

#endif

void main()
{
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
