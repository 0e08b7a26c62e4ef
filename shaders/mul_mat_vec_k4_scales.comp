// mul_mat_vec_k4_scales.comp: the 6-bit scales and mins of q4_K and q5_K (ggml's
// get_scale_min_k4), from a block's first 16 bytes read as one 128-bit word (d and dmin in .x,
// scales[0..11] in .y .. .w; both block sizes, 144 and 176 bytes, keep it 16-byte aligned).
// One wide load and selects instead of byte loads behind a branch on the sub-block, which
// splits every subgroup (its 16 lanes hold all 16 groups of a super-block).

// Byte k of scales[] in the header word.
uint k4_scale_byte(uvec4 header, uint k)
{
    return byte_of(header, 4 + k);
}

// (scale, min) of 32-element sub-block sb: sub-blocks 0..3 keep them in the low 6 bits of
// bytes sb and sb + 4; sub-blocks 4..7 keep their low 4 bits in the nibbles of byte sb + 4 and
// their high 2 bits in the top bits of bytes sb - 4 (scale) and sb (min).
uvec2 k4_scale_min(uvec4 header, uint sb)
{
    const uint s_low = k4_scale_byte(header, sb % 4);
    const uint m_low = k4_scale_byte(header, sb % 4 + 4);
    const uint packed = k4_scale_byte(header, (sb % 4) + 8);
    const uvec2 first = uvec2(s_low & 63u, m_low & 63u);
    const uvec2 second = uvec2((packed & 0xFu) | ((s_low >> 6) << 4), (packed >> 4) | ((m_low >> 6) << 4));
    return sb < 4 ? first : second;
}

// (d · scale, dmin · min) of group grp (16 elements) of the block whose header is `header`:
// both products exact in float (11 significant bits times 6).
vec2 k4_group_scale(uvec4 header, uint grp)
{
    const uvec2 sm = k4_scale_min(header, grp / 2);
    const vec2 d = unpackHalf2x16(header.x);
    return vec2(d.x * float(sm.x), d.y * float(sm.y));
}
