// iq_decode.comp: element decoding of the lattice i-quants (iq1_s, iq1_m, iq2_xxs, iq2_xs,
// iq2_s, iq3_xxs, iq3_s; docs/interface.md §2.5), shared by their mat-vec bodies
// (mul_mat_vec_iq*.comp), mul_mm.comp and the cm2 callbacks (dequant_funcs_cm2.comp).
//
// The including file includes types.comp first (block structs and the shared table IQ_GRID,
// which main must fill with init_iq_shmem before any decode) and defines
//   IQ_ARG   the parameter naming one block: `uint ib`, or a buffer reference `bl`
//   IQ_BLK   that block as an expression of it: `data_a[ib]`, `bl.block`
//   IQ_PASS  the parameter's name, to pass it on: `ib`, `bl`
// For the DATA_A type it defines
//   float iq_group_scale(IQ_ARG, uint grp)
//            the factor of the 16 elements 16 grp .. 16 grp + 15 (group pair l = 2 (grp % 2),
//            + 1 of sub-block ib = grp / 2; one scale covers both groups in every format):
//              iq2_*: d (0.5 + s) / 4 = d (2s + 1) / 8     iq3_xxs: d (2s + 1) / 4
//              iq3_s: d (2s + 1)                           iq1_*:   d (2s + 1) / 8
//   float iq_quant(IQ_ARG, uint e)
//            the signed integer q of element e: grid value times sign (iq2, iq3), or
//            8 (grid + delta) in {+-1, +-7, +-9} (iq1, delta = +-1/8).
// Element e = iq_group_scale(e / 16) * iq_quant(e). Both factors and their product are exact
// in float (d has 11 significant bits, 2s + 1 at most 5, q at most 6; the powers of two keep
// a subnormal f16 d far above float's smallest normal), so a decoded element is the exact
// value and a kernel's only roundings are its own arithmetic.
//
// Signs: iq2_xxs, iq2_xs and iq3_xxs store 7-bit sign indices; the 8th sign is their parity
// (ggml's ksigns_iq2xs table), recomputed here.

#ifndef VKDIFF_IQ_DECODE_COMP
#define VKDIFF_IQ_DECODE_COMP

// Byte j (0..7) of a 64-bit grid row held as uvec2(low, high); byte j (0..3) of a 32-bit row.
uint iq_row_byte64(uvec2 row, uint j) { return (row[j / 4] >> (8 * (j % 4))) & 0xFFu; }
uint iq_row_byte32(uint row, uint j) { return (row >> (8 * j)) & 0xFFu; }

// The 8 signs of a group from a 7-bit sign index: bit 7 makes the count of negatives even.
uint iq_signs_from_index(uint s7) { return s7 | ((bitCount(s7) & 1u) << 7); }

// Grid magnitude g with sign bit j of `signs` (set: negative).
float iq_signed(uint g, uint signs, uint j) { return ((signs >> j) & 1u) != 0u ? -float(g) : float(g); }

#if defined(DATA_A_IQ1_S) || defined(DATA_A_IQ1_M)
// Element j of iq1s row idx: a 2-bit two's complement field of the packed table.
int iq1_grid_value(uint idx, uint j)
{
    const uint row = (IQ_GRID[idx / 2] >> (16 * (idx % 2))) & 0xFFFFu;
    return bitfieldExtract(int(row), int(2 * j), 2);
}
#endif

#if defined(DATA_A_IQ2_XXS)
uint iq2xxs_byte(IQ_ARG, uint k) { return (uint(IQ_BLK.qs[k / 2]) >> (8 * (k % 2))) & 0xFFu; }
// The u32 of sub-block ib: four 7-bit sign indices (bits 7l..) and the scale (bits 28..31).
uint iq2xxs_word(IQ_ARG, uint sub) { return uint(IQ_BLK.qs[4 * sub + 2]) | (uint(IQ_BLK.qs[4 * sub + 3]) << 16); }

float iq_group_scale(IQ_ARG, uint grp)
{
    const uint s = iq2xxs_word(IQ_PASS, grp / 2) >> 28;
    return float(IQ_BLK.d) * float(2 * s + 1) * 0.125;
}

float iq_quant(IQ_ARG, uint e)
{
    const uint sub = e / 32, l = (e % 32) / 8, j = e % 8;
    const uint idx = iq2xxs_byte(IQ_PASS, 8 * sub + l);
    const uint signs = iq_signs_from_index((iq2xxs_word(IQ_PASS, sub) >> (7 * l)) & 127u);
    return iq_signed(iq_row_byte64(IQ_GRID[idx], j), signs, j);
}

#elif defined(DATA_A_IQ2_XS)
float iq_group_scale(IQ_ARG, uint grp)
{
    const uint s = (uint(IQ_BLK.scales[grp / 2]) >> (4 * (grp % 2))) & 0xFu;
    return float(IQ_BLK.d) * float(2 * s + 1) * 0.125;
}

float iq_quant(IQ_ARG, uint e)
{
    const uint sub = e / 32, l = (e % 32) / 8, j = e % 8;
    const uint u = uint(IQ_BLK.qs[4 * sub + l]);
    const uint signs = iq_signs_from_index(u >> 9);
    return iq_signed(iq_row_byte64(IQ_GRID[u & 511u], j), signs, j);
}

#elif defined(DATA_A_IQ2_S)
float iq_group_scale(IQ_ARG, uint grp)
{
    const uint s = (uint(IQ_BLK.scales[grp / 2]) >> (4 * (grp % 2))) & 0xFu;
    return float(IQ_BLK.d) * float(2 * s + 1) * 0.125;
}

float iq_quant(IQ_ARG, uint e)
{
    const uint sub = e / 32, l = (e % 32) / 8, j = e % 8;
    const uint idx = uint(IQ_BLK.qs[4 * sub + l]) | (((uint(IQ_BLK.qh[sub]) >> (2 * l)) & 3u) << 8);
    const uint signs = uint(IQ_BLK.qs[32 + 4 * sub + l]);
    return iq_signed(iq_row_byte64(IQ_GRID[idx], j), signs, j);
}

#elif defined(DATA_A_IQ3_XXS)
uint iq3xxs_word(IQ_ARG, uint sub)
{
    const uint at = 64 + 4 * sub;
    return uint(IQ_BLK.qs[at]) | (uint(IQ_BLK.qs[at + 1]) << 8)
         | (uint(IQ_BLK.qs[at + 2]) << 16) | (uint(IQ_BLK.qs[at + 3]) << 24);
}

float iq_group_scale(IQ_ARG, uint grp)
{
    const uint s = iq3xxs_word(IQ_PASS, grp / 2) >> 28;
    return float(IQ_BLK.d) * float(2 * s + 1) * 0.25;
}

float iq_quant(IQ_ARG, uint e)
{
    const uint sub = e / 32, l = (e % 32) / 8, j = e % 8;
    const uint idx = uint(IQ_BLK.qs[8 * sub + 2 * l + j / 4]);
    const uint signs = iq_signs_from_index((iq3xxs_word(IQ_PASS, sub) >> (7 * l)) & 127u);
    return iq_signed(iq_row_byte32(IQ_GRID[idx], j % 4), signs, j);
}

#elif defined(DATA_A_IQ3_S)
float iq_group_scale(IQ_ARG, uint grp)
{
    const uint sub = grp / 2;
    const uint s = (uint(IQ_BLK.scales[sub / 2]) >> (4 * (sub % 2))) & 0xFu;
    return float(IQ_BLK.d) * float(2 * s + 1);
}

float iq_quant(IQ_ARG, uint e)
{
    const uint sub = e / 32, l = (e % 32) / 8, j = e % 8;
    const uint k = 2 * l + j / 4;
    const uint idx = uint(IQ_BLK.qs[8 * sub + k]) | (((uint(IQ_BLK.qh[sub]) >> k) & 1u) << 8);
    return iq_signed(iq_row_byte32(IQ_GRID[idx], j % 4), uint(IQ_BLK.signs[4 * sub + l]), j);
}

#elif defined(DATA_A_IQ1_S)
float iq_group_scale(IQ_ARG, uint grp)
{
    const uint s = (uint(IQ_BLK.qh[grp / 2]) >> 12) & 7u;
    return float(IQ_BLK.d) * float(2 * s + 1) * 0.125;
}

float iq_quant(IQ_ARG, uint e)
{
    const uint sub = e / 32, l = (e % 32) / 8, j = e % 8;
    const uint h = uint(IQ_BLK.qh[sub]);
    const uint idx = uint(IQ_BLK.qs[4 * sub + l]) | (((h >> (3 * l)) & 7u) << 8);
    const int delta = (h & 0x8000u) != 0u ? -1 : 1;
    return float(8 * iq1_grid_value(idx, j) + delta);
}

#elif defined(DATA_A_IQ1_M)
// The f16 super-block scale from the top nibbles of the four scale words.
float iq1m_d(IQ_ARG)
{
    const uint bits = (uint(IQ_BLK.scales[0]) >> 12) | ((uint(IQ_BLK.scales[1]) >> 8) & 0x00F0u)
                    | ((uint(IQ_BLK.scales[2]) >> 4) & 0x0F00u) | (uint(IQ_BLK.scales[3]) & 0xF000u);
    return unpackHalf2x16(bits).x;
}

float iq_group_scale(IQ_ARG, uint grp)
{
    const uint sub = grp / 2;
    const uint s = (uint(IQ_BLK.scales[sub / 2]) >> (6 * (sub % 2) + 3 * (grp % 2))) & 7u;
    return iq1m_d(IQ_PASS) * float(2 * s + 1) * 0.125;
}

float iq_quant(IQ_ARG, uint e)
{
    const uint sub = e / 32, l = (e % 32) / 8, j = e % 8;
    const uint h = uint(IQ_BLK.qh[2 * sub + l / 2]) >> (4 * (l % 2));
    const uint idx = uint(IQ_BLK.qs[4 * sub + l]) | ((h & 7u) << 8);
    const int delta = (h & 8u) != 0u ? -1 : 1;
    return float(8 * iq1_grid_value(idx, j) + delta);
}
#endif

#endif // VKDIFF_IQ_DECODE_COMP
