#version 450

// mul_mm.comp: D = A * B for many B columns (MUL_MAT), or the mixture-of-experts product
// (MUL_MAT_ID=1), on the scalar path of docs/interface.md §6: A tiles of BM x BK
// and B tiles of BN x BK are staged in shared memory as FLOAT_TYPE, and every output element
// is accumulated by one invocation, in ACC_TYPE, over k ascending. With COOPMAT=1 the same
// file is the cm1 path: same staging, products by KHR cooperative matrices (see "cm1" below).
//
// Defines (section 6.1; one variant per combination):
//   DATA_A_<T>=1      A's type (types.comp): F32, F16, BF16, Q4_0..Q8_0, Q2_K..Q6_K, IQ1_S,
//                     IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S (iq_decode.comp, with
//                     their grid in shared memory), IQ4_NL, IQ4_XS.
//   B_TYPE            element type of the B buffer: float, float16_t, uint16_t (bf16 bits,
//                     with B_IS_FLOAT=1; TO_FLOAT_TYPE is accepted and ignored, the bits are
//                     widened by types.comp's bf16_to_fp32), or the aligned vector
//                     forms vec4/f16vec4/u16vec4 (LOAD_VEC_B=4) and mat2x4/f16mat2x4
//                     (LOAD_VEC_B=8). B is read a quad of 4 elements at a time (stage_tiles).
//   LOAD_VEC_A, ALIGNED
//                     accepted and ignored: A and B are read in quads, as one vector where the
//                     strides allow it (quads_aligned, tested at run time), so the aligned
//                     variants compute exactly what the unaligned ones do (the host picks
//                     them when K is a multiple of the tile's alignment and M, N > 8).
//   FLOAT16=1         the fp16 mode: enables float16 arithmetic.
//   FLOAT_TYPE        shared-memory type: float16_t in fp16 mode (every A and B value is
//                     rounded to f16 when staged), float in fp32 mode and for bf16.
//   ACC_TYPE          accumulator: float, or float16_t for the _f16acc variants.
//   D_TYPE            float.
//   MUL_MAT_ID=1      expert-indexed variant (binding 3, ID push constants).
//   COOPMAT=1         the cm1 path (KHR cooperative matrices, `_cm1` variants; section 6.1):
//                     same staging, the products by subgroup-scope TM x TK x TN
//                     coopMatMulAdd (see "cm1" below). FLOAT_TYPE is float16_t, or
//                     bfloat16_t for bf16 A (then TO_FLOAT_TYPE=uintBitsToBFloat16EXT).
// Bindings (set 0): 0 data_a (readonly), 1 data_b (readonly), 2 data_d (writeonly; the
//   split-k scratch when k_split < K), 3 data_ids int[] (readonly, MUL_MAT_ID only).
// Push constants (uint, this order; strides count elements, for block formats too):
//   MUL_MAT:    M, N, K, stride_a, stride_b, stride_d, batch_stride_a, batch_stride_b,
//               batch_stride_d, k_split, ne02, ne12, broadcast2, broadcast3   (the host's
//               trailing padded_N is not declared)
//   MUL_MAT_ID: M, N, K, stride_a, stride_b, stride_d, batch_stride_a, batch_stride_b,
//               batch_stride_d, nei0, nei1, nbi1, ne11                         (ditto)
// Specialization constants (section 6.4): 0 BLOCK_SIZE (workgroup size), 1 BM, 2 BN, 3 BK,
//   4 WM, 5 WN, 6 WMITER, 7 TM, 8 TN, 9 TK (cm1 only), 10 WARP. Warps of WARP consecutive
//   invocations take the (BM/WM) x (BN/WN) warp tiles of the output tile; inside a warp tile
//   an invocation owns WMITER x WNITER register blocks of TM x TN outputs,
//   WNITER = WM*WN / (WARP*TM*TN*WMITER). With fewer warps than warp tiles a warp takes
//   several. With more (a subgroup size of 8 gives the small tiles BLOCK_SIZE/WARP = 2 or 4
//   warps for one warp tile), the scalar path splits each warp tile's WNITER column blocks
//   among WARPS_PER_TILE warps when they divide evenly; otherwise the extra warps only load.
// Dispatch: MUL_MAT (ceil(M/BM) * split_k, ceil(N/BN), ne12*ne13): x = split * blocks_m +
//   row tile; z = batch. MUL_MAT_ID (ceil(M/BM), ceil(nei1/BN), n_as): z = expert.
//
// Addressing. MUL_MAT: batch z has i13 = z / ne12, i12 = z % ne12 and reads A matrix
//   (i13 / broadcast3) * ne02 + i12 / broadcast2; A(m, k) at that * batch_stride_a +
//   m * stride_a + k, B(n, k) at z * batch_stride_b + n * stride_b + k, and split ik covers
//   k in [ik * k_split, min(K, (ik + 1) * k_split)) and writes D(m, n) at
//   z * batch_stride_d + ik * batch_stride_d * NumWorkGroups.z + n * stride_d + m.
//   MUL_MAT_ID: the workgroup gathers, token-major, every (slot ii0, token ii1) whose id
//   data_ids[ii1 * nbi1 + ii0] is its expert z into row_ids (at most 4096: the host's token
//   chunking keeps nei0 * nei1 <= 4096); column c of the expert's product is the B row
//   ii1 * batch_stride_b + (ii0 % ne11) * stride_b and lands in D at
//   ii1 * batch_stride_d + ii0 * stride_d + m.
//
// Differences from upstream's shader at the pinned commit (all of them bounds or coverage):
//   - every load checks m < M, n < N (or the match count) and k < end_k, and zero-fills, for
//     quantized and aligned A too, and on the MUL_MAT_ID path (section 12, later-changed 1);
//   - every store checks m < M and n < N (or the match count), MUL_MAT_ID included;
//   - k_split need not be a multiple of BK (nor of the block size): both operands are masked
//     at end_k in every variant (later-changed 6);
//   - an expert with more matches than the BN * ceil(nei1/BN) columns the dispatch covers (a
//     token listing one expert twice, section 8.5) is finished by the same workgroups, which
//     loop over column tiles ic, ic + NumWorkGroups.y, ...;
//   - warps beyond the warp tiles share a warp tile's columns (see the specialization
//     constants) instead of idling.
//
// cm1 (COOPMAT). The host requests full subgroups and WARP is the device's subgroup size, so
//   warp w is subgroup w (gl_SubgroupID). Each warp tile (WM x WN, the same (BM/WM) x (BN/WN)
//   layout; a warp takes several when there are fewer warps) is (WM/TM) x (WN/TN)
//   accumulator matrices of TM x TN ACC_TYPE. Shared rows are BK + 8 long (upstream's
//   stride: 16-byte aligned rows for coopMatLoad, and the size the host's shared-memory check
//   assumes). Per K step, for kk = 0, TK, 2 TK, ... while block_k + kk < end_k: load the TM x
//   TK A matrix (row-major from buf_a) and the TK x TN B matrix (column-major from buf_b) and
//   acc = coopMatMulAdd(a, b, acc); staged zeros fill the last partial step. Store: each
//   accumulator goes through this warp's TM x TN slice of coopmat_stage (column-major), and
//   the warp's invocations write the elements with m < M and column < N (or the match count)
//   to D. The TK-deep steps of one output run in K order from start_k; inside a step the
//   implementation sums in any order and precision (src/model/tolerance.rs: mul_mm_cm2_bounds with
//   depth TK).
//   Worked example (H100, m tile of a float A: BLOCK_SIZE 128, BM = BN = 64, BK = 16,
//   WM = WN = 32, TM = TN = TK = 16, WARP 32; M = 50, N = 64, K = 40): 4 warps, 4 warp tiles;
//   warp 3 has r0 = (3 % 2) * 32 = 32, c0 = (3 / 2) * 32 = 32 and 2 x 2 accumulators. K steps
//   block_k = 0, 16, 32 with one TK step each (k 32..39 real, 40..47 staged zeros).
//   Accumulator (cm 1, cn 0) holds rows 48..63, columns 32..47 of the tile; only rows 48, 49
//   (< M) reach D.
//
// Arithmetic of the scalar path (src/model/tolerance.rs models exactly this): a block value is d*q (+ m) in float
// (d*sc*q - dmin*m for the K-quants), exact except for the one rounding of the min, then
// FLOAT_TYPE(value) when staged; output (m, n) is sums = fma(ACC_TYPE(a_k), ACC_TYPE(b_k),
// sums) for k = start_k, start_k + 1, ... end_k - 1 in that order, starting from 0, and
// D_TYPE(sums) is stored.
//
// Worked example (MUL_MAT, s tile of a quantized A on a subgroup-8 device: BLOCK_SIZE 32,
// BM = BN = 32, BK = 32, WM = WN = 32, WMITER 2, TM = TN = 2, WARP 8, so WNITER = 16,
// WSUBM = 16, WSUBN = 2; M = 40, N = 10, K = 96, split_k 2 so k_split = 48): blocks_m = 2;
// workgroup x = 3 is row tile 1 (rows 32..39 valid) of split 1 (k in [48, 96)). Invocation
// 13 is lane 5 of warp 1. The 4 warps share the one warp tile (WARPS_PER_TILE 4, each with
// 16 / 4 = 4 column blocks): lane 5 of warp w owns rows 2*5 + {0, 1} and 16 + 2*5 + {0, 1}
// of the tile, columns 2*j + {0, 1} for 4w <= j < 4w + 4, so invocation 13 owns columns
// 8..15 of those rows. The first K step stages k = 48..79: A(32 + r, 48 + c) is element
// (32 + r) * 96 + 48 + c of batch 0, i.e. block (32 + r) * 3 + 1, index 16 + c (for c < 16)
// of q4_0 row 32 + r; rows r >= 8 (m >= 40) and columns n >= 10 are zero-filled.

#extension GL_EXT_control_flow_attributes : enable
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#ifdef FLOAT16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#ifdef COOPMAT
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#ifdef DATA_A_BF16
#extension GL_EXT_bfloat16 : require
#endif
#endif

#include "types.comp"

#ifndef FLOAT_TYPE
#define FLOAT_TYPE float
#endif
#ifndef ACC_TYPE
#define ACC_TYPE float
#endif
#ifndef D_TYPE
#define D_TYPE float
#endif
#ifndef LOAD_VEC_B
#define LOAD_VEC_B 1
#endif

layout(constant_id = 0) const uint BLOCK_SIZE = 64;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint WM = 32;
layout(constant_id = 5) const uint WN = 32;
layout(constant_id = 6) const uint WMITER = 2;
layout(constant_id = 7) const uint TM = 4;
layout(constant_id = 8) const uint TN = 2;
layout(constant_id = 9) const uint TK = 1;
layout(constant_id = 10) const uint WARP = 32;

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(binding = 0) readonly buffer A { A_TYPE data_a[]; };
#if defined(DATA_A_F32)
layout(binding = 0) readonly buffer A4 { vec4 data_a4[]; };   // aligned quads (a_quad)
#elif defined(DATA_A_F16)
layout(binding = 0) readonly buffer A4 { f16vec4 data_a4[]; };
#elif defined(DATA_A_BF16)
layout(binding = 0) readonly buffer A4 { u16vec4 data_a4[]; };
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
} p;

// ---- Tiling derived from the specialization constants ----

const uint NUM_WARPS = BLOCK_SIZE / WARP;
const uint WARP_TILES = (BM / WM) * (BN / WN);
const uint TILES_PER_WARP = (WARP_TILES + NUM_WARPS - 1) / NUM_WARPS;
#ifndef COOPMAT
// Scalar register blocking (with cm1's TM = TN = 16, WNITER would be 0).
const uint WNITER = (WM * WN) / (WARP * TM * TN * WMITER);
const uint WSUBM = WM / WMITER;
const uint WSUBN = WN / WNITER;
const uint THREAD_ROWS = WSUBM / TM;          // invocations along M in a warp sub-tile
const uint THREAD_COLS = WSUBN / TN;          // and along N
const uint A_CACHE = WMITER * TM;
// Warps per warp tile, each taking OWN_WNITER of its column blocks. Spare warps (the small
// tiles on a subgroup of 8, the quantized one on 16) used to idle while one warp held every
// sum: 128 an invocation on 8, now 32 (4 warps) or 64 (2), and lavapipe's JIT of those
// pipelines takes about half as long. On 32 or 64 no host tile has spare warps: 1, no change.
// (Nested selects: glslang cannot make a specialization constant of `&&`.)
const uint SPARE_WARPS = NUM_WARPS > WARP_TILES ? NUM_WARPS / WARP_TILES : 1;
const uint WARPS_PER_TILE = NUM_WARPS % WARP_TILES != 0 ? 1
                          : WNITER % SPARE_WARPS != 0 ? 1 : SPARE_WARPS;
const uint OWN_WNITER = WNITER / WARPS_PER_TILE;
const uint TILE_STRIDE = NUM_WARPS / WARPS_PER_TILE;   // warp tiles t * TILE_STRIDE apart
const uint B_CACHE = OWN_WNITER * TN;
const uint SUMS_PER_TILE = A_CACHE * B_CACHE;
// With no more warps than warp tiles, a computing warp's first tile always exists (warp_i <
// NUM_WARPS); saying so drops that test from the inner loop. On the H200 the f16
// 4096 x 512 x 4096 row ran 1.18x faster, but quantized A (BK 32) took 236 registers instead
// of 199 and ran 2% slower: float A only.
#if QUANT_K == 1
const bool FOLD_FIRST_TILE_TEST = NUM_WARPS <= WARP_TILES;
#else
const bool FOLD_FIRST_TILE_TEST = false;
#endif
#endif
// Loops whose trip count is not a constant are written as LOOP_CHUNK-step unrolled bodies
// inside a loop: lavapipe (gallivm) ends every loop of an invocation once all its loops
// together have iterated LP_MAX_TGSI_LOOP_ITERATIONS = 65535 times (one counter shared by
// every loop), silently dropping the rest of K. With a loop per staging element and per k,
// the small float tile (81 iterations per K step) stopped accumulating near K = 12500. Now a
// K step costs at most 1 + BK / LOOP_CHUNK iterations, plus the staging quads' constant-trip
// loops where the driver does not unroll them (K = 70000 runs on the small tile). On
// the MUL_MAT_ID path one workgroup may do several column tiles (duplicate ids), each a full
// K loop: the budget is shared by them.
#define LOOP_CHUNK 4

#ifdef COOPMAT
const uint SHMEM_STRIDE = BK + 8;
shared FLOAT_TYPE buf_a[BM * SHMEM_STRIDE];   // [row][k]
shared FLOAT_TYPE buf_b[BN * SHMEM_STRIDE];   // [column][k]
uint a_at(uint r, uint k) { return r * SHMEM_STRIDE + k; }
uint b_at(uint c, uint k) { return c * SHMEM_STRIDE + k; }
#else
// Scalar path: k-major, [k][row] and [k][column]. The products read an invocation's TM rows
// (TN columns) at one k from consecutive addresses: with TM = TN = 4 and f16 one 8-byte
// vector each where the compiler merges them (the register block's rows start at multiples
// of TM), instead of one 16-bit load per value from rows BK + 1 apart; and TM consecutive f16
// rows are the two halves of packed f16x2 operands as they sit. Rows are padded by KPAD
// values: k rows stay 8-byte aligned, and the staging stores (lanes: 8 consecutive rows times
// 4 quads, stage_quad_row) are free of bank conflicts: 4 k rows are 8 banks apart (mod 32).
// Reads: the 8 (4) distinct rows (columns) a warp reads at one k are consecutive: no conflict.
// On the H100 (14336x512x4096) this took the q4_0 and q8_0 pipelines from 200-216 registers to
// 148-151 and their time down by 8-9% (f16: 1% up). Size: BK (BM + BN + 2 KPAD) values, where
// the host's shared-memory check counts (BM + BN)(BK + 1) (§8.1): equal on the large tile, up
// to 384 bytes more on the medium and small ones; at device limits of 16, 32, 48 and 64 KiB no
// tile the host accepts exceeds the limit.
#ifdef FLOAT16
const uint KPAD = 4;   // 4 k rows of BM + 4 halves: 2 BM + 8 words, 8 mod 32 (BM % 16 == 0)
#else
const uint KPAD = 2;   // 4 k rows of BM + 2 floats: 8 mod 32 words
#endif
const uint A_KSTRIDE = BM + KPAD;
const uint B_KSTRIDE = BN + KPAD;
shared FLOAT_TYPE buf_a[BK * A_KSTRIDE];   // [k][row]
shared FLOAT_TYPE buf_b[BK * B_KSTRIDE];   // [k][column]
uint a_at(uint r, uint k) { return k * A_KSTRIDE + r; }
uint b_at(uint c, uint k) { return k * B_KSTRIDE + c; }
#endif

#ifdef MUL_MAT_ID
const uint ROW_IDS = 4096;
shared uint row_ids[ROW_IDS];                 // slot | token << 16, token-major
// Per-invocation counts, then the total at [BLOCK_SIZE]. The array is a multiple of 16 bytes:
// with a separate 4-byte total the H100 read the cm1 path's coopmat_stage misaligned (36 of
// 40 cases of every matmul_id_*_cm1 row wrong; declaring coopmat_stage first did not help,
// padding did). coopMatLoad/Store need 16-byte aligned shared addresses.
shared uint match_counts[BLOCK_SIZE + 4];
#endif

// ---- Reading one B element (as float) ----

// The element is widened to a float vector first (16-bit vectors may not be indexed
// dynamically without 16-bit arithmetic, which fp32-mode devices need not have).
#if LOAD_VEC_B == 8
// The 4 elements of B's 8-wide load that hold element i, picked by a select, not a dynamic
// column index: with that the H200 kept the matrix in local memory (416 bytes a thread; 2-3%
// on the quantized 4096 x 512 x 4096 rows).
vec4 b_vec4(uint i)
{
    const mat2x4 v = mat2x4(data_b[i / 8]);
    return (i & 4u) == 0 ? v[0] : v[1];
}

float b_value(uint i)
{
    // Selects, not dynamic indices (see b_vec4).
    const vec4 c = b_vec4(i);
    const vec2 h = (i & 2u) == 0 ? c.xy : c.zw;
    return (i & 1u) == 0 ? h.x : h.y;
}
#elif LOAD_VEC_B == 4 && defined(B_IS_FLOAT)
float b_value(uint i)
{
    // bf16 bits, widened exactly.
    const uvec4 v = uvec4(data_b[i / 4]);
    return bf16_to_fp32(v[i % 4]);
}
#elif LOAD_VEC_B == 4
float b_value(uint i)
{
    const vec4 v = vec4(data_b[i / 4]);
    return v[i % 4];
}
#elif defined(B_IS_FLOAT)
float b_value(uint i)
{
    return bf16_to_fp32(uint(data_b[i]));
}
#else
float b_value(uint i)
{
    return float(data_b[i]);
}
#endif

// ---- Reading one A element (as float) ----

#if QUANT_K == 1

float a_value(uint i)
{
#if defined(DATA_A_BF16)
    return bf16_to_fp32(uint(data_a[i]));
#else
    return float(data_a[i]);
#endif
}

#else

// K-quant helpers: ggml's get_scale_min_k4 (q4_K, q5_K): sub-blocks 0..3 keep scale and min
// in the low 6 bits of bytes sb and sb + 4; sub-blocks 4..7 keep their low 4 bits in the
// nibbles of byte sb + 4 and their high 2 bits in the top bits of bytes sb - 4 and sb.
#if defined(DATA_A_Q4_K) || defined(DATA_A_Q5_K)
uvec2 scale_min_k4(uint ib, uint sb)
{
    if (sb < 4) {
        return uvec2(uint(data_a[ib].scales[sb]) & 63u, uint(data_a[ib].scales[sb + 4]) & 63u);
    }
    const uint low = uint(data_a[ib].scales[sb + 4]);
    const uint scale_top = uint(data_a[ib].scales[sb - 4]) >> 6;
    const uint min_top = uint(data_a[ib].scales[sb]) >> 6;
    return uvec2((low & 0xFu) | (scale_top << 4), (low >> 4) | (min_top << 4));
}
#endif

// The 32-element block types and iq4_xs read an aligned quad as one word of quants
// (dequant_funcs.comp) instead of four bytes, and the iq4 types look their values up in its
// shared copy of the table (kvalues_sh) instead of a dynamically indexed constant array: on
// lavapipe, from an empty Mesa cache, 200 iq4_nl cases took 10.4 s instead of 14.3 s.
#if defined(DATA_A_Q4_0) || defined(DATA_A_Q4_1) || defined(DATA_A_Q5_0) || defined(DATA_A_Q5_1) \
    || defined(DATA_A_Q8_0) || defined(DATA_A_IQ4_NL) || defined(DATA_A_IQ4_XS)
#define A_QUAD_WORDS 1
#include "dequant_funcs.comp"
#endif

#if defined(DATA_A_IQ_LATTICE)
#define IQ_ARG uint ib
#define IQ_BLK data_a[ib]
#define IQ_PASS ib
#include "iq_decode.comp"
#endif

// Element e (0 <= e < QUANT_K) of block ib, fully scaled. Products of the f16 scale with the
// integer parts are exact in float (at most 23 significant bits); the only rounding is the
// subtraction or addition of the min.
float a_block_value(uint ib, uint e)
{
#if defined(DATA_A_Q4_0)
    const uint byte = uint(data_a[ib].qs[e % 16]);
    const uint q = e < 16 ? byte & 0xFu : byte >> 4;
    return float(data_a[ib].d) * float(int(q) - 8);
#elif defined(DATA_A_Q4_1)
    const uint byte = uint(data_a[ib].qs[e % 16]);
    const uint q = e < 16 ? byte & 0xFu : byte >> 4;
    return fma(float(data_a[ib].d), float(q), float(data_a[ib].m));
#elif defined(DATA_A_Q5_0)
    const uint qh = uint(data_a[ib].qh[0]) | (uint(data_a[ib].qh[1]) << 16);
    const uint byte = uint(data_a[ib].qs[e % 16]);
    const uint q = (e < 16 ? byte & 0xFu : byte >> 4) | (((qh >> e) & 1u) << 4);
    return float(data_a[ib].d) * float(int(q) - 16);
#elif defined(DATA_A_Q5_1)
    const uint byte = uint(data_a[ib].qs[e % 16]);
    const uint q = (e < 16 ? byte & 0xFu : byte >> 4) | (((data_a[ib].qh >> e) & 1u) << 4);
    return fma(float(data_a[ib].d), float(q), float(data_a[ib].m));
#elif defined(DATA_A_Q8_0)
    return float(data_a[ib].d) * float(int(data_a[ib].qs[e]));
#elif defined(DATA_A_IQ4_NL)
    const uint byte = uint(data_a[ib].qs[e % 16]);
    return float(data_a[ib].d) * kvalues_sh[e < 16 ? byte & 0xFu : byte >> 4];
#elif defined(DATA_A_IQ4_XS)
    // 32-element sub-block sub: bytes 16 sub .. 16 sub + 15, low nibbles first.
    const uint sub = e / 32;
    const uint j = e % 32;
    const uint byte = uint(data_a[ib].qs[16 * sub + j % 16]);
    const uint ls = ((uint(data_a[ib].scales_l[sub / 2]) >> (4 * (sub % 2))) & 0xFu)
                  | (((uint(data_a[ib].scales_h) >> (2 * sub)) & 3u) << 4);
    return float(data_a[ib].d) * (float(int(ls) - 32) * kvalues_sh[j < 16 ? byte & 0xFu : byte >> 4]);
#elif defined(DATA_A_IQ_LATTICE)
    // Both factors and the product are exact (iq_decode.comp).
    return iq_group_scale(ib, e / 16) * iq_quant(ib, e);
#elif defined(DATA_A_Q2_K)
    // n = e / 128, g = (e % 128) / 32, l = e % 32; one scale/min byte per 16 elements.
    const uint q = (uint(data_a[ib].qs[32 * (e / 128) + e % 32]) >> (2 * ((e % 128) / 32))) & 3u;
    const uint sm = uint(data_a[ib].scales[e / 16]);
    const vec2 d = vec2(data_a[ib].d);
    return fma(d.x * float(sm & 0xFu), float(q), -(d.y * float(sm >> 4)));
#elif defined(DATA_A_Q3_K)
    const uint n = e / 128;
    const uint g = (e % 128) / 32;
    const uint l = e % 32;
    const uint grp = e / 16;
    const uint low = (uint(data_a[ib].qs[32 * n + l]) >> (2 * g)) & 3u;
    const uint high = (uint(data_a[ib].hmask[l]) >> (4 * n + g)) & 1u;
    const int q = int(low) - (high != 0u ? 0 : 4);
    const uint s_low = (uint(data_a[ib].scales[grp % 8]) >> (4 * (grp / 8))) & 0xFu;
    const uint s_high = (uint(data_a[ib].scales[8 + grp % 4]) >> (2 * (grp / 4))) & 3u;
    const int s = int(s_low | (s_high << 4)) - 32;
    return (float(data_a[ib].d) * float(s)) * float(q);
#elif defined(DATA_A_Q4_K)
    const uint sb = e / 32;
    const uint q = (uint(data_a[ib].qs[32 * (e / 64) + e % 32]) >> (4 * (sb % 2))) & 0xFu;
    const uvec2 sm = scale_min_k4(ib, sb);
    const vec2 d = vec2(data_a[ib].d);
    return fma(d.x * float(sm.x), float(q), -(d.y * float(sm.y)));
#elif defined(DATA_A_Q5_K)
    const uint sb = e / 32;
    const uint l = e % 32;
    const uint low = (uint(data_a[ib].qs[32 * (e / 64) + l]) >> (4 * (sb % 2))) & 0xFu;
    const uint q = low | (((uint(data_a[ib].qh[l]) >> sb) & 1u) << 4);
    const uvec2 sm = scale_min_k4(ib, sb);
    const vec2 d = vec2(data_a[ib].d);
    return fma(d.x * float(sm.x), float(q), -(d.y * float(sm.y)));
#elif defined(DATA_A_Q6_K)
    const uint n = e / 128;
    const uint g = (e % 128) / 32;
    const uint l = e % 32;
    const uint low = (uint(data_a[ib].ql[64 * n + 32 * (g % 2) + l]) >> (4 * (g / 2))) & 0xFu;
    const uint high = (uint(data_a[ib].qh[32 * n + l]) >> (2 * g)) & 3u;
    const int q = int(low | (high << 4)) - 32;
    return (float(data_a[ib].d) * float(int(data_a[ib].scales[e / 16]))) * float(q);
#endif
}

float a_value(uint i)
{
    return a_block_value(i / QUANT_K, i % QUANT_K);
}

#endif

// ---- Staging one K step ----

// Staging works in quads: 4 consecutive k of one A row or B column per invocation and step,
// loaded together and then stored, so an invocation waits for memory once per quad instead of
// once per element (H100, 4096 x 512 x 4096, f16 accumulators: 1.7x to 2.5x faster on f16,
// q4_0 and q8_0). The quad loops stay loops (except the prefetched ones, whose registers need
// constant indices): unrolled, the H100 spilled and ran 3x slower, the H200 0.86-0.94x on f16,
// and lavapipe's JIT took several times longer. There is no per-element branch: an element outside
// [0, M) x [block_k, end_k) (or the valid columns) is read at a clamped position inside its
// matrix and replaced by 0 with a select, so lavapipe, which runs both sides of a branch its
// lanes disagree on, runs one path. Values are those of a_value / b_value, bit for bit.
const uint QUADS_PER_ROW = BK / 4;   // BK is a multiple of 8 in every host configuration
const uint QUAD_LOADS_A = (BM * QUADS_PER_ROW + BLOCK_SIZE - 1) / BLOCK_SIZE;
const uint QUAD_LOADS_B = (BN * QUADS_PER_ROW + BLOCK_SIZE - 1) / BLOCK_SIZE;

// Staging quad q: its row (A) or column (B) in the tile and its first k in the step. cm1: row
// q / QUADS_PER_ROW. Scalar path (k-major tiles): groups of 8 rows, 8 consecutive quads
// taking 8 consecutive rows, so a warp stores 8 rows x 4 quads (see KPAD); a row's 4 quads
// in a warp still read 4 * 4 consecutive elements of it. BM, BN multiples of 8; quads past
// the tile get a row >= BM (BN) and are skipped as before.
uint stage_quad_row(uint q)
{
#ifdef COOPMAT
    return q / QUADS_PER_ROW;
#else
    return (q / (8 * QUADS_PER_ROW)) * 8 + q % 8;
#endif
}

uint stage_quad_k(uint q)
{
#ifdef COOPMAT
    return (q % QUADS_PER_ROW) * 4;
#else
    return ((q / 8) % QUADS_PER_ROW) * 4;
#endif
}

#ifdef QUAD_FROM_WORD
// A's next K step, prefetched: prefetch_a loads the qs word and scale bits of each of this
// invocation's A quads into registers without using them, before this step's products, and
// stage_tiles decodes them next step, so the loads' latency passes during the products instead
// of between two barriers. H200, q4_0 and q8_0 rows: 1.06-1.19x, 214 registers instead of 199
// (timing copies with no A load at all had run 1.13-1.26x faster, the quants' decode cost only
// 1-3%). Only for the types whose quad is one word and d (and f16, below), so that what
// waits in registers stays small; lavapipe's JIT takes about 5 s longer for each such
// variant's pipelines.
#define A_PREFETCH 1
#if defined(DATA_A_Q4_0) && defined(FLOAT16)
// q4_0 in fp16 mode: one prefetched qs word serves two quads, elements 4w .. 4w + 3 (its low
// nibbles) and 16 + 4w .. 16 + 4w + 3 (its high ones) of one block, so an invocation loads
// and keeps half as many words and scales (8 registers instead of 16 on the large tile, 12
// 16-bit loads a K step instead of 24, half the address arithmetic). Pair t of a row covers
// the quads at c = (t / 4) * 32 + (t % 4) * 4 and c + 16 of the K step: both in one block when
// the step starts on a block boundary (a_pairs_ok); the host's quantized tiles all have
// BK = 32, and other BK take the quad loop (A_PAIRS false folds it at specialization).
#define A_WORD_PAIRS 1
const bool A_PAIRS = BK % 32 == 0;
const uint PAIRS_PER_ROW = BK / 8;
const uint PAIR_LOADS_A = (BM * PAIRS_PER_ROW + BLOCK_SIZE - 1) / BLOCK_SIZE;
uvec2 a_next[PAIR_LOADS_A];   // (qs word, bits of d), pair j at a_next[j]

// The first k in the step of pair t of a row (its second quad is 16 further).
uint pair_k(uint t)
{
    return (t / 4) * 32 + (t % 4) * 4;
}

// Whether the step starting at block_k has every pair inside one block: rows and batches of
// whole blocks (always, for block types) and a step on a block boundary (split_k boundaries
// need not be). Uniform; the same for every step of a tile (BK a multiple of 32).
bool a_pairs_ok(uint block_k)
{
    return ((p.stride_a | p.batch_stride_a | block_k) % QUANT_K) == 0;
}

void prefetch_a(uint a_base, uint row0, uint block_k)
{
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint j = 0; j < PAIR_LOADS_A; ++j) {
        const uint q = tid + j * BLOCK_SIZE;
        const uint t = q % PAIRS_PER_ROW;
        // Clamped into the matrix (a read for a row past M or a pair past K is masked).
        const uint i = a_base + min(row0 + q / PAIRS_PER_ROW, p.M - 1) * p.stride_a
                     + min(block_k + pair_k(t), p.K - 4);
        const uint ib = i / QUANT_K;
        a_next[j] = uvec2(quad_word(ib, (i % QUANT_K) & ~3u), uint(data_a16[ib].d));
    }
}
#else
uvec2 a_next[QUAD_LOADS_A];   // (quad_word, bits of d), quad j at a_next[j]

void prefetch_a(uint a_base, uint row0, uint block_k)
{
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint j = 0; j < QUAD_LOADS_A; ++j) {
        const uint q = tid + j * BLOCK_SIZE;
        // Where a_quad reads quad q: clamped into the matrix, K a multiple of 4 here.
        const uint i = a_base + min(row0 + stage_quad_row(q), p.M - 1) * p.stride_a
                     + min(block_k + stage_quad_k(q), p.K - 4);
        const uint ib = i / QUANT_K;
        a_next[j] = uvec2(quad_word(ib, (i % QUANT_K) & ~3u), uint(data_a16[ib].d));
    }
}
#endif
#endif

// Zero where element k + e is at or past end_k, or the whole quad when `inside` is false.
bvec4 quad_keep(bool inside, uint k, uint end_k)
{
    return bvec4(inside && k < end_k, inside && k + 1 < end_k,
                 inside && k + 2 < end_k, inside && k + 3 < end_k);
}

vec4 mask_quad(vec4 v, bool inside, uint k, uint end_k)
{
    return mix(vec4(0.0), v, quad_keep(inside, k, end_k));
}

// A quad into the staged A tile: row r, k c .. c + 3 (rows past the tile are not stored).
void stage_a_quad(uint r, uint c, vec4 v)
{
    if (r < BM) {
        [[unroll]] for (uint e = 0; e < 4; ++e) {
            buf_a[a_at(r, c + e)] = FLOAT_TYPE(v[e]);
        }
    }
}

#if defined(A_PREFETCH) && defined(FLOAT16) && (defined(DATA_A_Q4_0) || defined(DATA_A_Q8_0))
// fp16 mode, q4_0 and q8_0: a prefetched quad goes straight to the staged float16 values with
// packed half arithmetic, no float32 step and no f32 -> f16 conversion (a reduced-rate
// instruction on NVIDIA; the float path paid 4 of them a quad, plus one for d and 4 FMULs).
// Same bits as FLOAT_TYPE(float(q) * float(d)): the byte b = q + bias (0..255) becomes the
// f16 1024 + b by its bits (0x6400 | b), minus (1024 + bias) gives q exactly (integers below
// 2048 are exact in f16), and q * d in f16 is the exact product rounded once to f16, which is
// what the float path's exact float32 product rounded to f16 gives (both round to nearest
// even; |q| <= 128 and an f16 d leave the float32 product exact).
#define A_HALF_DECODE 1
#if defined(DATA_A_Q8_0)
const float16_t A_HALF_BIAS = float16_t(1024.0 + 128.0);
#else
const float16_t A_HALF_BIAS = float16_t(1024.0 + 8.0);
#endif

f16vec4 a_quad_half(uint w, uint e, uint d_bits)
{
#if defined(DATA_A_Q8_0)
    const uint b = w ^ 0x80808080u;   // signed q -> q + 128 per byte
#else
    const uint b = (e >= 16 ? w >> 4 : w) & 0x0F0F0F0Fu;
#endif
    // Bytes 0, 1 and 2, 3 into the low byte of each 16-bit half, 0x64 above them.
    const uint lo = (b & 0xFFu) | ((b << 8) & 0xFF0000u) | 0x64006400u;
    const uint hi = ((b >> 16) & 0xFFu) | ((b >> 8) & 0xFF0000u) | 0x64006400u;
    const float16_t d = unpackFloat2x16(d_bits).x;
    const f16vec2 q01 = unpackFloat2x16(lo) - f16vec2(A_HALF_BIAS);
    const f16vec2 q23 = unpackFloat2x16(hi) - f16vec2(A_HALF_BIAS);
    return f16vec4(q01 * d, q23 * d);
}
#endif

#if defined(FLOAT16) && (defined(A_HALF_DECODE) || defined(DATA_A_F16))
// mask_quad and stage_a_quad for a quad already in f16 (no float32 round trip).
f16vec4 mask_quad(f16vec4 v, bool inside, uint k, uint end_k)
{
    return mix(f16vec4(0.0), v, quad_keep(inside, k, end_k));
}

void stage_a_quad(uint r, uint c, f16vec4 v)
{
    if (r < BM) {
        [[unroll]] for (uint e = 0; e < 4; ++e) {
            buf_a[a_at(r, c + e)] = v[e];
        }
    }
}
#endif

// Whether every quad of a row starts at a multiple of 4 elements of its buffer (row strides,
// batch strides, K and the split's start all multiples of 4; uniform over the dispatch). Then
// a quad is one aligned vector, and for quantized A lies inside one block. True for quantized
// A (whole blocks, K a multiple of 32, split_k 1, 2 or 4) and for the B of aligned variants
// (the host picks those for K a multiple of 32 and contiguous B); otherwise quads are read an
// element at a time.
bool quads_aligned(uint stride, uint batch_stride)
{
#ifdef MUL_MAT_ID
    const uint k_split = 0;   // one split, from k = 0
#else
    const uint k_split = p.k_split;
#endif
    return ((stride | batch_stride | k_split | p.K) & 3u) == 0;
}

// f16 A and B prefetch (below) in the large tile only (BN = 128, one workgroup an SM at the
// bench shapes, where it pays): the smaller tiles run where M or N is small, were never timed
// with it, and there the code only costs lavapipe's JIT. A spec constant: their pipelines keep
// only the plain quad loops.
const bool prefetch_tile = BN >= 128;

#if defined(DATA_A_F16)
// f16 A's next K step, prefetched as the quantized types' above: each A quad's f16vec4 is
// loaded into registers before this step's products and staged next step. Aligned quads only
// (uniform; otherwise stage_tiles reads them as before). Alone it gained little (H200, f16
// rows: 1.17x at 4096 x 512 x 4096, 0.90x at 14336 x 512 x 4096); with B's prefetch below,
// B's loads no longer wait for the step either, and both matter.
#define A_PREFETCH_F16 1
f16vec4 a_next[QUAD_LOADS_A];

void prefetch_a(uint a_base, uint row0, uint block_k)
{
    if (!prefetch_tile || !quads_aligned(p.stride_a, p.batch_stride_a)) {
        return;
    }
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint j = 0; j < QUAD_LOADS_A; ++j) {
        const uint q = tid + j * BLOCK_SIZE;
        // Where a_quad reads quad q: clamped into the matrix.
        const uint i = a_base + min(row0 + stage_quad_row(q), p.M - 1) * p.stride_a
                     + min(block_k + stage_quad_k(q), p.K - 4);
        a_next[j] = data_a4[i / 4];
    }
}
#endif

// The quad k .. k + 3 of the A row or B column whose element 0 is at `first`, each element
// read at min(k + e, K - 1) (inside the row; elements past end_k are masked by the caller).
// Aligned, a quad is either wholly below K or wholly past it, and is read at min(k, K - 4).
vec4 a_quad(uint first, uint k, bool aligned)
{
    if (aligned) {
        const uint i = first + min(k, p.K - 4);
#if QUANT_K == 1
#if defined(DATA_A_BF16)
        return bf16x4_to_fp32(uvec4(data_a4[i / 4]));
#else
        return vec4(data_a4[i / 4]);
#endif
#else
        // One block, and one 4-aligned group in it: `& ~3u` (a no-op, i is a multiple of 4)
        // lets the compiler see that, and read the block's scales once for the four elements.
        const uint ib = i / QUANT_K;
        const uint e = (i % QUANT_K) & ~3u;
#ifdef A_QUAD_WORDS
        // The same values as a_block_value: q * d exact, then "+ m" rounded once (fma).
        const vec2 dm = block_dm(ib);
        const vec4 q = quad_quants(ib, e);
        return BLOCK_HAS_MIN != 0 ? fma(q, vec4(dm.x), vec4(dm.y)) : q * dm.x;
#else
        return vec4(a_block_value(ib, e), a_block_value(ib, e + 1), a_block_value(ib, e + 2),
                    a_block_value(ib, e + 3));
#endif
#endif
    }
    const uint last = p.K - 1;
    return vec4(a_value(first + min(k, last)), a_value(first + min(k + 1, last)),
                a_value(first + min(k + 2, last)), a_value(first + min(k + 3, last)));
}

vec4 b_quad(uint first, uint k, bool aligned)
{
#if LOAD_VEC_B >= 4
    if (aligned) {
        const uint i = first + min(k, p.K - 4);
#if LOAD_VEC_B == 8
        return b_vec4(i);
#elif defined(B_IS_FLOAT)
        return bf16x4_to_fp32(uvec4(data_b[i / 4]));
#else
        return vec4(data_b[i / 4]);
#endif
    }
#endif
    const uint last = p.K - 1;
    return vec4(b_value(first + min(k, last)), b_value(first + min(k + 1, last)),
                b_value(first + min(k + 2, last)), b_value(first + min(k + 3, last)));
}

// Where stage_tiles reads B column `at` (< n_cols) of the tile: its element 0.
uint b_first(uint b_base, uint at)
{
#ifdef MUL_MAT_ID
    const uint packed = row_ids[at];
    return (packed >> 16) * p.batch_stride_b + ((packed & 0xFFFFu) % p.ne11) * p.stride_b;
#else
    return b_base + at * p.stride_b;
#endif
}

#if LOAD_VEC_B >= 4 && !defined(B_IS_FLOAT)
// B's next K step, prefetched like A's: each B quad as 4 floats in registers, loaded before
// this step's products and staged next step. A quad is read through a 4-wide view of B so
// that nothing waits on the load until it is staged (the 8-wide B_TYPE would load both halves
// and pick one). Aligned quads only (uniform; stage_tiles reads unaligned B element by
// element). The large tile at 4096 x 512 has 128 workgroups, one per SM, so nothing else ran while a
// step's loads came in. With A's prefetch, against the tree without either (H200): f16 rows
// 2.05 / 1.13 / 2.15x, q4_0 1.93 / 1.19x; 164 registers on f16 (112 before), 253 on q8_0.
#define B_PREFETCH 1
layout(binding = 1) readonly buffer B4F { vec4 data_b4f[]; };
layout(binding = 1) readonly buffer B4H { f16vec4 data_b4h[]; };
bool b_is_half(vec4 v) { return false; }
bool b_is_half(mat2x4 v) { return false; }
bool b_is_half(f16vec4 v) { return true; }
bool b_is_half(f16mat2x4 v) { return true; }
vec4 b_next[QUAD_LOADS_B];

void prefetch_b(uint b_base, uint col0, uint n_cols, uint block_k)
{
    if (!prefetch_tile || !quads_aligned(p.stride_b, p.batch_stride_b)) {
        return;
    }
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint j = 0; j < QUAD_LOADS_B; ++j) {
        const uint q = tid + j * BLOCK_SIZE;
        const uint i = b_first(b_base, min(col0 + stage_quad_row(q), n_cols - 1))
                     + min(block_k + stage_quad_k(q), p.K - 4);
        if (b_is_half(B_TYPE(0))) {
            b_next[j] = vec4(data_b4h[i / 4]);
        } else {
            b_next[j] = data_b4f[i / 4];
        }
    }
}
#endif

// A quad of B column col0 + r (k = block_k + c .. + 3) into the staged B tile, zero past end_k
// or n_cols (columns past the tile are not stored).
void stage_b_quad(uint r, uint c, uint col0, uint block_k, uint end_k, uint n_cols, vec4 b)
{
    const uint k = block_k + c;
    const vec4 v = mask_quad(b, col0 + r < n_cols, k, end_k);
    if (r < BN) {
        [[unroll]] for (uint e = 0; e < 4; ++e) {
            buf_b[b_at(r, c + e)] = FLOAT_TYPE(v[e]);
        }
    }
}

// Loads the K step at block_k into registers for stage_tiles' next call, for the types that
// prefetch (nothing otherwise).
void prefetch(uint a_base, uint row0, uint b_base, uint col0, uint n_cols, uint block_k)
{
#if defined(A_PREFETCH) || defined(A_PREFETCH_F16)
    prefetch_a(a_base, row0, block_k);
#endif
#ifdef B_PREFETCH
    prefetch_b(b_base, col0, n_cols, block_k);
#endif
}

// Stages A rows row0 .. row0 + BM - 1 and the BN columns from col0 for k in
// [block_k, block_k + BK) into buf_a / buf_b, zero outside [0, M) x [block_k, end_k) and the
// valid columns (n_cols >= 1).
void stage_tiles(uint a_base, uint row0, uint col0, uint block_k, uint end_k,
                 uint b_base, uint n_cols)
{
    const uint tid = gl_LocalInvocationID.x;
#if QUANT_K == 1
    const bool a_aligned = quads_aligned(p.stride_a, p.batch_stride_a);
#else
    // Always true for block types: strides count whole blocks, K and the splits are multiples
    // of 4. Said as a constant, lavapipe's JIT drops the element-wise path (about a quarter
    // of these pipelines' compile time).
    const bool a_aligned = true;
#endif
    const bool b_aligned = quads_aligned(p.stride_b, p.batch_stride_b);

#ifdef A_WORD_PAIRS
    const bool pairs_ok = a_pairs_ok(block_k);
    [[unroll]] for (uint j = 0; j < PAIR_LOADS_A && A_PAIRS; ++j) {
        const uint q = tid + j * BLOCK_SIZE;
        const uint r = q / PAIRS_PER_ROW;
        const uint t = q % PAIRS_PER_ROW;
        const uint c = pair_k(t);   // and c + 16
        const uint m = row0 + r;
        const uint k = block_k + c;
        f16vec4 lo;
        f16vec4 hi;
        if (pairs_ok) {
            // Elements 4 (t % 4) and 16 + 4 (t % 4) of one block: the word's two nibbles.
            lo = a_quad_half(a_next[j].x, 0, a_next[j].y);
            hi = a_quad_half(a_next[j].x, 16, a_next[j].y);
        } else {
            const uint first = a_base + min(m, p.M - 1) * p.stride_a;
            lo = f16vec4(a_quad(first, k, true));
            hi = f16vec4(a_quad(first, k + 16, true));
        }
        stage_a_quad(r, c, mask_quad(lo, m < p.M, k, end_k));
        stage_a_quad(r, c + 16, mask_quad(hi, m < p.M, k + 16, end_k));
    }
    // Other BK (no host tile): the quads one by one, loaded here.
    for (uint j = 0; j < QUAD_LOADS_A && !A_PAIRS; ++j) {
        const uint q = tid + j * BLOCK_SIZE;
        const uint r = stage_quad_row(q);
        const uint c = stage_quad_k(q);
        const uint m = row0 + r;
        const uint k = block_k + c;
        stage_a_quad(r, c, mask_quad(a_quad(a_base + min(m, p.M - 1) * p.stride_a, k, a_aligned),
                                     m < p.M, k, end_k));
    }
#else
#ifdef A_PREFETCH_F16
    // Aligned f16 A: the quads prefetch_a loaded. Unaligned: the quad loop below reads them,
    // kept a loop rather than copied into each unrolled step (for lavapipe's JIT time, as B's).
    if (prefetch_tile && a_aligned) {
        [[unroll]] for (uint j = 0; j < QUAD_LOADS_A; ++j) {   // constant indices: registers
            const uint q = tid + j * BLOCK_SIZE;
            const uint r = stage_quad_row(q);
            const uint c = stage_quad_k(q);
#ifdef FLOAT16
            const f16vec4 a = a_next[j];
#else
            const vec4 a = vec4(a_next[j]);
#endif
            stage_a_quad(r, c, mask_quad(a, row0 + r < p.M, block_k + c, end_k));
        }
    } else
#endif
    {
#ifdef A_PREFETCH
    [[unroll]]   // a_next is indexed by j: registers only with constant indices
#endif
    for (uint j = 0; j < QUAD_LOADS_A; ++j) {
        const uint q = tid + j * BLOCK_SIZE;
        const uint r = stage_quad_row(q);
        const uint c = stage_quad_k(q);
        const uint m = row0 + r;
        const uint k = block_k + c;
        const uint first = a_base + min(m, p.M - 1) * p.stride_a;
#ifdef A_HALF_DECODE
        // a_quad's value rounded to FLOAT_TYPE, from prefetch_a's word and d (see
        // a_quad_half; the unaligned branch keeps any other layout right).
        f16vec4 a;
        if (a_aligned) {
            const uint e = ((first + min(k, p.K - 4)) % QUANT_K) & ~3u;
            a = a_quad_half(a_next[j].x, e, a_next[j].y);
        } else {
            a = f16vec4(a_quad(first, k, false));
        }
        const f16vec4 v = mask_quad(a, m < p.M, k, end_k);
#elif defined(A_PREFETCH)
        // The value a_quad gives, from the word and d that prefetch_a loaded (always aligned
        // for block types; the test keeps any other layout right).
        vec4 a;
        if (a_aligned) {
            const uint e = ((first + min(k, p.K - 4)) % QUANT_K) & ~3u;
            a = quad_from_word(a_next[j].x, e) * unpackHalf2x16(a_next[j].y).x;
        } else {
            a = a_quad(first, k, false);
        }
        const vec4 v = mask_quad(a, m < p.M, k, end_k);
#else
        const vec4 a = a_quad(first, k, a_aligned);
        const vec4 v = mask_quad(a, m < p.M, k, end_k);
#endif
        stage_a_quad(r, c, v);
    }
    }
#endif
#ifdef B_PREFETCH
    // Large tile (prefetch_tile), aligned B: the quads prefetch_b loaded; unaligned B (a batch
    // stride that is not a multiple of 4, say): element by element in a plain loop, as
    // lavapipe's JIT time grows faster than the code (with the quad loop here as well as the
    // unrolled one, the aligned pipelines of 8 matmul families took 10 s longer to compile, of
    // 45; with this loop, 4). Smaller tiles: the quad loop below.
    if (prefetch_tile && b_aligned) {
        [[unroll]] for (uint j = 0; j < QUAD_LOADS_B; ++j) {   // constant indices: registers
            const uint q = tid + j * BLOCK_SIZE;
            stage_b_quad(stage_quad_row(q), stage_quad_k(q), col0, block_k, end_k, n_cols, b_next[j]);
        }
    } else if (prefetch_tile) {
        for (uint e = tid; e < BN * BK; e += BLOCK_SIZE) {
            const uint r = e / BK;
            const uint c = e % BK;
            const uint col = col0 + r;
            const uint k = block_k + c;
            const float v = b_value(b_first(b_base, min(col, n_cols - 1)) + min(k, p.K - 1));
            buf_b[b_at(r, c)] = FLOAT_TYPE(col < n_cols && k < end_k ? v : 0.0);
        }
    } else
#endif
    for (uint j = 0; j < QUAD_LOADS_B; ++j) {
        const uint q = tid + j * BLOCK_SIZE;
        const uint r = stage_quad_row(q);
        const uint c = stage_quad_k(q);
        const vec4 b = b_quad(b_first(b_base, min(col0 + r, n_cols - 1)), block_k + c, b_aligned);
        stage_b_quad(r, c, col0, block_k, end_k, n_cols, b);
    }
}

// Writes one result: D(m, col) of the MUL_MAT batch at d_base, or of the (slot, token) pair
// row_ids[col] (MUL_MAT_ID). The caller checks m < M and col < n_cols.
void store_d(uint d_base, uint m, uint col, ACC_TYPE value)
{
#ifdef MUL_MAT_ID
    const uint packed = row_ids[col];
    const uint ii0 = packed & 0xFFFFu;
    const uint ii1 = packed >> 16;
    data_d[ii1 * p.batch_stride_d + ii0 * p.stride_d + m] = D_TYPE(value);
#else
    data_d[d_base + col * p.stride_d + m] = D_TYPE(value);
#endif
}

// ---- One output tile ----

#ifdef COOPMAT
// cm1: accumulator matrices per warp tile, along M and N.
const uint CMS_M = WM / TM;
const uint CMS_N = WN / TN;
const uint CMS = CMS_M * CMS_N;

// Each warp's TM x TN staging slice for the bounds-checked store.
shared ACC_TYPE coopmat_stage[TM * TN * NUM_WARPS];
#else
// Register block r of this invocation: its row and column inside the BM x BN tile.
// r = ((t * OWN_WNITER + w) * WMITER + wsir) * TM * TN + cc * TM + cr, column block
// wsic = part * OWN_WNITER + w.
uint tile_row(uint warp_tile, uint tiwr, uint wsir, uint cr)
{
    return (warp_tile % (BM / WM)) * WM + wsir * WSUBM + tiwr * TM + cr;
}

uint tile_col(uint warp_tile, uint tiwc, uint wsic, uint cc)
{
    return (warp_tile / (BM / WM)) * WN + wsic * WSUBN + tiwc * TN + cc;
}
#endif

// Accumulates the tile whose first row is row0 and whose columns are col0 .. col0 + BN - 1
// over k in [start_k, end_k), then stores it. Must be reached by the whole workgroup.
void compute_tile(uint a_base, uint row0, uint col0, uint start_k, uint end_k,
                  uint b_base, uint d_base, uint n_cols)
{
#ifdef COOPMAT
    // A warp is a subgroup (full subgroups of WARP invocations).
    const uint warp_i = gl_SubgroupID;
    const uint lane = gl_SubgroupInvocationID;

    coopmat<ACC_TYPE, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator> sums[TILES_PER_WARP * CMS];
    [[unroll]] for (uint s = 0; s < TILES_PER_WARP * CMS; ++s) {
        sums[s] = coopmat<ACC_TYPE, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator>(0.0);
    }
#else
    const uint tid = gl_LocalInvocationID.x;
    const uint warp_i = tid / WARP;
    const uint tiw = tid % WARP;
    const uint tiwr = tiw % THREAD_ROWS;
    const uint tiwc = tiw / THREAD_ROWS;
    const bool computes = warp_i < NUM_WARPS && tiwc < THREAD_COLS;
    const uint tile0 = warp_i / WARPS_PER_TILE;   // this warp's first warp tile
    const uint part = warp_i % WARPS_PER_TILE;    // and its share of the column blocks

    ACC_TYPE sums[TILES_PER_WARP * SUMS_PER_TILE];
    [[unroll]] for (uint s = 0; s < TILES_PER_WARP * SUMS_PER_TILE; ++s) {
        sums[s] = ACC_TYPE(0.0);
    }
#endif

    if (start_k < end_k) {
        prefetch(a_base, row0, b_base, col0, n_cols, start_k);
    }
    for (uint block_k = start_k; block_k < end_k; block_k += BK) {
        stage_tiles(a_base, row0, col0, block_k, end_k, b_base, n_cols);
        barrier();
        if (block_k + BK < end_k) {
            prefetch(a_base, row0, b_base, col0, n_cols, block_k + BK);
        }

#ifdef COOPMAT
        [[unroll]] for (uint t = 0; t < TILES_PER_WARP; ++t) {
            const uint wt = warp_i + t * NUM_WARPS;
            // Uniform in the subgroup (wt depends on the warp only).
            if (wt < WARP_TILES) {
                const uint r0 = (wt % (BM / WM)) * WM;
                const uint c0 = (wt / (BM / WM)) * WN;
                // TK-deep steps in K order; steps past end_k would only add staged zeros.
                for (uint kk = 0; kk < BK && block_k + kk < end_k; kk += TK) {
                    [[unroll]] for (uint cm = 0; cm < CMS_M; ++cm) {
                        coopmat<FLOAT_TYPE, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA> mat_a;
                        coopMatLoad(mat_a, buf_a, (r0 + cm * TM) * SHMEM_STRIDE + kk, SHMEM_STRIDE,
                                    gl_CooperativeMatrixLayoutRowMajor);
                        [[unroll]] for (uint cn = 0; cn < CMS_N; ++cn) {
                            coopmat<FLOAT_TYPE, gl_ScopeSubgroup, TK, TN, gl_MatrixUseB> mat_b;
                            coopMatLoad(mat_b, buf_b, (c0 + cn * TN) * SHMEM_STRIDE + kk, SHMEM_STRIDE,
                                        gl_CooperativeMatrixLayoutColumnMajor);
                            const uint s = t * CMS + cn * CMS_M + cm;
                            sums[s] = coopMatMulAdd(mat_a, mat_b, sums[s]);
                        }
                    }
                }
            }
        }
#else
        // k = block_k + i for i ascending: the order src/model/tolerance.rs assumes. Every step of
        // the tile runs, also past end_k: both operands are staged zeros there and
        // fma(0, 0, s) == s (up to the sign of a zero sum), and a constant trip count lets the
        // compiler unroll the loop.
        if (computes) {
            for (uint i0 = 0; i0 < BK; i0 += LOOP_CHUNK) {
                [[unroll]] for (uint ii = 0; ii < LOOP_CHUNK; ++ii) {
                    const uint i = i0 + ii;
                    [[unroll]] for (uint t = 0; t < TILES_PER_WARP; ++t) {
                        const uint wt = tile0 + t * TILE_STRIDE;
                        if ((t == 0 && FOLD_FIRST_TILE_TEST) || wt < WARP_TILES) {
                            FLOAT_TYPE cache_a[A_CACHE];
                            FLOAT_TYPE cache_b[B_CACHE];
                            [[unroll]] for (uint wsir = 0; wsir < WMITER; ++wsir) {
                                [[unroll]] for (uint cr = 0; cr < TM; ++cr) {
                                    cache_a[wsir * TM + cr] = buf_a[a_at(tile_row(wt, tiwr, wsir, cr), i)];
                                }
                            }
                            [[unroll]] for (uint w = 0; w < OWN_WNITER; ++w) {
                                const uint wsic = part * OWN_WNITER + w;
                                [[unroll]] for (uint cc = 0; cc < TN; ++cc) {
                                    cache_b[w * TN + cc] = buf_b[b_at(tile_col(wt, tiwc, wsic, cc), i)];
                                }
                            }
                            [[unroll]] for (uint w = 0; w < OWN_WNITER; ++w) {
                                [[unroll]] for (uint wsir = 0; wsir < WMITER; ++wsir) {
                                    [[unroll]] for (uint cc = 0; cc < TN; ++cc) {
                                        [[unroll]] for (uint cr = 0; cr < TM; ++cr) {
                                            const uint s = t * SUMS_PER_TILE
                                                         + ((w * WMITER + wsir) * TN + cc) * TM + cr;
                                            sums[s] = fma(ACC_TYPE(cache_a[wsir * TM + cr]),
                                                          ACC_TYPE(cache_b[w * TN + cc]), sums[s]);
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
#endif
        barrier();
    }

#ifdef COOPMAT
    // Store through this warp's staging slice: element (r, c) of an accumulator at
    // c * TM + r; only rows < M and valid columns reach D.
    const uint slice = warp_i * TM * TN;
    [[unroll]] for (uint t = 0; t < TILES_PER_WARP; ++t) {
        const uint wt = warp_i + t * NUM_WARPS;
        if (wt < WARP_TILES) {
            const uint r0 = row0 + (wt % (BM / WM)) * WM;
            const uint c0 = col0 + (wt / (BM / WM)) * WN;
            [[unroll]] for (uint cn = 0; cn < CMS_N; ++cn) {
                [[unroll]] for (uint cm = 0; cm < CMS_M; ++cm) {
                    coopMatStore(sums[t * CMS + cn * CMS_M + cm], coopmat_stage, slice, TM,
                                 gl_CooperativeMatrixLayoutColumnMajor);
                    subgroupMemoryBarrierShared();
                    subgroupBarrier();
                    for (uint e = lane; e < TM * TN; e += WARP) {
                        const uint cm1_row = r0 + cm * TM + e % TM;
                        const uint cm1_col = c0 + cn * TN + e / TM;
                        if (cm1_row < p.M && cm1_col < n_cols) {
                            store_d(d_base, cm1_row, cm1_col, coopmat_stage[slice + e]);
                        }
                    }
                    // The slice is overwritten by the next accumulator.
                    subgroupBarrier();
                }
            }
        }
    }
#else
    // Store the owned outputs that lie inside M and the valid columns.
    [[unroll]] for (uint t = 0; t < TILES_PER_WARP; ++t) {
        const uint wt = tile0 + t * TILE_STRIDE;
        if (computes && wt < WARP_TILES) {
            [[unroll]] for (uint w = 0; w < OWN_WNITER; ++w) {
                [[unroll]] for (uint wsir = 0; wsir < WMITER; ++wsir) {
                    [[unroll]] for (uint cc = 0; cc < TN; ++cc) {
                        [[unroll]] for (uint cr = 0; cr < TM; ++cr) {
                            const uint m = row0 + tile_row(wt, tiwr, wsir, cr);
                            const uint col = col0 + tile_col(wt, tiwc, part * OWN_WNITER + w, cc);
                            const uint s = t * SUMS_PER_TILE + ((w * WMITER + wsir) * TN + cc) * TM + cr;
                            if (m < p.M && col < n_cols) {
                                store_d(d_base, m, col, sums[s]);
                            }
                        }
                    }
                }
            }
        }
    }
#endif
}

#ifdef MUL_MAT_ID
// Gathers the (slot, token) pairs routed to `expert`, token-major, into row_ids and returns
// how many there are (capped at ROW_IDS). Each invocation scans a contiguous share of the
// nei0 * nei1 ids; an exclusive prefix of the per-invocation counts places its matches.
uint gather_matches(uint expert)
{
    const uint tid = gl_LocalInvocationID.x;
    const uint total = p.nei0 * p.nei1;
    const uint share = (total + BLOCK_SIZE - 1) / BLOCK_SIZE;
    const uint first = min(tid * share, total);
    const uint last = min(first + share, total);
    uint count = 0;
    for (uint e = first; e < last; ++e) {
        if (data_ids[(e / p.nei0) * p.nbi1 + e % p.nei0] == int(expert)) {
            ++count;
        }
    }
    match_counts[tid] = count;
    barrier();
    if (tid == 0) {
        uint running = 0;
        for (uint t = 0; t < BLOCK_SIZE; ++t) {
            const uint c = match_counts[t];
            match_counts[t] = running;
            running += c;
        }
        match_counts[BLOCK_SIZE] = running;
    }
    barrier();
    uint at = match_counts[tid];
    for (uint e = first; e < last; ++e) {
        const uint ii1 = e / p.nei0;
        const uint ii0 = e % p.nei0;
        if (data_ids[ii1 * p.nbi1 + ii0] == int(expert)) {
            if (at < ROW_IDS) {
                row_ids[at] = ii0 | (ii1 << 16);
            }
            ++at;
        }
    }
    barrier();
    return min(match_counts[BLOCK_SIZE], ROW_IDS);
}
#endif

void main()
{
#ifdef NEEDS_INIT_IQ_SHMEM
    init_iq_shmem(gl_WorkGroupSize);
#endif
    const uint blocks_m = (p.M + BM - 1) / BM;
    const uint ir = gl_WorkGroupID.x % blocks_m;
    const uint row0 = ir * BM;
#ifdef MUL_MAT_ID
    const uint expert = gl_WorkGroupID.z;
    const uint matches = gather_matches(expert);
    const uint a_base = expert * p.batch_stride_a;
    // Column tiles ic, ic + NumWorkGroups.y, ...: duplicate ids can give an expert more
    // matches than the dispatch has columns. The bound is uniform over the workgroup.
    for (uint tile = gl_WorkGroupID.y; tile * BN < matches; tile += gl_NumWorkGroups.y) {
        compute_tile(a_base, row0, tile * BN, 0, p.K, 0, 0, matches);
    }
#else
    const uint ik = gl_WorkGroupID.x / blocks_m;
    const uint batch = gl_WorkGroupID.z;
    const uint i13 = batch / p.ne12;
    const uint i12 = batch % p.ne12;
    const uint batch_a = (i13 / p.broadcast3) * p.ne02 + i12 / p.broadcast2;
    const uint start_k = min(ik * p.k_split, p.K);
    const uint end_k = min(p.K, start_k + p.k_split);
    const uint d_base = batch * p.batch_stride_d + ik * p.batch_stride_d * gl_NumWorkGroups.z;
    compute_tile(batch_a * p.batch_stride_a, row0, gl_WorkGroupID.y * BN, start_k, end_k,
                 batch * p.batch_stride_b, d_base, p.N);
#endif
}
