// dequant_funcs.comp: decoding of A elements for the mat-vec body.
//
// Include after the kernel has declared `data_a` (binding 0, element type A_TYPE) and
// with one DATA_A_<T>=1 define set (see types.comp).
//
// Float types (QUANT_K == 1):
//   float a_value(uint index)   element `index` of data_a, widened to float (exact).
// Block types of the generic body (the 32-element ones, and iq4_xs's 256-element
// super-blocks): a block is read in CHUNKS_PER_BLOCK chunks of CHUNK_K = 8 elements; chunk c
// holds elements chunk_low_start(c) + 0..3 and chunk_high_start(c) + 0..3.
//   void chunk_quants(ib, c, out low, out high)  those 8 elements of block ib WITHOUT the
//                                                block scale (integers, exact in float)
//   vec2 block_dm(ib)                            (d, m) of block ib; element = q * d + m,
//                                                m = 0 for types without a min
// q * d is exact in float (11-bit d times an integer of at most 12 significant bits: 8 for
// q8_0, 7 for an iq4 table value, 12 for iq4_xs's table value times its 6-bit sub-block scale
// minus 32), so a decoded element costs at most the one rounding of "+ m".
// The K-quants (q2_K..q6_K) do not use this file: their per-type mat-vec files decode them.

#ifndef VKDIFF_DEQUANT_FUNCS_COMP
#define VKDIFF_DEQUANT_FUNCS_COMP

#include "types.comp"

#if QUANT_K == 1

float a_value(uint index)
{
#if defined(DATA_A_BF16)
    return bf16_to_fp32(uint(data_a[index]));
#else
    return float(data_a[index]);
#endif
}

#else // block types

#define CHUNK_K 8
#define CHUNKS_PER_BLOCK (QUANT_K / CHUNK_K)

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

uvec4 chunk_bytes(uint ib, uint c)
{
    const uint first = 4 * c;
    return uvec4(data_a[ib].qs[first], data_a[ib].qs[first + 1],
                 data_a[ib].qs[first + 2], data_a[ib].qs[first + 3]);
}
#else
// Chunk c = elements 8c..8c+7, split in two groups of 4.
uint chunk_low_start(uint c) { return CHUNK_K * c; }
uint chunk_high_start(uint c) { return CHUNK_K * c + 4; }
#endif

#if defined(DATA_A_Q5_0) || defined(DATA_A_Q5_1)
// Fifth bits of the chunk's elements, already shifted to bit 4.
void chunk_high_bits(uint qh, uint c, out uvec4 low, out uvec4 high)
{
    const uvec4 lanes = uvec4(0, 1, 2, 3);
    low = ((uvec4(qh) >> (chunk_low_start(c) + lanes)) & 1u) << 4;
    high = ((uvec4(qh) >> (chunk_high_start(c) + lanes)) & 1u) << 4;
}
#endif

#if defined(DATA_A_Q4_0)
void chunk_quants(uint ib, uint c, out vec4 low, out vec4 high)
{
    const uvec4 bytes = chunk_bytes(ib, c);
    low = vec4(bytes & 0xFu) - 8.0;
    high = vec4(bytes >> 4) - 8.0;
}
vec2 block_dm(uint ib) { return vec2(float(data_a[ib].d), 0.0); }

#elif defined(DATA_A_Q4_1)
void chunk_quants(uint ib, uint c, out vec4 low, out vec4 high)
{
    const uvec4 bytes = chunk_bytes(ib, c);
    low = vec4(bytes & 0xFu);
    high = vec4(bytes >> 4);
}
vec2 block_dm(uint ib) { return vec2(float(data_a[ib].d), float(data_a[ib].m)); }

#elif defined(DATA_A_Q5_0)
void chunk_quants(uint ib, uint c, out vec4 low, out vec4 high)
{
    const uint qh = uint(data_a[ib].qh[0]) | (uint(data_a[ib].qh[1]) << 16);
    uvec4 fifth_low, fifth_high;
    chunk_high_bits(qh, c, fifth_low, fifth_high);
    const uvec4 bytes = chunk_bytes(ib, c);
    low = vec4((bytes & 0xFu) | fifth_low) - 16.0;
    high = vec4((bytes >> 4) | fifth_high) - 16.0;
}
vec2 block_dm(uint ib) { return vec2(float(data_a[ib].d), 0.0); }

#elif defined(DATA_A_Q5_1)
void chunk_quants(uint ib, uint c, out vec4 low, out vec4 high)
{
    uvec4 fifth_low, fifth_high;
    chunk_high_bits(data_a[ib].qh, c, fifth_low, fifth_high);
    const uvec4 bytes = chunk_bytes(ib, c);
    low = vec4((bytes & 0xFu) | fifth_low);
    high = vec4((bytes >> 4) | fifth_high);
}
vec2 block_dm(uint ib) { return vec2(float(data_a[ib].d), float(data_a[ib].m)); }

#elif defined(DATA_A_Q8_0)
void chunk_quants(uint ib, uint c, out vec4 low, out vec4 high)
{
    const uint first = CHUNK_K * c;
    low = vec4(int(data_a[ib].qs[first]), int(data_a[ib].qs[first + 1]),
               int(data_a[ib].qs[first + 2]), int(data_a[ib].qs[first + 3]));
    high = vec4(int(data_a[ib].qs[first + 4]), int(data_a[ib].qs[first + 5]),
                int(data_a[ib].qs[first + 6]), int(data_a[ib].qs[first + 7]));
}
vec2 block_dm(uint ib) { return vec2(float(data_a[ib].d), 0.0); }

#elif defined(DATA_A_IQ4_NL) || defined(DATA_A_IQ4_XS)
vec4 kvalues4(uvec4 index)
{
    return vec4(kvalues_iq4nl[index.x], kvalues_iq4nl[index.y],
                kvalues_iq4nl[index.z], kvalues_iq4nl[index.w]);
}

void chunk_quants(uint ib, uint c, out vec4 low, out vec4 high)
{
    const uvec4 bytes = chunk_bytes(ib, c);
    low = kvalues4(bytes & 0xFu);
    high = kvalues4(bytes >> 4);
#if defined(DATA_A_IQ4_XS)
    // Sub-block scale ls - 32, ls = 4 bits of scales_l | 2 bits of scales_h << 4. The
    // products with the table values are integers below 2^12: exact.
    const uint sub = c / 4;
    const uint ls = ((uint(data_a[ib].scales_l[sub / 2]) >> (4 * (sub % 2))) & 0xFu)
                  | (((uint(data_a[ib].scales_h) >> (2 * sub)) & 3u) << 4);
    const float scale = float(int(ls) - 32);
    low *= scale;
    high *= scale;
#endif
}
vec2 block_dm(uint ib) { return vec2(float(data_a[ib].d), 0.0); }
#endif

#endif // block types

#endif // VKDIFF_DEQUANT_FUNCS_COMP
