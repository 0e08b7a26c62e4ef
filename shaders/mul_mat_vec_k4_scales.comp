// mul_mat_vec_k4_scales.comp: the 6-bit scales and mins of q4_K and q5_K (ggml's
// get_scale_min_k4), from a block's first 16 bytes read as one 128-bit word (d and dmin in .x,
// scales[0..11] in .y .. .w; both block sizes, 144 and 176 bytes, keep it 16-byte aligned).
//
// Sub-blocks 0..3 keep their scale and min in the low 6 bits of bytes sb and sb + 4; sub-blocks
// 4..7 keep the low 4 bits in the nibbles of byte sb + 4 and the high 2 bits in the top bits of
// bytes sb - 4 (scale) and sb (min). A K-quant thread's four quads lie in sub-blocks
// 4 (t / 8) + g, g = 0..3 (mul_mat_vec_superblock.comp), all four in the first half or all in
// the second, so the four scales (and mins) come out of the header's words at once, byte g
// for quad g: a few word operations and one select per thread instead of a byte extract and a
// select per sub-block.

// (d · scale, dmin · min) of thread t's quads g = 0..3: both products exact in float
// (11 significant bits times 6).
void k4_thread_scales(uvec4 header, uint t, out vec2 sc[4])
{
    const bool first_half = t < 8;
    const uint scales = first_half ? header.y & 0x3F3F3F3Fu
                                   : (header.w & 0x0F0F0F0Fu) | ((header.y >> 2) & 0x30303030u);
    const uint mins = first_half ? header.z & 0x3F3F3F3Fu
                                 : ((header.w >> 4) & 0x0F0F0F0Fu) | ((header.z >> 2) & 0x30303030u);
    const vec2 d = unpackHalf2x16(header.x);
    const vec4 s = bytes_minus(scales, 0.0) * d.x;
    const vec4 m = bytes_minus(mins, 0.0) * d.y;
    [[unroll]] for (uint g = 0; g < 4; ++g) {
        sc[g] = vec2(s[g], m[g]);
    }
}
