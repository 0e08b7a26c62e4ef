// dequant_funcs_cm2.comp: decode callbacks for cooperative-matrix-2 tensor loads of a
// quantized A (docs/interface.md §3.2). coopMatLoadTensorNV with a tensor layout of block size
// (1, QUANT_K) calls dequantFuncA once per matrix element with a buffer reference to the
// element's block and the element's index in it (coordInBlock[1]); the callback returns the
// fully scaled value as float16_t.
//
// Formulas are those of docs/interface.md §2.3/§2.4; the arithmetic precision per type
// follows 3.2 (src/model/tolerance.rs models exactly this, see cm2_decode_error):
//   q4_0 q5_0 q8_0 iq4_nl   d * q in float16_t                       (1 f16 rounding)
//   q4_1 q5_1               d * q + m in float16_t                   (2 f16 roundings)
//   q2_K                    (d * sc) * q - dmin * mn in float16_t     (4 f16 roundings)
//   q3_K q6_K iq4_xs        (d * sc) * q in float16_t                (2 f16 roundings)
//   q4_K                    d * sc * q - dmin * mn in float, then one rounding to f16
//   q5_K                    d * sc and dmin * mn in float16_t, d*sc*q - dmin*mn in float,
//                           then one rounding to f16
//   iq1_s iq1_m iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s
//                           (d * factor) * q in float (exact, iq_decode.comp), then one
//                           rounding to f16 (the kernel fills the shared grid first)
// Requires GL_EXT_buffer_reference, 8/16-bit storage and explicit int8/int16/float16
// arithmetic (declared by the including shader) and types.comp.

#ifndef VKDIFF_DEQUANT_FUNCS_CM2
#define VKDIFF_DEQUANT_FUNCS_CM2

#define DECODE_ARGS(BUF) const in BUF bl, const in uint blockCoords[2], const in uint coordInBlock[2]

// u - bias for an integer 0 <= u < 1024 as f16, exactly and without an int-to-float
// conversion: the bits 0x6400 | u are the f16 number 1024 + u (its spacing there is 1).
float16_t small_int_f16(const uint u, const float16_t bias)
{
    return uint16BitsToHalf(uint16_t(0x6400u | u)) - (1024.0hf + bias);
}

// The 6-bit scale and min of 32-element sub-block sb of a q4_K / q5_K block (2.4).
uvec2 scale_min_k4(const uint sb, const uint s0, const uint s4, const uint s8)
{
    // s0 = scales[sb], s4 = scales[sb + 4] (sb < 4) or, for sb >= 4, s0 = scales[sb - 4],
    // s4 = scales[sb], s8 = scales[sb + 4].
    if (sb < 4) {
        return uvec2(s0 & 63u, s4 & 63u);
    }
    return uvec2((s8 & 0xFu) | ((s0 >> 6) << 4), (s8 >> 4) | ((s4 >> 6) << 4));
}

#if defined(DATA_A_Q4_0)
// block_q4_0 with qs read as 16-bit words (same 18 bytes). With the words and small_int_f16 the
// H200's cm2 q4_0 matmul rows went from 0.91 to 1.01 of upstream's speed (q8_0: below).
struct block_q4_0_words { float16_t d; uint16_t qs[8]; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer decodeBufQ4_0 { block_q4_0_words block; };
float16_t dequantFuncQ4_0(DECODE_ARGS(decodeBufQ4_0))
{
    const uint e = coordInBlock[1];
    // Element e is the low (e < 16) or high nibble of byte e % 16: bits 8 (e & 1) + 4 (e / 16)
    // of word (e % 16) / 2.
    const uint nib = (uint(bl.block.qs[(e & 15u) >> 1]) >> (8u * (e & 1u) + 4u * (e >> 4))) & 0xFu;
    return bl.block.d * small_int_f16(nib, 8.0hf);
}
#define dequantFuncA dequantFuncQ4_0
#endif

#if defined(DATA_A_Q4_1)
layout(buffer_reference, std430, buffer_reference_align = 2) buffer decodeBufQ4_1 { block_q4_1 block; };
float16_t dequantFuncQ4_1(DECODE_ARGS(decodeBufQ4_1))
{
    const uint e = coordInBlock[1];
    const uint byte = uint(bl.block.qs[e % 16u]);
    const uint nib = (e < 16u) ? (byte & 0xFu) : (byte >> 4);
    return bl.block.d * float16_t(nib) + bl.block.m;
}
#define dequantFuncA dequantFuncQ4_1
#endif

#if defined(DATA_A_Q5_0)
layout(buffer_reference, std430, buffer_reference_align = 2) buffer decodeBufQ5_0 { block_q5_0 block; };
float16_t dequantFuncQ5_0(DECODE_ARGS(decodeBufQ5_0))
{
    const uint e = coordInBlock[1];
    const uint h = uint(bl.block.qh[0]) | (uint(bl.block.qh[1]) << 16);
    const uint byte = uint(bl.block.qs[e % 16u]);
    const uint nib = (e < 16u) ? (byte & 0xFu) : (byte >> 4);
    const uint q = nib | (((h >> e) & 1u) << 4);
    return bl.block.d * float16_t(int(q) - 16);
}
#define dequantFuncA dequantFuncQ5_0
#endif

#if defined(DATA_A_Q5_1)
layout(buffer_reference, std430, buffer_reference_align = 4) buffer decodeBufQ5_1 { block_q5_1 block; };
float16_t dequantFuncQ5_1(DECODE_ARGS(decodeBufQ5_1))
{
    const uint e = coordInBlock[1];
    const uint byte = uint(bl.block.qs[e % 16u]);
    const uint nib = (e < 16u) ? (byte & 0xFu) : (byte >> 4);
    const uint q = nib | (((bl.block.qh >> e) & 1u) << 4);
    return bl.block.d * float16_t(q) + bl.block.m;
}
#define dequantFuncA dequantFuncQ5_1
#endif

#if defined(DATA_A_Q8_0)
// qs read as 16-bit words and the element's byte taken with unpack8: on the H100 (2026-12-06)
// the pipeline then had no local memory (0x220 bytes with byte reads) and 44,032 bytes of shared
// memory (48,128), and ran the three cm2 q8_0 rows 1.01 / 1.00 / 1.01x the byte reads.
struct block_q8_0_words { float16_t d; int16_t qs[16]; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer decodeBufQ8_0 { block_q8_0_words block; };
float16_t dequantFuncQ8_0(DECODE_ARGS(decodeBufQ8_0))
{
    const uint e = coordInBlock[1];
    return bl.block.d * float16_t(unpack8(bl.block.qs[e >> 1])[e & 1u]);
}
#define dequantFuncA dequantFuncQ8_0
#endif

#if defined(DATA_A_IQ4_NL)
layout(buffer_reference, std430, buffer_reference_align = 2) buffer decodeBufIQ4_NL { block_iq4_nl block; };
float16_t dequantFuncIQ4_NL(DECODE_ARGS(decodeBufIQ4_NL))
{
    const uint e = coordInBlock[1];
    const uint byte = uint(bl.block.qs[e % 16u]);
    const uint nib = (e < 16u) ? (byte & 0xFu) : (byte >> 4);
    return bl.block.d * float16_t(kvalues_iq4nl[nib]);
}
#define dequantFuncA dequantFuncIQ4_NL
#endif

#if defined(DATA_A_IQ4_XS)
layout(buffer_reference, std430, buffer_reference_align = 2) buffer decodeBufIQ4_XS { block_iq4_xs block; };
float16_t dequantFuncIQ4_XS(DECODE_ARGS(decodeBufIQ4_XS))
{
    const uint e = coordInBlock[1];
    const uint ib = e / 32u;
    const uint j = e % 32u;
    const uint lo = (uint(bl.block.scales_l[ib / 2u]) >> (4u * (ib % 2u))) & 0xFu;
    const uint hi = (uint(bl.block.scales_h) >> (2u * ib)) & 3u;
    const int ls = int(lo | (hi << 4)) - 32;
    const uint byte = uint(bl.block.qs[16u * ib + (j % 16u)]);
    const uint nib = (j < 16u) ? (byte & 0xFu) : (byte >> 4);
    return (bl.block.d * float16_t(ls)) * float16_t(kvalues_iq4nl[nib]);
}
#define dequantFuncA dequantFuncIQ4_XS
#endif

#if defined(DATA_A_Q2_K)
layout(buffer_reference, std430, buffer_reference_align = 4) buffer decodeBufQ2_K { block_q2_K block; };
float16_t dequantFuncQ2_K(DECODE_ARGS(decodeBufQ2_K))
{
    const uint e = coordInBlock[1];
    const uint n = e / 128u, g = (e % 128u) / 32u, l = e % 32u;
    const uint sc = uint(bl.block.scales[8u * n + 2u * g + l / 16u]);
    const uint q = (uint(bl.block.qs[32u * n + l]) >> (2u * g)) & 3u;
    const f16vec2 dm = bl.block.d;
    return (dm.x * float16_t(sc & 0xFu)) * float16_t(q) - dm.y * float16_t(sc >> 4);
}
#define dequantFuncA dequantFuncQ2_K
#endif

#if defined(DATA_A_Q3_K)
layout(buffer_reference, std430, buffer_reference_align = 2) buffer decodeBufQ3_K { block_q3_K block; };
float16_t dequantFuncQ3_K(DECODE_ARGS(decodeBufQ3_K))
{
    const uint e = coordInBlock[1];
    const uint n = e / 128u, g = (e % 128u) / 32u, l = e % 32u;
    const uint is = 8u * n + 2u * g + l / 16u;
    const uint low = (is < 8u) ? (uint(bl.block.scales[is]) & 0xFu) : (uint(bl.block.scales[is - 8u]) >> 4);
    const uint high = (uint(bl.block.scales[8u + (is % 4u)]) >> (2u * (is / 4u))) & 3u;
    const int s = int(low | (high << 4)) - 32;
    const uint hb = (uint(bl.block.hmask[l]) >> (4u * n + g)) & 1u;
    const int q = int((uint(bl.block.qs[32u * n + l]) >> (2u * g)) & 3u) - ((hb != 0u) ? 0 : 4);
    return (bl.block.d * float16_t(s)) * float16_t(q);
}
#define dequantFuncA dequantFuncQ3_K
#endif

#if defined(DATA_A_Q4_K) || defined(DATA_A_Q5_K)
// Scale and min of sub-block sb (2.4's get_scale_min_k4) from a block's scales[12].
#define K4_SCALE_MIN(blk, sb) scale_min_k4(sb, \
    uint(blk.scales[(sb) < 4u ? (sb) : (sb) - 4u]), \
    uint(blk.scales[(sb) < 4u ? (sb) + 4u : (sb)]), \
    uint(blk.scales[(sb) < 4u ? (sb) : (sb) + 4u]))
#endif

#if defined(DATA_A_Q4_K)
layout(buffer_reference, std430, buffer_reference_align = 4) buffer decodeBufQ4_K { block_q4_K block; };
float16_t dequantFuncQ4_K(DECODE_ARGS(decodeBufQ4_K))
{
    const uint e = coordInBlock[1];
    const uint sb = e / 32u, l = e % 32u;
    const uvec2 sm = K4_SCALE_MIN(bl.block, sb);
    const uint byte = uint(bl.block.qs[32u * (e / 64u) + l]);
    const uint nib = (sb % 2u == 0u) ? (byte & 0xFu) : (byte >> 4);
    const vec2 dm = vec2(bl.block.d);
    return float16_t(dm.x * float(sm.x) * float(nib) - dm.y * float(sm.y));
}
#define dequantFuncA dequantFuncQ4_K
#endif

#if defined(DATA_A_Q5_K)
layout(buffer_reference, std430, buffer_reference_align = 4) buffer decodeBufQ5_K { block_q5_K block; };
float16_t dequantFuncQ5_K(DECODE_ARGS(decodeBufQ5_K))
{
    const uint e = coordInBlock[1];
    const uint sb = e / 32u, l = e % 32u;
    const uvec2 sm = K4_SCALE_MIN(bl.block, sb);
    const uint byte = uint(bl.block.qs[32u * (e / 64u) + l]);
    const uint nib = (sb % 2u == 0u) ? (byte & 0xFu) : (byte >> 4);
    const uint q = nib + 16u * ((uint(bl.block.qh[l]) >> sb) & 1u);
    const float16_t dsc = bl.block.d.x * float16_t(sm.x);
    const float16_t dmn = bl.block.d.y * float16_t(sm.y);
    return float16_t(float(dsc) * float(q) - float(dmn));
}
#define dequantFuncA dequantFuncQ5_K
#endif

#if defined(DATA_A_Q6_K)
layout(buffer_reference, std430, buffer_reference_align = 2) buffer decodeBufQ6_K { block_q6_K block; };
float16_t dequantFuncQ6_K(DECODE_ARGS(decodeBufQ6_K))
{
    const uint e = coordInBlock[1];
    const uint n = e / 128u, g = (e % 128u) / 32u, l = e % 32u;
    const uint lo = (uint(bl.block.ql[64u * n + l + 32u * (g % 2u)]) >> (4u * (g / 2u))) & 0xFu;
    const uint hi = (uint(bl.block.qh[32u * n + l]) >> (2u * g)) & 3u;
    const int q = int(lo | (hi << 4)) - 32;
    const int sc = int(bl.block.scales[8u * n + 2u * g + l / 16u]);
    return (bl.block.d * float16_t(sc)) * float16_t(q);
}
#define dequantFuncA dequantFuncQ6_K
#endif

// ---- Lattice i-quants: one callback shape, decoding in iq_decode.comp ----

#if defined(DATA_A_IQ1_S)
layout(buffer_reference, std430, buffer_reference_align = 2) buffer decodeBufIQ1_S { block_iq1_s block; };
#define IQ_DECODE_BUF decodeBufIQ1_S
#define IQ_DEQUANT_FUNC dequantFuncIQ1_S
#elif defined(DATA_A_IQ1_M)
layout(buffer_reference, std430, buffer_reference_align = 2) buffer decodeBufIQ1_M { block_iq1_m block; };
#define IQ_DECODE_BUF decodeBufIQ1_M
#define IQ_DEQUANT_FUNC dequantFuncIQ1_M
#elif defined(DATA_A_IQ2_XXS)
layout(buffer_reference, std430, buffer_reference_align = 2) buffer decodeBufIQ2_XXS { block_iq2_xxs block; };
#define IQ_DECODE_BUF decodeBufIQ2_XXS
#define IQ_DEQUANT_FUNC dequantFuncIQ2_XXS
#elif defined(DATA_A_IQ2_XS)
layout(buffer_reference, std430, buffer_reference_align = 2) buffer decodeBufIQ2_XS { block_iq2_xs block; };
#define IQ_DECODE_BUF decodeBufIQ2_XS
#define IQ_DEQUANT_FUNC dequantFuncIQ2_XS
#elif defined(DATA_A_IQ2_S)
layout(buffer_reference, std430, buffer_reference_align = 2) buffer decodeBufIQ2_S { block_iq2_s block; };
#define IQ_DECODE_BUF decodeBufIQ2_S
#define IQ_DEQUANT_FUNC dequantFuncIQ2_S
#elif defined(DATA_A_IQ3_XXS)
layout(buffer_reference, std430, buffer_reference_align = 2) buffer decodeBufIQ3_XXS { block_iq3_xxs block; };
#define IQ_DECODE_BUF decodeBufIQ3_XXS
#define IQ_DEQUANT_FUNC dequantFuncIQ3_XXS
#elif defined(DATA_A_IQ3_S)
layout(buffer_reference, std430, buffer_reference_align = 2) buffer decodeBufIQ3_S { block_iq3_s block; };
#define IQ_DECODE_BUF decodeBufIQ3_S
#define IQ_DEQUANT_FUNC dequantFuncIQ3_S
#endif

#ifdef IQ_DECODE_BUF
#define IQ_ARG const in IQ_DECODE_BUF bl
#define IQ_BLK bl.block
#define IQ_PASS bl
#include "iq_decode.comp"

float16_t IQ_DEQUANT_FUNC(DECODE_ARGS(IQ_DECODE_BUF))
{
    const uint e = coordInBlock[1];
    return float16_t(iq_group_scale(bl, e / 16u) * iq_quant(bl, e));
}
#define dequantFuncA IQ_DEQUANT_FUNC
#endif

#endif // VKDIFF_DEQUANT_FUNCS_CM2
