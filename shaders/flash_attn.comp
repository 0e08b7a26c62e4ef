#version 450

// flash_attn.comp: scalar flash attention, f32 arithmetic throughout (interface in
// flash_attn_base.comp).
//
// One workgroup computes Br query rows (or Br heads in GQA mode) over its keys
// [kv_begin, kv_end). Its invocations form COL_GROUPS = WorkGroupSize/D_split column groups of
// D_split lanes. Each group is an independent flash-attention pass over its own keys (key c of
// every Bc-key tile with c ≡ group mod COL_GROUPS), keeping its own running maximum M, sum L and
// unnormalised output O in registers (lane l holds the elements 4l + 4·D_split·t .. +3 of each
// row); nothing is shared between groups until the end, so the key loop's only barrier is the
// mask tile's (staged in shared memory by the whole workgroup, when there is a mask).
// Per tile and group:
//   1. scores: each of the group's keys is dotted with each row, lane l summing its
//      D/D_split elements sequentially with fma, then the lanes' partial sums combined by a
//      butterfly (subgroupShuffleXor, depth log₂ D_split; IEEE addition commutes, so every
//      lane gets the same bits). Then S = softcap·tanh(S) when a softcap is set, S += slope·mask.
//   2. softmax update: M' = max(M, the tile's scores), α = exp(M − M'), P = exp(S − M'),
//      L = L·α + Σ P, O = O·α + Σ P·V (fma, in key order).
// At the end the groups are combined (one rescale each: f_g = exp(M_g − max_g M_g)), in group
// order, through shared memory; the row is O·(1/L) in dst, or (O, L, M) in the split-k scratch
// for flash_attn_split_k_reduce.comp. A key whose mask entry is −∞ is skipped (weight 0, like
// ggml's CPU path), and so is any key whose weight underflows to 0 (per row: 0·∞ would be NaN). A row whose keys
// are all masked keeps L = 0 and is written as NaN: ggml's CPU path gives 0·(1/0) = NaN there at
// the pinned commit (Vulkan leaves 1/0 undefined, so the kernel writes the NaN itself).
//
// Needs: D_split ≤ the subgroup size (the host takes D_split = min(sg, 8, lsb(D)/4)) and lanes
// of a group in one subgroup (D_split divides the subgroup size: both are powers of two).
// Needs D/4 ≤ WorkGroupSize (the host's 128 and D ≤ 256).
// Shared memory: 16·D (Q, then up to 16 groups' O in the combination) + 2·COL_GROUPS·Br (the
// groups' M and L) + Br + 2·Bc·Br (the mask tile) words: 20 KiB at most (D = 256, D_split = 4,
// the host's tiles: Br·Bc ≤ 256).
//
// Worked example (q4_0 K/V, D = 64, N = 3, H = 2, H_kv = 2, KV = 40, no mask, Br = 8,
// Bc = 32, D_split = 8, WorkGroupSize = 128): dispatch (1, 2, 1). In workgroup (0, 1, 0) rows
// 0..2 are queries 0..2 of head 1 (rows 3..7 are past N: neither computed nor stored); 16
// groups of 8 lanes. Invocation 77 is group 9, lane 5: it holds elements 20..23 and 52..55 of
// O for rows 0..2, and scores key 9 in tile 0 and key 32 + 9 = 41 ≥ KV in tile 1 (not live:
// keys 40.. are never read). Key 9's elements 20..23 are in block 9·nb11 + 0 of the head's
// slice (nb11 = 2 blocks per row), high nibbles of qs[4..7]; 52..55 in block 9·nb11 + 1.
// At the end invocation 5 (< D/4 = 16) sums the groups' elements 20..23 of row 1 and writes
// dst[1·2·64 + 1·64 + 20 ..] = (20, h = 1, q = 1).

#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable

#include "flash_attn_base.comp"

const uint COL_GROUPS = WorkGroupSize / D_split;
const uint D_PER_LANE = D / D_split;
const uint T4 = D_PER_LANE / 4;                           // vec4s per lane and row
const uint KEYS_PER_GROUP = (Bc + COL_GROUPS - 1) / COL_GROUPS;
#define DEAD uintBitsToFloat(0xFF7FFFFFu)

// Q (Br ≤ 16 rows) during the key loop, then one row of up to 16 groups' O (the combination).
shared vec4 Qs[16 * D / 4];
shared float slope_of[Br];
// The combination: each group's M and L per row, and one row of up to 16 groups' O at a time in
// Qs (with D_split = 4, as on a 4-wide subgroup, all 32 groups of D = 256 would need 32 KiB, all
// of lavapipe's shared memory).
const uint GROUPS_PER_PASS = COL_GROUPS > 16 ? 16 : COL_GROUPS;
shared float group_max[COL_GROUPS * Br];
shared float group_sum[COL_GROUPS * Br];
// The mask tile, staged by the whole workgroup (coalesced along keys) as f32, key-major (a lane
// reads its key's Br rows side by side). Read per lane straight from memory (two 2-byte loads
// per key and row, bits and value), the mask took more than half of the H100's prefill row.
// Two buffers, one barrier a tile: tile j + 1's mask is fetched into registers as tile j starts
// and written to buffer (j + 1) % 2 as it ends, when every lane has passed tile j's barrier and
// so has done with tile j − 1's buffer; tile j + 1's barrier then orders the writes before the
// reads.
shared float mask_tile[2][Bc * Br];
const uint MASK_SLOTS = (Br * Bc + WorkGroupSize - 1) / WorkGroupSize;

// This invocation's entries of the mask tile at `first` (as f16 bits): keys past the tile
// re-read its last key, rows past N row N − 1 (both in bounds; neither is live).
void fetch_mask(uint first, uint ncols, uint rows, out uint bits[MASK_SLOTS])
{
    [[unroll]] for (uint i = 0; i < MASK_SLOTS; ++i) {
        const uint e = min(gl_LocalInvocationID.x + i * WorkGroupSize, Br * Bc - 1);
        const uint r = e / Bc, c = e % Bc;
        bits[i] = uint(data_m_bits[(row_tile * Br + min(r, rows - 1)) * m_stride + first +
                                   min(c, ncols - 1)]);
    }
}

// −∞ by its bits (no arithmetic on an infinity); other values widen exactly.
void store_mask(uint buf, const uint bits[MASK_SLOTS])
{
    [[unroll]] for (uint i = 0; i < MASK_SLOTS; ++i) {
        const uint e = gl_LocalInvocationID.x + i * WorkGroupSize;
        if (e < Br * Bc) {
            mask_tile[buf][(e % Bc) * Br + e / Bc] = bits[i] == F16_NEG_INF_BITS
                                                        ? uintBitsToFloat(F32_NEG_INF_BITS)
                                                        : unpackHalf2x16(bits[i]).x;
        }
    }
}

// K and V as loaded, widened to f32 where used: an f16 vector stays packed (2 registers, not
// 4) while it waits a tile ahead. Blocks are decoded as loaded.
#if QUANT_K > 1
#define KV_RAW vec4
KV_RAW load_k_raw(const bool vectors, uint key, uint d) { return load_k4_as(vectors, k_base, key, d); }
KV_RAW load_v_raw(const bool vectors, uint key, uint d) { return load_v4_as(vectors, v_base, key, d); }
vec4 widen(const KV_RAW x) { return x; }
#else
layout(binding = 1) readonly buffer KU2 { uvec2 data_k_u2[]; };
layout(binding = 2) readonly buffer VU2 { uvec2 data_v_u2[]; };
layout(binding = 1) readonly buffer KBits { uint16_t data_k_bits[]; };
layout(binding = 2) readonly buffer VBits { uint16_t data_v_bits[]; };
#define KV_RAW uvec2
uvec2 pack4(uint a, uint b, uint c, uint d) { return uvec2(a | (b << 16), c | (d << 16)); }
KV_RAW load_k_raw(const bool vectors, uint key, uint d)
{
    const uint e = k_base + key * p.nb11 + d;
    if (vectors) {
        return data_k_u2[e / 4];
    }
    return pack4(uint(data_k_bits[e]), uint(data_k_bits[e + 1]), uint(data_k_bits[e + 2]),
                 uint(data_k_bits[e + 3]));
}
KV_RAW load_v_raw(const bool vectors, uint key, uint d)
{
    const uint e = v_base + key * p.nb21 + d;
    if (vectors) {
        return data_v_u2[e / 4];
    }
    return pack4(uint(data_v_bits[e]), uint(data_v_bits[e + 1]), uint(data_v_bits[e + 2]),
                 uint(data_v_bits[e + 3]));
}
vec4 widen(const KV_RAW x) { return vec4(unpackHalf2x16(x.x), unpackHalf2x16(x.y)); }
#endif

// This group's K and V vectors of the tile at `first` (keys past the tile re-read its last key,
// in bounds and not live).
void load_tile(const bool vectors, uint first, uint ncols, uint group, uint lane,
               out KV_RAW kt[KEYS_PER_GROUP][T4], out KV_RAW vt[KEYS_PER_GROUP][T4])
{
    [[unroll]] for (uint i = 0; i < KEYS_PER_GROUP; ++i) {
        const uint key = first + min(group + i * COL_GROUPS, ncols - 1);
        [[unroll]] for (uint t = 0; t < T4; ++t) {
            const uint d = 4 * lane + 4 * D_split * t;
            kt[i][t] = load_k_raw(vectors, key, d);
            vt[i][t] = load_v_raw(vectors, key, d);
        }
    }
}

// Where a group's share of a tile is small (decode's D = 64: 2 keys of 2 vectors each), the
// next tile's K and V are loaded while this one is computed, so a tile's loads overlap the
// previous tile's arithmetic; otherwise a tile's V is loaded with its K, before the scores.
const bool KV_AHEAD = KEYS_PER_GROUP * T4 <= 8;

// The key loop: steps 1 and 2 for every tile of this workgroup's keys. `vectors` is a constant
// at both calls (main), so each call becomes its own copy whose K and V loads of a tile sit in
// one block: with the alignment tested at every load, the H100 ran the decode rows 1.35-4.3
// times slower.
void key_loop(const bool vectors, const uint group, const uint lane, const uint rows,
              inout float M[Br], inout float L[Br], inout vec4 O[Br][T4])
{
    const bool masked = p.mask != 0;
    uint buf = 0;
    uint next_mask[MASK_SLOTS];
    if (masked && kv_begin < kv_end) {
        fetch_mask(kv_begin, min(Bc, kv_end - kv_begin), rows, next_mask);
        store_mask(0, next_mask);
    }
    KV_RAW kt[KEYS_PER_GROUP][T4], vt[KEYS_PER_GROUP][T4];
    KV_RAW k_ahead[KEYS_PER_GROUP][T4], v_ahead[KEYS_PER_GROUP][T4];
    if (KV_AHEAD && kv_begin < kv_end) {
        load_tile(vectors, kv_begin, min(Bc, kv_end - kv_begin), group, lane, k_ahead, v_ahead);
    }
    for (uint first = kv_begin; first < kv_end; first += Bc, buf ^= 1) {
        const uint ncols = min(Bc, kv_end - first);
        const bool more = first + Bc < kv_end;
        if (masked) {
            barrier();
            if (more) {
                fetch_mask(first + Bc, min(Bc, kv_end - first - Bc), rows, next_mask);
            }
        }
        if (KV_AHEAD) {
            [[unroll]] for (uint i = 0; i < KEYS_PER_GROUP; ++i) {
                [[unroll]] for (uint t = 0; t < T4; ++t) {
                    kt[i][t] = k_ahead[i][t];
                    vt[i][t] = v_ahead[i][t];
                }
            }
            // The last tile loads itself again (in bounds; unused): no branch around the loads.
            const uint next = more ? first + Bc : first;
            load_tile(vectors, next, min(Bc, kv_end - next), group, lane, k_ahead, v_ahead);
        } else {
            load_tile(vectors, first, ncols, group, lane, kt, vt);
        }

        // 1. Scores of this group's keys. The tile body has no branch around a load: a slot
        //    past the tile re-reads the tile's last key (in bounds) and is marked not live, and
        //    rows past N compute with their zero Q, so every K (and later V) load of the tile
        //    can be in flight together.
        float S[KEYS_PER_GROUP][Br];
        float tile_max[Br];
        [[unroll]] for (uint r = 0; r < Br; ++r) {
            tile_max[r] = NEG_HALF_MAX;
        }
        [[unroll]] for (uint i = 0; i < KEYS_PER_GROUP; ++i) {
            float acc[Br];
            [[unroll]] for (uint r = 0; r < Br; ++r) {
                acc[r] = 0.0;
            }
            [[unroll]] for (uint t = 0; t < T4; ++t) {
                const uint d = 4 * lane + 4 * D_split * t;
                const vec4 k = widen(kt[i][t]);
                [[unroll]] for (uint r = 0; r < Br; ++r) {
                    const vec4 q = Qs[r * (D / 4) + d / 4];
                    float a = acc[r];
                    a = fma(q.x, k.x, a);
                    a = fma(q.y, k.y, a);
                    a = fma(q.z, k.z, a);
                    a = fma(q.w, k.w, a);
                    acc[r] = a;
                }
            }
            [[unroll]] for (uint w = D_split / 2; w > 0; w /= 2) {
                [[unroll]] for (uint r = 0; r < Br; ++r) {
                    acc[r] += subgroupShuffleXor(acc[r], w);
                }
            }
            [[unroll]] for (uint r = 0; r < Br; ++r) {
                S[i][r] = acc[r];
            }
        }
        // Then the logits: with the mask, softcap and live flags applied in the loop above,
        // the D=128 pipeline spilled 80 B and the H100's prefill row took 1.22 times as long.
        [[unroll]] for (uint i = 0; i < KEYS_PER_GROUP; ++i) {
            const uint c = group + i * COL_GROUPS;
            const bool in_tile = c < ncols;
            [[unroll]] for (uint r = 0; r < Br; ++r) {
                bool is_live = in_tile && r < rows;
                float s = S[i][r];
                if (p.logit_softcap != 0.0) {
                    s = p.logit_softcap * tanh(s);
                }
                if (masked) {
                    const float m = mask_tile[buf][min(c, Bc - 1) * Br + r];
                    is_live = is_live && floatBitsToUint(m) != F32_NEG_INF_BITS;
                    s += slope_of[r] * m;
                }
                // A key that is not live keeps the score DEAD (−FLT_MAX, finite and below
                // the running maximum's start −FLT_MAX/2): it never raises the maximum, and its
                // weight is set to 0 by a compare where it is used, with no flag kept.
                S[i][r] = is_live ? s : DEAD;
                tile_max[r] = max(tile_max[r], S[i][r]);
            }
        }

        // 2. The softmax update. Nothing is accumulated while M is still −FLT_MAX/2.
        [[unroll]] for (uint r = 0; r < Br; ++r) {
            const float m_new = max(M[r], tile_max[r]);
            const float alpha = M[r] == NEG_HALF_MAX ? 0.0 : exp(M[r] - m_new);
            M[r] = m_new;
            float sum = 0.0;
            [[unroll]] for (uint i = 0; i < KEYS_PER_GROUP; ++i) {
                // A key that is not live (score DEAD) has weight exactly 0.
                const float e = S[i][r] != DEAD ? exp(S[i][r] - m_new) : 0.0;
                S[i][r] = e;
                sum += e;
            }
            L[r] = L[r] * alpha + sum;
            [[unroll]] for (uint t = 0; t < T4; ++t) {
                O[r][t] *= alpha;
            }
        }
        [[unroll]] for (uint i = 0; i < KEYS_PER_GROUP; ++i) {
            [[unroll]] for (uint t = 0; t < T4; ++t) {
                const vec4 v = widen(vt[i][t]);
                [[unroll]] for (uint r = 0; r < Br; ++r) {
                    // A zero weight adds nothing, and must not meet an infinite V (0·∞ = NaN).
                    O[r][t] = S[i][r] != 0.0 ? fma(vec4(S[i][r]), v, O[r][t]) : O[r][t];
                }
            }
        }
        if (masked && more) {
            store_mask(buf ^ 1, next_mask);
        }
    }
}

void main()
{
    init_indices();
    const uint tid = gl_LocalInvocationID.x;
    const uint lane = tid % D_split;
    const uint group = tid / D_split;
    // Rows past N are neither computed nor stored.
    const uint rows = min(Br, p.N - row_tile * Br);

    // Q rows, multiplied by the scale (rows past N are zero).
    for (uint e = tid; e < Br * D / 4; e += WorkGroupSize) {
        const uint r = e / (D / 4);
        const uint d = (e % (D / 4)) * 4;
        vec4 q = vec4(0.0);
        if (r < rows) {
            const uint at = q_base + (row_tile * Br + r) * q_stride + d;
            q = vec4(data_q[at], data_q[at + 1], data_q[at + 2], data_q[at + 3]) * p.scale;
        }
        Qs[e] = q;
    }
    if (tid < Br) {
        slope_of[tid] = alibi_slope(row_head(tid));
    }
    barrier();

    float M[Br], L[Br];
    vec4 O[Br][T4];
    [[unroll]] for (uint r = 0; r < Br; ++r) {
        M[r] = NEG_HALF_MAX;
        L[r] = 0.0;
        [[unroll]] for (uint t = 0; t < T4; ++t) {
            O[r][t] = vec4(0.0);
        }
    }

    if (KV_VECTORS) {
        key_loop(true, group, lane, rows, M, L, O);
    } else {
        key_loop(false, group, lane, rows, M, L, O);
    }

    // The combination: M = max_g M_g, every group's O and L rescaled by exp(M_g − M) and added
    // in group order.
    if (lane == 0) {
        [[unroll]] for (uint r = 0; r < Br; ++r) {
            group_max[group * Br + r] = M[r];
            group_sum[group * Br + r] = L[r];
        }
    }
    barrier();
    float row_max[Br], factor[Br];
    [[unroll]] for (uint r = 0; r < Br; ++r) {
        float m = NEG_HALF_MAX;
        for (uint g = 0; g < COL_GROUPS; ++g) {
            m = max(m, group_max[g * Br + r]);
        }
        row_max[r] = m;
        // A group that saw no live key holds O = 0, L = 0 (and M at −FLT_MAX/2: no exp of it).
        factor[r] = M[r] == NEG_HALF_MAX ? 0.0 : exp(M[r] - m);
    }
    // One row at a time, the groups' O in passes of GROUPS_PER_PASS (shared memory); invocation
    // e < D/4 adds elements 4e..4e+3 in group order and writes them. The row loop is left to
    // the compiler: lavapipe keeps it rolled (unrolled, its 2·Br barriers made LLVM's JIT of a
    // Br = 8 pipeline 2-4 times slower: 22 s at D = 256); the H200 ran the same times.
    for (uint r = 0; r < Br; ++r) {
        if (r >= rows) {
            break;
        }
        // This row's maximum, picked by compile-time indices (no dynamic index into a register
        // array); its O is stored under a test of r (uniform) against each compile-time row.
        float mr = row_max[0];
        [[unroll]] for (uint rr = 1; rr < Br; ++rr) {
            mr = r == rr ? row_max[rr] : mr;
        }
        vec4 o = vec4(0.0);
        for (uint g0 = 0; g0 < COL_GROUPS; g0 += GROUPS_PER_PASS) {
            if (group >= g0 && group < g0 + GROUPS_PER_PASS) {
                [[unroll]] for (uint rr = 0; rr < Br; ++rr) {
                    if (rr == r) {
                        [[unroll]] for (uint t = 0; t < T4; ++t) {
                            Qs[(group - g0) * (D / 4) + lane + D_split * t] = O[rr][t] * factor[rr];
                        }
                    }
                }
            }
            barrier();
            if (tid < D / 4) {
                for (uint g = g0; g < min(COL_GROUPS, g0 + GROUPS_PER_PASS); ++g) {
                    o += Qs[(g - g0) * (D / 4) + tid];
                }
            }
            barrier();
        }
        if (tid < D / 4) {
            float l = 0.0;
            for (uint g = 0; g < COL_GROUPS; ++g) {
                const float mg = group_max[g * Br + r];
                if (mg != NEG_HALF_MAX) {
                    l += group_sum[g * Br + r] * exp(mg - mr);
                }
            }
            const uint d = 4 * tid;
            if (p.k_num > 1) {
                const uint at = split_o_offset(r) + d;
                data_o[at] = o.x;
                data_o[at + 1] = o.y;
                data_o[at + 2] = o.z;
                data_o[at + 3] = o.w;
                if (tid == 0) {
                    data_o[split_l_offset(r)] = l;
                    data_o[split_m_offset(r)] = mr;
                }
            } else {
                const vec4 out4 = l == 0.0 ? vec4(ROW_NAN) : o * (1.0 / l);
                const uint at = dst_offset(r) + d;
                data_o[at] = out4.x;
                data_o[at + 1] = out4.y;
                data_o[at + 2] = out4.z;
                data_o[at + 3] = out4.w;
            }
        }
    }
}
