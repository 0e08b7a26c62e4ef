// mul_mat_vec_base.comp: interface and reduction shared by the matrix-vector bodies.
//
// Defines: DATA_A_<T>=1, B_TYPE (float | float16_t), D_TYPE (float), MUL_MAT_ID=1 for the
//   expert-indexed variant. B_TYPE_VEC2/B_TYPE_VEC4/FLOAT_TYPE are accepted but unused:
//   B is read one element at a time and all arithmetic is float.
// Bindings (set 0): 0 data_a A_TYPE[] (readonly), 1 data_b B_TYPE[] (readonly),
//   2 data_d D_TYPE[] (writeonly), 3 data_ids int[] (readonly, MUL_MAT_ID only).
// Push constants, 4-byte uints in this order:
//   ncols, stride_a, stride_b, stride_d, batch_stride_a, batch_stride_b, batch_stride_d,
//   then ne02, ne12, broadcast2, broadcast3 (44 bytes) or, with MUL_MAT_ID, nei0, ne11
//   (36 bytes). All strides count elements, not bytes or blocks.
// Specialization constants: 0 BLOCK_SIZE (= workgroup size x, a power of two <= 1024),
//   1 NUM_ROWS (A rows per workgroup, >= 1), 2 NUM_COLS (B/D columns per workgroup).
// Dispatch: (ceil(groups_x / NUM_ROWS), batches or nei0, groups_z); the workgroup's first
//   row is NUM_ROWS * (WorkGroupID.x + NumWorkGroups.x * WorkGroupID.z) and rows at or
//   past stride_d (= M) are not computed.

#extension GL_EXT_control_flow_attributes : enable

#include "types.comp"

layout(constant_id = 0) const uint BLOCK_SIZE = 32;
layout(constant_id = 1) const uint NUM_ROWS = 1;
layout(constant_id = 2) const uint NUM_COLS = 1;

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(binding = 1) readonly buffer B { B_TYPE data_b[]; };
layout(binding = 2) writeonly buffer D { D_TYPE data_d[]; };
#ifdef MUL_MAT_ID
layout(binding = 3) readonly buffer IDS { int data_ids[]; };
#endif

layout(push_constant) uniform parameter {
    uint ncols;           // K: elements per A row and per B column
    uint stride_a;        // unused: A rows are densely packed (row stride = ncols)
    uint stride_b;        // B stride between expert slots (MUL_MAT_ID only)
    uint stride_d;        // M: number of A rows; D stride between expert slots (MUL_MAT_ID)
    uint batch_stride_a;  // elements between A matrices
    uint batch_stride_b;  // elements between B batches, and between B columns
    uint batch_stride_d;  // elements between D batches, and between D columns
#ifdef MUL_MAT_ID
    uint nei0;            // expert slots (= dispatch y); unused by the shader
    uint ne11;            // B columns shared round-robin by the slots
#else
    uint ne02;
    uint ne12;
    uint broadcast2;      // ne12 / ne02
    uint broadcast3;      // ne13 / ne03
#endif
} p;

// One partial sum per (column, row) output, index col * NUM_ROWS + row.
const uint NUM_OUTPUTS = NUM_COLS * NUM_ROWS;
float partial_sums[NUM_OUTPUTS];

// Shared memory holds at most 4096 partials (16 KiB); larger NUM_ROWS * NUM_COLS *
// BLOCK_SIZE products are reduced in several rounds. BLOCK_SIZE <= 1024 keeps
// OUTPUTS_PER_ROUND >= 4.
const uint REDUCE_MAX_PARTIALS = 4096;
const uint OUTPUTS_PER_ROUND = (NUM_OUTPUTS * BLOCK_SIZE <= REDUCE_MAX_PARTIALS)
                             ? NUM_OUTPUTS : REDUCE_MAX_PARTIALS / BLOCK_SIZE;
shared float reduce_buf[OUTPUTS_PER_ROUND * BLOCK_SIZE];

uint workgroup_first_row()
{
    return NUM_ROWS * (gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.z);
}

// Element offsets of this workgroup's A matrix, first B column and first D column.
void get_offsets(out uint a_offset, out uint b_offset, out uint d_offset)
{
#ifdef MUL_MAT_ID
    const uint slot = gl_GlobalInvocationID.y;
    a_offset = uint(data_ids[slot]) * p.batch_stride_a;
    b_offset = (slot % p.ne11) * p.stride_b;
    d_offset = slot * p.stride_d;
#else
    const uint batch = gl_GlobalInvocationID.y;
    const uint i13 = batch / p.ne12;
    const uint i12 = batch % p.ne12;
    const uint i03 = i13 / p.broadcast3;
    const uint i02 = i12 / p.broadcast2;
    a_offset = (i03 * p.ne02 + i02) * p.batch_stride_a;
    b_offset = batch * p.batch_stride_b;
    d_offset = batch * p.batch_stride_d;
#endif
}

// Sums partial_sums over the workgroup with a shared-memory tree and writes the
// num_rows valid rows of every column. Must be reached by the whole workgroup.
void reduce_and_store(uint d_offset, uint first_row, uint num_rows)
{
    const uint tid = gl_LocalInvocationID.x;
    for (uint round_start = 0; round_start < NUM_OUTPUTS; round_start += OUTPUTS_PER_ROUND) {
        const uint round_size = min(OUTPUTS_PER_ROUND, NUM_OUTPUTS - round_start);
        [[unroll]] for (uint o = 0; o < round_size; ++o) {
            reduce_buf[o * BLOCK_SIZE + tid] = partial_sums[round_start + o];
        }
        barrier();
        for (uint half_width = BLOCK_SIZE / 2; half_width > 0; half_width >>= 1) {
            if (tid < half_width) {
                [[unroll]] for (uint o = 0; o < round_size; ++o) {
                    reduce_buf[o * BLOCK_SIZE + tid] += reduce_buf[o * BLOCK_SIZE + tid + half_width];
                }
            }
            barrier();
        }
        for (uint o = tid; o < round_size; o += BLOCK_SIZE) {
            const uint col = (round_start + o) / NUM_ROWS;
            const uint row = (round_start + o) % NUM_ROWS;
            if (row < num_rows) {
                data_d[d_offset + col * p.batch_stride_d + first_row + row] = D_TYPE(reduce_buf[o * BLOCK_SIZE]);
            }
        }
        // The next round overwrites reduce_buf.
        barrier();
    }
}
