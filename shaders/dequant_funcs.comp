// dequant_funcs.comp: decoding of A elements for the mat-vec body (and mul_mm's aligned quads
// of the 32-element block types and iq4_xs).
//
// Include after the kernel has declared `data_a` (binding 0, element type A_TYPE) and
// with one DATA_A_<T>=1 define set (see types.comp).
//
// Float types (QUANT_K == 1):
//   float a_value(uint index)   element `index` of data_a, widened to float (exact).
//   vec4 a_value4(uint index)   elements index..index + 3, index a multiple of 4 (exact).
// Block types of the generic body (the 32-element ones, and iq4_xs's 256-element
// super-blocks): a block is read in CHUNKS_PER_BLOCK chunks of CHUNK_K = 8 elements; chunk c
// holds elements chunk_low_start(c) + 0..3 and chunk_high_start(c) + 0..3, both multiples of 4.
//   void chunk_quants(ib, c, out low, out high)  those 8 elements of block ib WITHOUT the
//                                                block scale (integers, exact in float)
//   vec2 block_dm(ib)                            (d, m) of block ib; element = q * d + m
//   BLOCK_HAS_MIN                                1 for the types with an m (q4_1, q5_1)
//   vec4 quad_quants(ib, e)                      elements e .. e + 3 (e a multiple of 4) of
//                                                block ib, likewise without the scale
// q * d is exact in float (11-bit d times an integer of at most 12 significant bits: 8 for
// q8_0, 7 for an iq4 table value, 12 for iq4_xs's table value times its 6-bit sub-block scale
// minus 32), so a decoded element costs at most the one rounding of "+ m".
// The K-quants (q2_K..q6_K) do not use this file: their per-type mat-vec files decode them.
//
// Speed: a chunk's quants come from one 32-bit word of qs (two 16-bit loads where the block
// is only 2-byte aligned), never byte by byte, and small unsigned fields become floats by the
// exponent trick below instead of an int-to-float conversion (a quarter-rate instruction on
// NVIDIA): the decode is a few full-rate integer ops and one subtraction per element.

#ifndef VKDIFF_DEQUANT_FUNCS_COMP
#define VKDIFF_DEQUANT_FUNCS_COMP

#include "types.comp"

#if QUANT_K == 1

#if defined(DATA_A_F32)
#define A_TYPE_VEC4 vec4
#elif defined(DATA_A_F16)
#define A_TYPE_VEC4 f16vec4
#else // bf16: raw bits
#define A_TYPE_VEC4 u16vec4
#endif
layout(binding = 0) readonly buffer A_VEC4 { A_TYPE_VEC4 data_a_v4[]; };

float a_value(uint index)
{
#if defined(DATA_A_BF16)
    return bf16_to_fp32(uint(data_a[index]));
#else
    return float(data_a[index]);
#endif
}

vec4 a_value4(uint index)
{
#if defined(DATA_A_BF16)
    return uintBitsToFloat(uvec4(data_a_v4[index / 4]) << 16);
#else
    return vec4(data_a_v4[index / 4]);
#endif
}

#else // block types

#define CHUNK_K 8
#define CHUNKS_PER_BLOCK (QUANT_K / CHUNK_K)


// Packed views of binding 0 for word loads: 16-bit words for the 2-byte-aligned blocks,
// 32-bit words for the 4-byte-aligned ones (same sizes as the block structs of types.comp).
#if defined(DATA_A_Q4_0) || defined(DATA_A_IQ4_NL)
struct block_packed16 { uint16_t d; uint16_t qs[8]; };
#elif defined(DATA_A_Q5_0)
struct block_packed16 { uint16_t d; uint16_t qh[2]; uint16_t qs[8]; };
#elif defined(DATA_A_Q8_0)
struct block_packed16 { uint16_t d; uint16_t qs[16]; };
#elif defined(DATA_A_Q4_1)
struct block_packed32 { uint dm; uint qs[4]; };
#elif defined(DATA_A_Q5_1)
struct block_packed32 { uint dm; uint qh; uint qs[4]; };
#elif defined(DATA_A_IQ4_XS)
struct block_packed32 { uint d_scales_h; uint scales_l; uint qs[32]; };
#endif
#if defined(DATA_A_Q4_0) || defined(DATA_A_IQ4_NL) || defined(DATA_A_Q5_0) || defined(DATA_A_Q8_0)
layout(binding = 0) readonly buffer A_PACKED16 { block_packed16 data_a16[]; };
// qs bytes 4 w .. 4 w + 3 as one word (byte 4 w in the low bits).
uint qs_word(uint ib, uint w)
{
    return uint(data_a16[ib].qs[2 * w]) | (uint(data_a16[ib].qs[2 * w + 1]) << 16);
}
#else
layout(binding = 0) readonly buffer A_PACKED32 { block_packed32 data_a32[]; };
uint qs_word(uint ib, uint w)
{
    return data_a32[ib].qs[w];
}
#endif

#if QUANT_R == 2 || defined(DATA_A_IQ4_XS)
#if defined(DATA_A_IQ4_XS)
// Chunk c = qs bytes 4c..4c+3, in 32-element sub-block ib = c / 4 (its bytes 16 ib..16 ib+15):
// low nibbles are elements 32 ib + 4 (c % 4).., high nibbles 16 further.
uint chunk_low_start(uint c) { return 32 * (c / 4) + 4 * (c % 4); }
uint chunk_high_start(uint c) { return chunk_low_start(c) + 16; }
#else
// Chunk c = qs bytes 4c..4c+3: their low nibbles are elements 4c.., high nibbles 4c+16..
uint chunk_low_start(uint c) { return 4 * c; }
uint chunk_high_start(uint c) { return 4 * c + QUANT_K / 2; }
#endif
#else
// Chunk c = elements 8c..8c+7, split in two groups of 4.
uint chunk_low_start(uint c) { return CHUNK_K * c; }
uint chunk_high_start(uint c) { return CHUNK_K * c + 4; }
#endif

#if defined(DATA_A_Q5_0) || defined(DATA_A_Q5_1)
// Bit i of the 4-bit x moved to bit 8i + 4: x * 0x204081 places copies of x at bits 0, 7,
// 14 and 21 (no carries: x < 16), and the mask keeps bit i of copy i.
uint fifth_bits(uint x)
{
    return ((x * 0x00204081u) & 0x01010101u) << 4;
}
#endif

#if defined(DATA_A_Q4_0)
void chunk_quants(uint ib, uint c, out vec4 low, out vec4 high)
{
    const uint w = qs_word(ib, c);
    low = bytes_minus(w & 0x0F0F0F0Fu, 8.0);
    high = bytes_minus((w >> 4) & 0x0F0F0F0Fu, 8.0);
}
vec2 block_dm(uint ib) { return vec2(float(data_a[ib].d), 0.0); }

#elif defined(DATA_A_Q4_1)
#define BLOCK_HAS_MIN 1
void chunk_quants(uint ib, uint c, out vec4 low, out vec4 high)
{
    const uint w = qs_word(ib, c);
    low = bytes_minus(w & 0x0F0F0F0Fu, 0.0);
    high = bytes_minus((w >> 4) & 0x0F0F0F0Fu, 0.0);
}
vec2 block_dm(uint ib) { return unpackHalf2x16(data_a32[ib].dm); }

#elif defined(DATA_A_Q5_0)
void chunk_quants(uint ib, uint c, out vec4 low, out vec4 high)
{
    const uint qh = uint(data_a16[ib].qh[0]) | (uint(data_a16[ib].qh[1]) << 16);
    const uint w = qs_word(ib, c);
    low = bytes_minus((w & 0x0F0F0F0Fu) | fifth_bits((qh >> (4 * c)) & 0xFu), 16.0);
    high = bytes_minus(((w >> 4) & 0x0F0F0F0Fu) | fifth_bits((qh >> (4 * c + 16)) & 0xFu), 16.0);
}
vec2 block_dm(uint ib) { return vec2(float(data_a[ib].d), 0.0); }

#elif defined(DATA_A_Q5_1)
#define BLOCK_HAS_MIN 1
void chunk_quants(uint ib, uint c, out vec4 low, out vec4 high)
{
    const uint qh = data_a32[ib].qh;
    const uint w = qs_word(ib, c);
    low = bytes_minus((w & 0x0F0F0F0Fu) | fifth_bits((qh >> (4 * c)) & 0xFu), 0.0);
    high = bytes_minus(((w >> 4) & 0x0F0F0F0Fu) | fifth_bits((qh >> (4 * c + 16)) & 0xFu), 0.0);
}
vec2 block_dm(uint ib) { return unpackHalf2x16(data_a32[ib].dm); }

#elif defined(DATA_A_Q8_0)
// The four signed bytes of a qs word: flipping bit 7 gives q + 128 as an unsigned byte.
vec4 q8_quants(uint w)
{
    return bytes_minus(w ^ 0x80808080u, 128.0);
}
void chunk_quants(uint ib, uint c, out vec4 low, out vec4 high)
{
    low = q8_quants(qs_word(ib, 2 * c));
    high = q8_quants(qs_word(ib, 2 * c + 1));
}
vec2 block_dm(uint ib) { return vec2(float(data_a[ib].d), 0.0); }

#elif defined(DATA_A_IQ4_NL) || defined(DATA_A_IQ4_XS)
// kvalues_iq4nl (types.comp) in shared memory, filled at entry by init_iq_shmem (the hook the
// lattice i-quants' tables use, types.comp): a dynamically indexed constant array became
// local-memory traffic, and selects over a packed copy cost 0.54-0.72x of upstream's shared
// table on the H100 (2026-11-26).
#define NEEDS_INIT_IQ_SHMEM 1
shared float kvalues_sh[16];

void init_iq_shmem(uvec3 wgsize)
{
    const uint n = wgsize.x * wgsize.y * wgsize.z;
    for (uint i = gl_LocalInvocationIndex; i < 16; i += n) {
        kvalues_sh[i] = kvalues_iq4nl[i];
    }
    barrier();
}

// The table values of the low nibbles of w's four bytes (exact).
vec4 kvalues4(uint w)
{
    const uvec4 index = (uvec4(w) >> uvec4(0, 8, 16, 24)) & 0xFu;
    return vec4(kvalues_sh[index.x], kvalues_sh[index.y], kvalues_sh[index.z], kvalues_sh[index.w]);
}

void chunk_quants(uint ib, uint c, out vec4 low, out vec4 high)
{
    const uint w = qs_word(ib, c);
    low = kvalues4(w);
    high = kvalues4(w >> 4);
#if defined(DATA_A_IQ4_XS)
    // Sub-block scale ls - 32, ls = 4 bits of scales_l | 2 bits of scales_h << 4. The
    // products with the table values are integers below 2^12: exact.
    const uint sub = c / 4;
    const uint ls = ((data_a32[ib].scales_l >> (4 * sub)) & 0xFu)
                  | (((data_a32[ib].d_scales_h >> (16 + 2 * sub)) & 3u) << 4);
    const float scale = float(int(ls) - 32);
    low *= scale;
    high *= scale;
#endif
}
#if defined(DATA_A_IQ4_XS)
vec2 block_dm(uint ib) { return vec2(unpackHalf2x16(data_a32[ib].d_scales_h).x, 0.0); }
#else
vec2 block_dm(uint ib) { return vec2(float(data_a[ib].d), 0.0); }
#endif
#endif

#ifndef BLOCK_HAS_MIN
#define BLOCK_HAS_MIN 0
#endif

#if defined(DATA_A_Q4_0) || defined(DATA_A_Q8_0) || defined(DATA_A_IQ4_NL)
// For these a quad is one qs word and the scale d alone, so a caller may load the word early
// and decode it later (mul_mm's prefetch): quad_quants(ib, e) = quad_from_word(quad_word(ib, e), e).
#define QUAD_FROM_WORD 1
uint quad_word(uint ib, uint e)
{
#if defined(DATA_A_Q8_0)
    return qs_word(ib, e / 4);
#else
    // Elements e % 16 .. in its low nibbles, e % 16 + 16 .. in its high ones.
    return qs_word(ib, (e % 16) / 4);
#endif
}
vec4 quad_from_word(uint w, uint e)
{
#if defined(DATA_A_Q8_0)
    return q8_quants(w);
#else
    const uint nibbles = e >= 16 ? w >> 4 : w;
#if defined(DATA_A_Q4_0)
    return bytes_minus(nibbles & 0x0F0F0F0Fu, 8.0);
#else
    return kvalues4(nibbles);
#endif
#endif
}
#endif

// Elements e .. e + 3 of block ib (e a multiple of 4), without the block scale, like
// chunk_quants: the half of the chunk that holds them (mul_mm stages A in such quads).
vec4 quad_quants(uint ib, uint e)
{
#ifdef QUAD_FROM_WORD
    return quad_from_word(quad_word(ib, e), e);
#else
#if defined(DATA_A_IQ4_XS)
    const uint c = 4 * (e / 32) + (e % 16) / 4;
    const bool high_half = e % 32 >= 16;
#else
    const uint c = (e % (QUANT_K / 2)) / 4;
    const bool high_half = e >= QUANT_K / 2;
#endif
    vec4 low, high;
    chunk_quants(ib, c, low, high);
    return high_half ? high : low;
#endif
}

#endif // block types

#endif // VKDIFF_DEQUANT_FUNCS_COMP
