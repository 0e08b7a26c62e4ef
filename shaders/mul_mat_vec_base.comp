// mul_mat_vec_base.comp: interface and reduction shared by the matrix-vector bodies.
//
// Defines: DATA_A_<T>=1, B_TYPE (float | float16_t), B_TYPE_VEC4 (its 4-vector: B is read
//   as 4-vectors where the offsets allow it, always for block A), D_TYPE (float), MUL_MAT_ID=1 for the
//   expert-indexed variant. B_TYPE_VEC2/FLOAT_TYPE are accepted but unused: all arithmetic
//   is float.
// Bindings (set 0): 0 data_a A_TYPE[] (readonly), 1 data_b B_TYPE[] (readonly),
//   2 data_d D_TYPE[] (writeonly), 3 data_ids int[] (readonly, MUL_MAT_ID only).
// Push constants, 4-byte uints in this order:
//   ncols, stride_a, stride_b, stride_d, batch_stride_a, batch_stride_b, batch_stride_d,
//   then ne02, ne12, broadcast2, broadcast3 (44 bytes) or, with MUL_MAT_ID, nei0, ne11
//   (36 bytes). All strides count elements, not bytes or blocks.
// Specialization constants: 0 BLOCK_SIZE (= workgroup size x, a power of two <= 1024),
//   1 NUM_ROWS (A rows per workgroup, >= 1), 2 NUM_COLS (B/D columns per workgroup).
// Device: subgroup shuffle in the compute stage (reduce_and_store; every desktop Vulkan 1.1
//   driver and lavapipe have it; upstream's mat-vec at this interface needs none). Binding 0
//   must start 16-byte aligned (the K-quants' 128-bit loads; our runner binds at offset 0).
// Dispatch: (ceil(groups_x / NUM_ROWS), batches or nei0, groups_z); the workgroup's first
//   row is NUM_ROWS * (WorkGroupID.x + NumWorkGroups.x * WorkGroupID.z) and rows at or
//   past stride_d (= M) are not computed.

#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable

#include "types.comp"

layout(constant_id = 0) const uint BLOCK_SIZE = 32;
layout(constant_id = 1) const uint NUM_ROWS = 1;
layout(constant_id = 2) const uint NUM_COLS = 1;

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(binding = 1) readonly buffer B { B_TYPE data_b[]; };
layout(binding = 1) readonly buffer BV4 { B_TYPE_VEC4 data_b_v4[]; };
layout(binding = 2) writeonly buffer D { D_TYPE data_d[]; };
#ifdef MUL_MAT_ID
layout(binding = 3) readonly buffer IDS { int data_ids[]; };
#endif
// Binding 0 as 2-, 4- and 16-byte words, for the per-type bodies' wide loads (a_bytes16).
layout(binding = 0) readonly buffer A_U16 { uint16_t data_a_u16[]; };
layout(binding = 0) readonly buffer A_U32 { uint data_a_u32[]; };
layout(binding = 0) readonly buffer A_U128 { uvec4 data_a_u128[]; };

// 16 bytes of binding 0 from byte `offset`, byte 0 in the low bits of .x. `align` (16, 4 or 2)
// is a constant at every call site that offset is a multiple of (the block size's alignment
// and the field's offset), and picks the widest load it allows.
uvec4 a_bytes16(uint offset, const uint align)
{
    if (align % 16 == 0) {
        return data_a_u128[offset / 16];
    }
    if (align % 4 == 0) {
        const uint i = offset / 4;
        return uvec4(data_a_u32[i], data_a_u32[i + 1], data_a_u32[i + 2], data_a_u32[i + 3]);
    }
    const uint i = offset / 2;
    uvec4 w;
    [[unroll]] for (uint j = 0; j < 4; ++j) {
        w[j] = uint(data_a_u16[i + 2 * j]) | (uint(data_a_u16[i + 2 * j + 1]) << 16);
    }
    return w;
}

// 4 bytes of binding 0 from byte `offset`, byte 0 in the low bits; `align` (4 or 2) as in
// a_bytes16.
uint a_word(uint offset, const uint align)
{
    if (align % 4 == 0) {
        return data_a_u32[offset / 4];
    }
    const uint i = offset / 2;
    return uint(data_a_u16[i]) | (uint(data_a_u16[i + 1]) << 16);
}

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

// The first element, inside a super-block, of K-quant thread t's quads (the work split of
// mul_mat_vec_superblock.comp): quad g starts 32 g later.
uint kq_thread_first(uint t)
{
    return 128 * (t / 8) + 4 * (t % 8);
}

// B elements index..index + 3 as floats, index a multiple of 4: one vector load. For block A
// every B offset is (ncols is a multiple of QUANT_K and the host makes B contiguous, as
// upstream's body also assumes); the float body checks it first.
vec4 load_b4(uint index)
{
    return vec4(data_b_v4[index / 4]);
}

// Sums partial_sums over the workgroup with the halving tree (pair t with t + w for w =
// BLOCK_SIZE / 2, ..., 1) and writes the num_rows valid rows of every column. Must be reached
// by the whole workgroup. When the workgroup is exactly one subgroup the tree runs in
// registers (subgroupShuffleXor with mask w adds the same pairs, and every invocation ends with
// the bit-identical total); otherwise in shared memory, in rounds of at most
// OUTPUTS_PER_ROUND outputs, with a barrier per level.
void reduce_and_store(uint d_offset, uint first_row, uint num_rows)
{
    const uint tid = gl_LocalInvocationID.x;
    if (gl_NumSubgroups == 1 && gl_SubgroupSize == BLOCK_SIZE) {
        [[unroll]] for (uint o = 0; o < NUM_OUTPUTS; ++o) {
            float v = partial_sums[o];
            [[unroll]] for (uint w = BLOCK_SIZE / 2; w > 0; w >>= 1) {
                v += subgroupShuffleXor(v, w);
            }
            const uint col = o / NUM_ROWS;
            const uint row = o % NUM_ROWS;
            if (tid == o % BLOCK_SIZE && row < num_rows) {
                data_d[d_offset + col * p.batch_stride_d + first_row + row] = D_TYPE(v);
            }
        }
        return;
    }
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
