#version 450

// mul_mm_cm2.comp: D = A * B (MUL_MAT) or the mixture-of-experts product (MUL_MAT_ID=1) with
// NV cooperative matrix 2 (docs/interface.md §7): one workgroup-scope BM x BN
// accumulator per workgroup, A and B read straight from memory by tensor-layout loads,
// quantized A decoded by the callbacks of dequant_funcs_cm2.comp.
//
// Defines (7.1): DATA_A_<T>=1 (F16, BF16, or a quant type of types.comp), B_TYPE (float16_t,
//   or bfloat16_t with DATA_A_BF16), FLOAT_TYPE (the operand type: float16_t / bfloat16_t),
//   ACC_TYPE (float or float16_t), D_TYPE (float), MUL_MAT_ID=1, ALIGNED=1 (the host's
//   promise that stride_a and stride_b are multiples of 8; the fast-path test below checks
//   it anyway), LOAD_VEC_A/LOAD_VEC_B/B_IS_FLOAT/TO_FLOAT_TYPE/FLOAT16 (accepted; bf16 data
//   is typed bfloat16_t here, so no bit conversion is needed).
// Bindings: 0 data_a, 1 data_b, 2 data_d (the split-k scratch with split_k > 1), 3 data_ids
//   (MUL_MAT_ID).
// Push constants (7.3): those of mul_mm.comp plus a final padded_N (15 / 14 uints). Strides
//   are in elements; quantized rows are stride_a / QUANT_K blocks apart.
// Specialization constants (7.4): 0 BLOCK_SIZE, 1 BM, 2 BN, 3 BK, 4 enable_smaller_matrices.
// Dispatch (7.5): MUL_MAT (ceil(M/BM) * split_k, ceil(N/BN), ne12*ne13), x = split * blocks_m
//   + row tile; MUL_MAT_ID (ceil(M/BM), ceil(nei1/BN), n_as), z = expert.
//
// Addressing. Every load uses element offset 0 (the spec requires a 16-byte aligned base,
// which a batch offset need not be): A is the 2D tensor of all its matrices' rows stacked
// (row batch_a * M + m), B likewise (row z * N + n), so a tile's rows past M (or N) read the
// next matrix's rows. Those only ever feed outputs that are not stored, and the last
// matrix's are zero-filled by the clamp, so no load leaves the buffers. K is clamped at the
// split's end_k: the zero fill makes a partial last K step exact.
//
// Paths:
//   - fast path (MUL_MAT only): the tile lies inside M and padded_N, start_k is a multiple of
//     256, end_k of BK and the strides of 8: unclamped layouts. With enable_smaller_matrices
//     a column tile whose valid columns fit in BN/4 (BN/2) uses a BM x BN/4 (BN/2)
//     accumulator (padded_N > N only when the host staged B).
//   - general path: clamped layouts (zero fill), any M, N, K.
//   - MUL_MAT_ID: the workgroup lists, token-major, every (slot, token) whose id is its expert
//     z in row_ids; column c of the expert's product is B row row_ids[c] (gathered by a B
//     decode callback) and is stored element-wise to (slot, token). A workgroup loops over
//     the column tiles ic, ic + NumWorkGroups.y, ... so an expert with more matches than the
//     dispatch's columns (duplicate ids in a token, 8.5) is still finished; one with no tile
//     of its own leaves after the gather. With enable_smaller_matrices an expert's last tile
//     is BN/4 or BN/2 wide when its matches fit.
// Stores: on the fast path a tile inside D (columns < N too) is one tensor store through
// D's stacked layout (split, batch, column rows of M; needs batch_stride_d a multiple of
// stride_d and stride_d of 8); every other tile is stored per element (coopMatPerElementNV),
// each checking m < M and n < N (or c < the match count), at D offset z * batch_stride_d +
// ik * batch_stride_d * NumWorkGroups.z + n * stride_d + m (MUL_MAT) or token *
// batch_stride_d + slot * stride_d + m (MUL_MAT_ID).
//
// Arithmetic (src/model/tolerance.rs, mul_mm_cm2_bounds): operands are FLOAT_TYPE values (f16 A and
// B exact, quantized A as the decode callbacks round it); each coopMatMulAdd adds a BK-deep
// slice of products to the accumulator in ACC_TYPE in an order the implementation chooses;
// the K steps run in ascending order.

#extension GL_EXT_control_flow_attributes : enable
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_KHR_cooperative_matrix : enable
#extension GL_NV_cooperative_matrix2 : enable
#extension GL_EXT_buffer_reference : enable
#if defined(DATA_A_BF16)
#extension GL_EXT_bfloat16 : require
#endif

#include "types.comp"
#if QUANT_K > 1
#include "dequant_funcs_cm2.comp"
#endif

#ifndef ACC_TYPE
#define ACC_TYPE float
#endif
#ifndef D_TYPE
#define D_TYPE float
#endif
#if defined(DATA_A_BF16)
#define MAT_TYPE bfloat16_t
#else
#define MAT_TYPE float16_t
#endif

layout(constant_id = 0) const uint BLOCK_SIZE = 256;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const bool enable_smaller_matrices = false;
const uint BN_HALF = BN / 2;
const uint BN_QUARTER = BN / 4;

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

#if defined(DATA_A_BF16)
layout(binding = 0) readonly buffer A { bfloat16_t data_a[]; };
#else
layout(binding = 0) readonly buffer A { A_TYPE data_a[]; };
#endif
layout(binding = 1) readonly buffer B { B_TYPE data_b[]; };
layout(binding = 2) writeonly buffer D { D_TYPE data_d[]; };
#ifdef MUL_MAT_ID
layout(binding = 3) readonly buffer IDS { int data_ids[]; };
#endif

layout(push_constant) uniform parameter {
    uint M;
    uint N;
    uint K;
    uint stride_a;
    uint stride_b;
    uint stride_d;
    uint batch_stride_a;
    uint batch_stride_b;
    uint batch_stride_d;
#ifdef MUL_MAT_ID
    uint nei0;
    uint nei1;
    uint nbi1;
    uint ne11;
#else
    uint k_split;
    uint ne02;
    uint ne12;
    uint broadcast2;
    uint broadcast3;
#endif
    uint padded_N;
} p;

// Loads A's BM x BK slice at (row, k) of layout L into coopmat m (decoding block formats).
#if QUANT_K > 1
#define LOAD_A(m, L, row, k) coopMatLoadTensorNV(m, data_a, 0, sliceTensorLayoutNV(L, row, BM, k, BK), dequantFuncA)
#else
#define LOAD_A(m, L, row, k) coopMatLoadTensorNV(m, data_a, 0, sliceTensorLayoutNV(L, row, BM, k, BK))
#endif

#ifdef MUL_MAT_ID

const uint ROW_IDS = 4096;
shared u16vec2 row_ids[ROW_IDS];        // (slot, token) of each match, token-major
shared uint16_t row_b_slot[ROW_IDS];    // slot % ne11: the B row of the match's token it reads
shared uint seg_count[BLOCK_SIZE];      // matches in each invocation's segment, then offsets
shared uint num_matches;
// num_matches in a register: the B callback below runs for every element of every B tile.
uint matches;

// B decode callback: element (c, k) of the expert's gathered B is k of the row that match c
// reads (the buffer reference the load computes is not used).
layout(buffer_reference, std430, buffer_reference_align = 2) buffer decodeBufB { B_TYPE v; };
MAT_TYPE decodeFuncB(const in decodeBufB bl, const in uint blockCoords[2], const in uint coordInBlock[2])
{
    const uint c = blockCoords[0];
    if (c >= matches || blockCoords[1] >= p.K) {
        return MAT_TYPE(0.0);
    }
    const uint b_row = uint(row_ids[c].y) * p.batch_stride_b + uint(row_b_slot[c]) * p.stride_b;
    return MAT_TYPE(data_b[b_row + blockCoords[1]]);
}

// Stores element (row, col) of a tile whose first row is m0 and first column match c0.
ACC_TYPE store_id(const in uint32_t row, const in uint32_t col, const in ACC_TYPE v,
                  const in uint32_t m0, const in uint32_t c0)
{
    const uint m = m0 + row, c = c0 + col;
    if (m < p.M && c < matches) {
        const u16vec2 id = row_ids[c];
        data_d[uint(id.y) * p.batch_stride_d + uint(id.x) * p.stride_d + m] = D_TYPE(v);
    }
    return v;
}

#else

// Stores element (row, col) of a tile whose first row is m0 and first column n0.
ACC_TYPE store_mm(const in uint32_t row, const in uint32_t col, const in ACC_TYPE v,
                  const in uint32_t m0, const in uint32_t n0, const in uint32_t base)
{
    const uint m = m0 + row, n = n0 + col;
    if (m < p.M && n < p.N) {
        data_d[base + n * p.stride_d + m] = D_TYPE(v);
    }
    return v;
}

#endif

// Every K step of a tile is one BK-deep coopMatMulAdd; UNROLL_K / BK of them are issued per
// pass of the K loop (a K-quant super-block of 256; 8 steps for f16/bf16 and the 32-element
// blocks), and the steps left over run one at a time. H200, f16 4096x512x4096 and
// 14336x512x4096 (BK = 64): 8 steps 112.7 / 238.9 us, 4 steps 123.0 / 257.5, 2 steps 141.1 /
// 293.5, 1 step 173.1 / 354.8. q4_0 (with its 16-bit decode) 14336x512x4096 and
// 4096x512x14336: upstream's time / ours 1.06 / 1.07 with 8 steps, 1.01 / 1.02 with 4; q8_0
// unchanged (0.89-0.91, before B's load came first: K_STEP).
// MUL_MAT_ID does not unroll: its gathered B loads go through decodeFuncB, and one step per
// pass ran the 128 x 768 x 2048 MoE row 1.3x faster on the H100. (UNROLL_K = 0: the
// unrolled loop is left out and every step runs in the one-step loop.)
#ifdef MUL_MAT_ID
const uint UNROLL_K = 0;
#define B_VIEW_ARGS view_b, decodeFuncB
#else
const uint UNROLL_K = QUANT_K == 256 ? 256 : 8 * BK;
#define B_VIEW_ARGS view_b
#endif

// One output tile BNX columns wide: the K loop over [K0, end_k) in BK steps with layouts
// LA / LB, then the store STORE(acc, BNX). B is read through the transposing view (and on the
// MUL_MAT_ID path gathered by the decode callback): B_VIEW_ARGS.
#define TILE(BNX, LA, LB, K0, STORE)                                                         \
    {                                                                                      \
        coopmat<ACC_TYPE, gl_ScopeWorkgroup, BM, BNX, gl_MatrixUseAccumulator> acc =       \
            coopmat<ACC_TYPE, gl_ScopeWorkgroup, BM, BNX, gl_MatrixUseAccumulator>(0.0);   \
        coopmat<MAT_TYPE, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> mat_a;                 \
        coopmat<MAT_TYPE, gl_ScopeWorkgroup, BK, BNX, gl_MatrixUseB> mat_b;                \
        uint k = K0;                                                                       \
        if (UNROLL_K > 0) {                                                                \
            [[dont_unroll]] for (; k + UNROLL_K <= end_k; k += UNROLL_K) {                 \
                [[unroll]] for (uint j = 0; j < UNROLL_K / BK; ++j) {                      \
                    K_STEP(BNX, LA, LB, k + j * BK)                                        \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
        [[dont_unroll]] for (; k < end_k; k += BK) {                                       \
            K_STEP(BNX, LA, LB, k)                                                         \
        }                                                                                  \
        STORE(acc, BNX);                                                                   \
    }
// Column tile ic when VALID columns exist in all (N, or the expert's matches): BN/4 or BN/2
// wide where the valid ones fit and the host enables smaller matrices, else BN.
#define TILE_FITTED(VALID, LA, LB, K0, STORE)                                               \
    if (enable_smaller_matrices && ic * BN + BN_QUARTER >= VALID) {                        \
        TILE(BN_QUARTER, LA, LB, K0, STORE)                                                \
    } else if (enable_smaller_matrices && ic * BN + BN_HALF >= VALID) {                    \
        TILE(BN_HALF, LA, LB, K0, STORE)                                                   \
    } else {                                                                               \
        TILE(BN, LA, LB, K0, STORE)                                                        \
    }
#define LOAD_B(BNX, LB, KK)                                                                \
    coopMatLoadTensorNV(mat_b, data_b, 0, sliceTensorLayoutNV(LB, b_row0, BNX, KK, BK), B_VIEW_ARGS)
// B's tensor load is issued before A's: on the H100 (2026-12-06, against upstream 0.1.109) this
// took the q8_0 rows from 0.89-0.91 to 0.95-0.96 of upstream's speed, q4_0 from 1.06-1.07 to
// 1.07-1.08, f16 from 0.99-1.00 to 0.99-1.01. Not on the MUL_MAT_ID path, whose gathered B
// goes through decodeFuncB: there B first ran the f16 MoE rows 1.5x slower (q8_0 unchanged).
#ifdef MUL_MAT_ID
#define K_STEP(BNX, LA, LB, KK)                                                            \
    LOAD_A(mat_a, LA, a_row0, KK);                                                         \
    LOAD_B(BNX, LB, KK);                                                                   \
    acc = coopMatMulAdd(mat_a, mat_b, acc);
#else
#define K_STEP(BNX, LA, LB, KK)                                                            \
    LOAD_B(BNX, LB, KK);                                                                   \
    LOAD_A(mat_a, LA, a_row0, KK);                                                         \
    acc = coopMatMulAdd(mat_a, mat_b, acc);
#endif

void main()
{
#ifdef NEEDS_INIT_IQ_SHMEM
    init_iq_shmem(gl_WorkGroupSize);
#endif
    // A's block-unit row stride (QUANT_K = 1 for f16/bf16).
    const uint a_stride = p.stride_a / QUANT_K;
    const uint rows_per_a = p.batch_stride_a / p.stride_a;   // = M
    const uint rows_per_b = p.batch_stride_b / p.stride_b;   // = N (ID: ne11)
    // B is K-major in memory; the B operand is BK x BN, so loads transpose through a view.
    tensorViewNV<2, false, 1, 0> view_b = createTensorViewNV(2, false, 1, 0);

#ifdef MUL_MAT_ID
    const uint ir = gl_WorkGroupID.x;
    const uint expert = gl_WorkGroupID.z;
    const uint start_k = 0;
    const uint end_k = p.K;
    const uint a_row0 = expert * rows_per_a + ir * BM;
    const uint rows_a = gl_NumWorkGroups.z * rows_per_a;

    // Gather the matches: invocation t scans a contiguous segment of the token-major pair
    // list, counts, the counts become offsets (exclusive scan by invocation 0), and each
    // invocation writes its matches in order.
    const uint pairs = p.nei0 * p.nei1;
    const uint seg = (pairs + BLOCK_SIZE - 1) / BLOCK_SIZE;
    const uint t = gl_LocalInvocationID.x;
    const uint first = min(t * seg, pairs), last = min(first + seg, pairs);
    // Pair i is (slot i % nei0, token i / nei0), walked with two counters: no division per
    // pair (both scans run in every workgroup, most of which have no matches of their own).
    const uint first_slot = first % p.nei0, first_token = first / p.nei0;
    uint count = 0;
    uint ii0 = first_slot, ii1 = first_token;
    for (uint i = first; i < last; i++) {
        if (data_ids[ii1 * p.nbi1 + ii0] == int(expert)) {
            count++;
        }
        if (++ii0 == p.nei0) {
            ii0 = 0;
            ii1++;
        }
    }
    seg_count[t] = count;
    barrier();
    if (t == 0) {
        uint total = 0;
        for (uint j = 0; j < BLOCK_SIZE; j++) {
            const uint c = seg_count[j];
            seg_count[j] = total;
            total += c;
        }
        num_matches = total;
    }
    barrier();
    uint slot = seg_count[t];
    const uint slot_end = slot + count;
    // The second scan only where its matches meet this workgroup's column tiles (y, y + G, ...):
    // only their row_ids are read. A workgroup with no tile of its own leaves here.
    const uint y = gl_WorkGroupID.y, g = gl_NumWorkGroups.y;
    const uint lo = max(slot / BN, y);
    const uint first_own = lo + (g - (lo - y) % g) % g;
    const bool writes = count > 0 && first_own * BN < slot_end;
    ii0 = first_slot;
    ii1 = first_token;
    for (uint i = first; writes && slot < slot_end; i++) {
        if (data_ids[ii1 * p.nbi1 + ii0] == int(expert)) {
            row_ids[slot] = u16vec2(ii0, ii1);
            row_b_slot[slot] = uint16_t(ii0 % p.ne11);
            slot++;
        }
        if (++ii0 == p.nei0) {
            ii0 = 0;
            ii1++;
        }
    }
    barrier();
    matches = num_matches;
    if (y * BN >= matches) {
        return;
    }

    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> layout_a =
        createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
#if QUANT_K > 1
    layout_a = setTensorLayoutBlockSizeNV(layout_a, 1, QUANT_K);
#endif
    layout_a = setTensorLayoutDimensionNV(layout_a, rows_a, end_k);
    layout_a = setTensorLayoutStrideNV(layout_a, a_stride, 1);
    // The gathered B: whole column tiles of K rounded up to BK, unclamped, so every element
    // goes through decodeFuncB, which gives 0 past the match count and past K (with the
    // clamped layout the 128 x 768 x 2048 MoE row ran 1.5x slower on the H100).
    tensorLayoutNV<2> layout_b = createTensorLayoutNV(2);
    layout_b = setTensorLayoutDimensionNV(layout_b, ((matches + BN - 1) / BN) * BN,
                                          ((end_k + BK - 1) / BK) * BK);
    layout_b = setTensorLayoutStrideNV(layout_b, p.stride_b, 1);

    // An expert's last column tile is as narrow as its matches allow (TILE_FITTED) where the
    // host enables smaller matrices, as on the MUL_MAT fast path: with MoE shapes most experts
    // have a few dozen matches, so a whole BN-wide tile (256 columns in the f16 large tile)
    // would be mostly zeros through the tensor cores. Each width runs the same K steps, so the
    // same error model holds. Not in the configs the host leaves it off: on
    // the H100 the quantized one (BM 128, BN 64, BK 16) wrote nothing from a 16-wide tile.
    for (uint ic = gl_WorkGroupID.y; ic * BN < matches; ic += gl_NumWorkGroups.y) {
        const uint b_row0 = ic * BN;
#define STORE_ID(acc, BNX) coopMatPerElementNV(acc, acc, store_id, ir * BM, ic * BN)
        TILE_FITTED(matches, layout_a, layout_b, start_k, STORE_ID)
    }
#else
    const uint blocks_m = (p.M + BM - 1) / BM;
    const uint ir = gl_WorkGroupID.x % blocks_m;
    const uint ik = gl_WorkGroupID.x / blocks_m;
    const uint ic = gl_WorkGroupID.y;
    const uint z = gl_WorkGroupID.z;
    const uint i13 = z / p.ne12, i12 = z % p.ne12;
    const uint batch_a = (i13 / p.broadcast3) * p.ne02 + i12 / p.broadcast2;
    const uint start_k = ik * p.k_split;
    const uint end_k = min(p.K, (ik + 1) * p.k_split);
    const uint a_row0 = batch_a * rows_per_a + ir * BM;
    const uint b_row0 = z * rows_per_b + ic * BN;
    // A matrices: ne02 * ne03, with ne03 = ne13 / broadcast3 = (batches / ne12) / broadcast3.
    const uint rows_a = p.ne02 * ((gl_NumWorkGroups.z / p.ne12) / p.broadcast3) * rows_per_a;
    // B's buffer ends padded_N rows after the last batch's first row.
    const uint rows_b = (gl_NumWorkGroups.z - 1) * rows_per_b + p.padded_N;
    const uint pos_d = z * p.batch_stride_d + ik * p.batch_stride_d * gl_NumWorkGroups.z;
#define STORE_MM(acc, BNX) coopMatPerElementNV(acc, acc, store_mm, ir * BM, ic * BN, pos_d)
    // A tile inside D is written by one tensor store (no measured gain over per-element stores,
    // see UNROLL_K): D as the 2D tensor of all its columns stacked,
    // (split, batch, n) major, each M long, at element offset 0 like the loads.
    const uint d_row0 = (ik * gl_NumWorkGroups.z + z) * (p.batch_stride_d / p.stride_d) + ic * BN;
    const bool d_stacks = p.batch_stride_d % p.stride_d == 0 && p.stride_d % 8 == 0;
    tensorLayoutNV<2> layout_d = createTensorLayoutNV(2);
    layout_d = setTensorLayoutDimensionNV(layout_d, (gl_NumWorkGroups.x / blocks_m) * gl_NumWorkGroups.z
                                                       * (p.batch_stride_d / p.stride_d), p.M);
    layout_d = setTensorLayoutStrideNV(layout_d, p.stride_d & ~7u, 1);   // (d_stacks)
#define STORE_FAST(acc, BNX)                                                               \
    if (d_stacks && ic * BN + BNX <= p.N) {                                                \
        coopmat<D_TYPE, gl_ScopeWorkgroup, BM, BNX, gl_MatrixUseAccumulator> d =           \
            coopmat<D_TYPE, gl_ScopeWorkgroup, BM, BNX, gl_MatrixUseAccumulator>(acc);     \
        coopMatStoreTensorNV(d, data_d, 0, sliceTensorLayoutNV(layout_d, d_row0, BNX, ir * BM, BM), \
                             view_b);                                                      \
    } else {                                                                               \
        STORE_MM(acc, BNX);                                                                \
    }

    const bool fast = (ir + 1) * BM <= p.M && (ic + 1) * BN <= p.padded_N
        && start_k % 256 == 0 && end_k % BK == 0
        && (QUANT_K > 1 || p.stride_a % 8 == 0) && p.stride_b % 8 == 0;
    if (fast) {
        // The test above holds: restate it as masks the compiler can see (strides multiples
        // of 8, start_k of 256, with element offset 0), so it may issue 16-byte loads. On
        // the H100 this took 4096x512x4096 f16 from 3.2 ms to 0.52 ms.
        const uint fast_k0 = start_k & ~255u;
#if QUANT_K == 1
        const uint fast_stride_a = a_stride & ~7u;
#else
        const uint fast_stride_a = a_stride;
#endif
        tensorLayoutNV<2> fast_a = createTensorLayoutNV(2);
#if QUANT_K > 1
        fast_a = setTensorLayoutBlockSizeNV(fast_a, 1, QUANT_K);
#endif
        fast_a = setTensorLayoutDimensionNV(fast_a, rows_a, end_k);
        fast_a = setTensorLayoutStrideNV(fast_a, fast_stride_a, 1);
        tensorLayoutNV<2> fast_b = createTensorLayoutNV(2);
        fast_b = setTensorLayoutDimensionNV(fast_b, rows_b, end_k);
        fast_b = setTensorLayoutStrideNV(fast_b, p.stride_b & ~7u, 1);
        TILE_FITTED(p.N, fast_a, fast_b, fast_k0, STORE_FAST)
    } else {
        tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> layout_a =
            createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
#if QUANT_K > 1
        layout_a = setTensorLayoutBlockSizeNV(layout_a, 1, QUANT_K);
#endif
        layout_a = setTensorLayoutDimensionNV(layout_a, rows_a, end_k);
        layout_a = setTensorLayoutStrideNV(layout_a, a_stride, 1);
        tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> layout_b =
            createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
        layout_b = setTensorLayoutDimensionNV(layout_b, rows_b, end_k);
        layout_b = setTensorLayoutStrideNV(layout_b, p.stride_b, 1);
        TILE(BN, layout_a, layout_b, start_k, STORE_MM)
    }
#endif
}
