// types.comp: element types and ggml block layouts shared by every kernel.
//
// Select the A operand with the define DATA_A_<T>=1, T in F32, F16, BF16, Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S,
// IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS. That defines
//   A_TYPE   element type of the A buffer (float, float16_t, uint16_t for raw bf16 bits,
//            or the block struct),
//   QUANT_K  elements per block (1 for the float types),
//   QUANT_R  2 when byte j of qs holds elements j (low nibble) and j + QUANT_K/2 (high
//            nibble), 1 otherwise; left undefined for the K-quants (as upstream), whose
//            per-type mat-vec files decode their own layouts.
// Every block struct is declared whatever DATA_A says, so kernels that read several
// quantized operands (flash attention K/V) can name them. Each struct is std430 with
// 8/16-bit members and is byte-identical to its ggml-common.h block (size = array stride).
// To add a type: declare its struct below, then add a DATA_A_<T> branch at the end.

#ifndef VKDIFF_TYPES_COMP
#define VKDIFF_TYPES_COMP

#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_control_flow_attributes : enable

// bf16 is the upper half of a binary32, so widening is a shift (exact).
float bf16_to_fp32(uint bits)
{
    return uintBitsToFloat(bits << 16);
}

vec4 bf16x4_to_fp32(uvec4 bits)
{
    return uintBitsToFloat(bits << 16);
}

// x < 2^23 as a float without an int-to-float conversion (a quarter-rate instruction on
// NVIDIA): 2^23 + x is exact and its bits are 0x4B000000 | x; subtracting 2^23 is exact.
// Quant decoders fold a constant offset into the same subtraction.
const uint EXP23_BITS = 0x4B000000u;
float small_uint_to_float(uint x)
{
    return uintBitsToFloat(x | EXP23_BITS) - 8388608.0;
}

// The four bytes of w (byte 0 first) as floats, minus bias (exact for integer bias <= 255):
// small_uint_to_float on each, with the bias in the same subtraction.
vec4 bytes_minus(uint w, float bias)
{
    const uvec4 fields = (uvec4(w) >> uvec4(0, 8, 16, 24)) & 0xFFu;
    return uintBitsToFloat(fields | EXP23_BITS) - (8388608.0 + bias);
}

// ---- Legacy 32-element blocks (all have 2-byte alignment except q5_1) ----

#define QK4_0 32
struct block_q4_0 {           // 18 bytes
    float16_t d;              // @0
    uint8_t qs[QK4_0 / 2];    // @2: element j in the low nibble, j + 16 in the high one
};

#define QK4_1 32
struct block_q4_1 {           // 20 bytes
    float16_t d;              // @0
    float16_t m;              // @2
    uint8_t qs[QK4_1 / 2];    // @4
};

#define QK5_0 32
struct block_q5_0 {           // 22 bytes
    float16_t d;              // @0
    uint16_t qh[2];           // @2: bit e of (qh[1] << 16 | qh[0]) is bit 4 of element e;
                              //     16-bit halves because offset 2 is not 4-byte aligned
    uint8_t qs[QK5_0 / 2];    // @6
};

#define QK5_1 32
struct block_q5_1 {           // 24 bytes, 4-byte aligned
    float16_t d;              // @0
    float16_t m;              // @2
    uint qh;                  // @4: bit e is bit 4 of element e
    uint8_t qs[QK5_1 / 2];    // @8
};

#define QK8_0 32
struct block_q8_0 {           // 34 bytes
    float16_t d;              // @0
    int8_t qs[QK8_0];         // @2
};

// ---- K-quants: 256-element super-blocks (docs/interface.md §2.4) ----
// Element e (0 <= e < 256): n = e / 128, g = (e % 128) / 32, l = e % 32, 32-element
// sub-block sb = e / 32, 16-element group grp = e / 16.

#define QK_K 256

struct block_q2_K {           // 84 bytes, 4-byte aligned (f16vec2)
    uint8_t scales[QK_K / 16];  // @0: per grp, scale in the low nibble, min in the high one
    uint8_t qs[QK_K / 4];       // @16: q of e = bits 2g.. of qs[32n + l]
    f16vec2 d;                  // @80: .x = d (scales), .y = dmin (mins)
};

struct block_q3_K {           // 110 bytes
    uint8_t hmask[QK_K / 8];    // @0: high bit of e = bit 4n + g of hmask[l]
    uint8_t qs[QK_K / 4];       // @32: low 2 bits of e = bits 2g.. of qs[32n + l]
    uint8_t scales[12];         // @96: sixteen 6-bit scales (low nibbles in bytes 0..7,
                                //      high bit pairs in bytes 8..11)
    float16_t d;                // @108
};

struct block_q4_K {           // 144 bytes, 4-byte aligned (f16vec2)
    f16vec2 d;                  // @0: .x = d, .y = dmin
    uint8_t scales[12];         // @4: eight 6-bit scales and eight 6-bit mins
    uint8_t qs[QK_K / 2];       // @16: q of e = nibble (sb odd: high) of qs[32 (e / 64) + l]
};

struct block_q5_K {           // 176 bytes, 4-byte aligned (f16vec2)
    f16vec2 d;                  // @0: .x = d, .y = dmin
    uint8_t scales[12];         // @4: as q4_K
    uint8_t qh[QK_K / 8];       // @16: bit 4 of q of e = bit sb of qh[l]
    uint8_t qs[QK_K / 2];       // @48: low 4 bits, as q4_K
};

struct block_q6_K {           // 210 bytes
    uint8_t ql[QK_K / 2];       // @0: low 4 bits of e = nibble g / 2 of ql[64n + 32 (g % 2) + l]
    uint8_t qh[QK_K / 4];       // @128: high 2 bits of e = bits 2g.. of qh[32n + l]
    int8_t scales[QK_K / 16];   // @192: one signed scale per grp
    float16_t d;                // @208
};

// ---- Non-linear 4-bit blocks (docs/interface.md §2.3 and §2.5) ----

#define QK4_NL 32
struct block_iq4_nl {         // 18 bytes
    float16_t d;              // @0
    uint8_t qs[QK4_NL / 2];   // @2: table indices, element j low nibble, j + 16 high
};

struct block_iq4_xs {         // 136 bytes
    float16_t d;              // @0
    uint16_t scales_h;        // @2: bits 2 ib.. = high 2 bits of sub-block ib's scale
    uint8_t scales_l[QK_K / 64];  // @4: low 4 bits, sub-block ib in nibble ib % 2 of byte ib / 2
    uint8_t qs[QK_K / 2];     // @8: 16 bytes per 32-element sub-block, as iq4_nl's qs
};

// ---- Lattice i-quants: 256-element super-blocks (docs/interface.md §2.5) ----
// Element e: sub-block ib = e / 32, group l = (e % 32) / 8 of 8 elements, j = e % 8.
// Decoding: iq_decode.comp.

struct block_iq1_s {          // 50 bytes
    float16_t d;              // @0
    uint8_t qs[QK_K / 8];     // @2: low 8 bits of the grid index of group l of ib: qs[4 ib + l]
    uint16_t qh[QK_K / 32];   // @34: per ib: index bits 8..10 of group l at bits 3l.., 3-bit
                              //      scale at bits 12..14, delta sign at bit 15
};

struct block_iq1_m {          // 56 bytes, no d field
    uint8_t qs[QK_K / 8];     // @0: as iq1_s
    uint8_t qh[QK_K / 16];    // @32: byte 2 ib + l / 2: index bits 8..10 of group l in the
                              //      nibble l % 2 (bits 0..2), its delta sign at bit 3
    uint16_t scales[QK_K / 64];  // @48: 3-bit scales (4 per word: ib % 2 selects bits 0..5
                              //      or 6..11, l / 2 the 3-bit half); the f16 d in the top
                              //      nibbles (word i = bits 4i..4i+3 of d)
};

struct block_iq2_xxs {        // 66 bytes
    float16_t d;              // @0
    uint16_t qs[QK_K / 8];    // @2: per ib, 8 bytes: grid indices of groups 0..3, then a
                              //      u32 of four 7-bit sign indices and a 4-bit scale (28..31)
};

struct block_iq2_xs {         // 74 bytes
    float16_t d;              // @0
    uint16_t qs[QK_K / 8];    // @2: qs[4 ib + l] = 9-bit grid index | 7-bit sign index << 9
    uint8_t scales[QK_K / 32];  // @66: per ib, groups 0-1 low nibble, 2-3 high nibble
};

struct block_iq2_s {          // 82 bytes
    float16_t d;              // @0
    uint8_t qs[QK_K / 4];     // @2: bytes 0..31 low 8 index bits (4 ib + l), 32..63 sign bytes
    uint8_t qh[QK_K / 32];    // @66: index bits 8..9 of group l at bits 2l.. of qh[ib]
    uint8_t scales[QK_K / 32];  // @74: as iq2_xs
};

struct block_iq3_xxs {        // 98 bytes
    float16_t d;              // @0
    uint8_t qs[3 * QK_K / 8]; // @2: bytes 0..63 grid indices (one per 4 elements: 8 ib + k),
                              //      64..95 per ib a u32 of 4 sign indices + scale, as iq2_xxs
};

struct block_iq3_s {          // 110 bytes
    float16_t d;              // @0
    uint8_t qs[QK_K / 4];     // @2: low 8 bits of the grid index of elements 4k.. of ib: 8 ib + k
    uint8_t qh[QK_K / 32];    // @66: bit k of qh[ib] = index bit 8 of qs[8 ib + k]
    uint8_t signs[QK_K / 8];  // @74: one sign byte per group: 4 ib + l
    uint8_t scales[QK_K / 64];  // @106: 4-bit scale of ib in nibble ib % 2 of byte ib / 2
};

// kvalues_iq4nl of ggml-common.h: the value of each 4-bit index. Upstream copies it into
// shared memory (init_iq_shmem); the mat-vec body does too (dequant_funcs.comp: its lookups
// are the hot loop), the other kernels read this constant array (no barrier at kernel entry;
// the lattice i-quants' larger tables do go to shared memory, below). Every entry is exact in
// float and float16_t.
const float kvalues_iq4nl[16] = float[16](
    -127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0,
    1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);

// Block lengths by type name: upstream's generator passes BLOCK_SIZE=QUANT_K_<T> to the
// flash-attention variants (the K/V block length, not a workgroup size).
#define QUANT_K_Q4_0 QK4_0
#define QUANT_K_Q4_1 QK4_1
#define QUANT_K_Q5_0 QK5_0
#define QUANT_K_Q5_1 QK5_1
#define QUANT_K_Q8_0 QK8_0
#define QUANT_K_Q2_K QK_K
#define QUANT_K_Q3_K QK_K
#define QUANT_K_Q4_K QK_K
#define QUANT_K_Q5_K QK_K
#define QUANT_K_Q6_K QK_K
#define QUANT_K_IQ1_S QK_K
#define QUANT_K_IQ1_M QK_K
#define QUANT_K_IQ2_XXS QK_K
#define QUANT_K_IQ2_XS QK_K
#define QUANT_K_IQ2_S QK_K
#define QUANT_K_IQ3_XXS QK_K
#define QUANT_K_IQ3_S QK_K
#define QUANT_K_IQ4_NL QK4_NL
#define QUANT_K_IQ4_XS QK_K

// ---- A operand selection ----

#if defined(DATA_A_F32)
#define A_TYPE float
#define QUANT_K 1
#define QUANT_R 1
#elif defined(DATA_A_F16)
#define A_TYPE float16_t
#define QUANT_K 1
#define QUANT_R 1
#elif defined(DATA_A_BF16)
#define A_TYPE uint16_t
#define QUANT_K 1
#define QUANT_R 1
#elif defined(DATA_A_Q4_0)
#define A_TYPE block_q4_0
#define QUANT_K QK4_0
#define QUANT_R 2
#elif defined(DATA_A_Q4_1)
#define A_TYPE block_q4_1
#define QUANT_K QK4_1
#define QUANT_R 2
#elif defined(DATA_A_Q5_0)
#define A_TYPE block_q5_0
#define QUANT_K QK5_0
#define QUANT_R 2
#elif defined(DATA_A_Q5_1)
#define A_TYPE block_q5_1
#define QUANT_K QK5_1
#define QUANT_R 2
#elif defined(DATA_A_Q8_0)
#define A_TYPE block_q8_0
#define QUANT_K QK8_0
#define QUANT_R 1
#elif defined(DATA_A_Q2_K)
#define A_TYPE block_q2_K
#define QUANT_K QK_K
#elif defined(DATA_A_Q3_K)
#define A_TYPE block_q3_K
#define QUANT_K QK_K
#elif defined(DATA_A_Q4_K)
#define A_TYPE block_q4_K
#define QUANT_K QK_K
#elif defined(DATA_A_Q5_K)
#define A_TYPE block_q5_K
#define QUANT_K QK_K
#elif defined(DATA_A_Q6_K)
#define A_TYPE block_q6_K
#define QUANT_K QK_K
#elif defined(DATA_A_IQ1_S)
#define A_TYPE block_iq1_s
#define QUANT_K QK_K
#elif defined(DATA_A_IQ1_M)
#define A_TYPE block_iq1_m
#define QUANT_K QK_K
#elif defined(DATA_A_IQ2_XXS)
#define A_TYPE block_iq2_xxs
#define QUANT_K QK_K
#elif defined(DATA_A_IQ2_XS)
#define A_TYPE block_iq2_xs
#define QUANT_K QK_K
#elif defined(DATA_A_IQ2_S)
#define A_TYPE block_iq2_s
#define QUANT_K QK_K
#elif defined(DATA_A_IQ3_XXS)
#define A_TYPE block_iq3_xxs
#define QUANT_K QK_K
#elif defined(DATA_A_IQ3_S)
#define A_TYPE block_iq3_s
#define QUANT_K QK_K
#elif defined(DATA_A_IQ4_NL)
#define A_TYPE block_iq4_nl
#define QUANT_K QK4_NL
#define QUANT_R 2
#elif defined(DATA_A_IQ4_XS)
#define A_TYPE block_iq4_xs
#define QUANT_K QK_K
#define QUANT_R 1
#endif

// ---- Lattice tables in shared memory (docs/interface.md §2.6) ----
// For a lattice i-quant A, the table is copied into `shared` memory by init_iq_shmem through
// its fill function (generated from iq_grids.json and served by the compiler as iq_grids.comp,
// which says why it is straight-line code with the entries written out), which
// every kernel calls at the top of main when NEEDS_INIT_IQ_SHMEM is defined: the whole
// workgroup must reach it (uniform control flow) and it ends with a barrier. Shared sizes are
// upstream's (the host's shared-memory checks count them): iq1s 4096 bytes (2048 16-bit rows
// kept two per uint), iq2xxs 2048, iq2xs 4096, iq2s 8192, iq3xxs 1024, iq3s 2048.

#if defined(DATA_A_IQ1_S) || defined(DATA_A_IQ1_M)
#define IQ_GRID iq1s_grid
#define IQ_GRID_FILL iq1s_grid_fill
#define IQ_GRID_TYPE uint
#define IQ_GRID_LEN 1024
#elif defined(DATA_A_IQ2_XXS)
#define IQ_GRID iq2xxs_grid
#define IQ_GRID_FILL iq2xxs_grid_fill
#define IQ_GRID_TYPE uvec2
#define IQ_GRID_LEN 256
#elif defined(DATA_A_IQ2_XS)
#define IQ_GRID iq2xs_grid
#define IQ_GRID_FILL iq2xs_grid_fill
#define IQ_GRID_TYPE uvec2
#define IQ_GRID_LEN 512
#elif defined(DATA_A_IQ2_S)
#define IQ_GRID iq2s_grid
#define IQ_GRID_FILL iq2s_grid_fill
#define IQ_GRID_TYPE uvec2
#define IQ_GRID_LEN 1024
#elif defined(DATA_A_IQ3_XXS)
#define IQ_GRID iq3xxs_grid
#define IQ_GRID_FILL iq3xxs_grid_fill
#define IQ_GRID_TYPE uint
#define IQ_GRID_LEN 256
#elif defined(DATA_A_IQ3_S)
#define IQ_GRID iq3s_grid
#define IQ_GRID_FILL iq3s_grid_fill
#define IQ_GRID_TYPE uint
#define IQ_GRID_LEN 512
#endif

#ifdef IQ_GRID
#define DATA_A_IQ_LATTICE 1
#define NEEDS_INIT_IQ_SHMEM 1
shared IQ_GRID_TYPE IQ_GRID[IQ_GRID_LEN];
#include "iq_grids.comp"

void init_iq_shmem(uvec3 wgsize)
{
    // Invocation t stores entries t, t + n, ... (one store per round of n entries).
    IQ_GRID_FILL(wgsize.x * wgsize.y * wgsize.z, gl_LocalInvocationIndex);
    barrier();
}
#endif

#endif // VKDIFF_TYPES_COMP
