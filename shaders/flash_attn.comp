#version 450

// flash_attn.comp: scalar flash attention, f32 arithmetic throughout (interface in
// flash_attn_base.comp).
//
// One workgroup computes Br query rows (or Br heads in GQA mode) over its keys
// [kv_begin, kv_end). Its invocations form COL_GROUPS = WorkGroupSize/D_split column groups of
// D_split lanes. Each group is an independent flash-attention pass over its own keys (key c of
// every Bc-key tile with c ≡ group mod COL_GROUPS), keeping its own running maximum M, sum L and
// unnormalised output O in registers (lane l holds the elements 4l + 4·D_split·t .. +3 of each
// row); nothing is shared between groups until the end, and the key loop has no barrier.
// Per tile and group:
//   1. scores: each of the group's keys is dotted with each row, lane l summing its
//      D/D_split elements sequentially with fma, then the lanes' partial sums combined
//      (subgroupShuffleXor, depth log₂ D_split; IEEE addition commutes, so each sum has the
//      same bits in whichever lane gets it). With Br ≥ D_split each lane ends with Br/D_split
//      rows' sums (a reduce-scatter), with Br < D_split every lane with every row's. Then, per
//      row a lane holds, S = softcap·tanh(S) when a softcap is set, S += slope·mask (the lane
//      reads its rows' mask entries itself).
//   2. softmax update, per held row: M' = max(M, the tile's scores), α = exp(M − M'),
//      P = exp(S − M'), L = L·α + Σ P; then O = O·α + Σ P·V (fma, in key order) in every lane,
//      with α and P of each row from the lane that holds it (subgroupShuffle).
// At the end the groups are combined (one rescale each: f_g = exp(M_g − max_g M_g)), in group
// order, through shared memory; the row is O·(1/L) in dst, or (O, L, M) in the split-k scratch
// for flash_attn_split_k_reduce.comp. A key whose mask entry is −∞ is skipped (weight 0, like
// ggml's CPU path), and so is any key whose weight underflows to 0 (per row: 0·∞ would be NaN). A row whose keys
// are all masked keeps L = 0 and is written as NaN: ggml's CPU path gives 0·(1/0) = NaN there at
// the pinned commit (Vulkan leaves 1/0 undefined, so the kernel writes the NaN itself).
//
// Needs: D_split ≤ the subgroup size (the host takes D_split = min(sg, 8, lsb(D)/4)) and lanes
// of a group in one subgroup, as consecutive invocations from a multiple of D_split (D_split
// divides the subgroup size: both are powers of two; the shuffles address a group's lanes by
// gl_SubgroupInvocationID).
// Needs D/4 ≤ WorkGroupSize (the host's 128 and D ≤ 256).
// Shared memory: 16·D (Q, then up to 16 groups' O in the combination) + 2·COL_GROUPS·Br (the
// groups' M and L) + Br words: 18 KiB at most (D = 256, D_split = 4, Br = 8).
//
// Worked example (q4_0 K/V, D = 64, N = 3, H = 2, H_kv = 2, KV = 40, no mask, Br = 8,
// Bc = 32, D_split = 8, WorkGroupSize = 128): dispatch (1, 2, 1). In workgroup (0, 1, 0) rows
// 0..2 are queries 0..2 of head 1 (rows 3..7 are past N: neither computed nor stored); 16
// groups of 8 lanes. Invocation 77 is group 9, lane 5: it holds elements 20..23 and 52..55 of
// O for rows 0..2 (and M, L of row 5, past N), and scores key 9 in tile 0 and key 32 + 9 = 41 ≥ KV in tile 1 (not live:
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
// After the scores' reduction each lane holds HELD of the Br rows: with Br ≥ D_split the
// lanes' partial sums are reduce-scattered (a halving butterfly: lane l ends with rows
// l·HELD .. l·HELD + HELD − 1, each the same sum, bits included, as the full butterfly's), so a
// lane masks, exponentiates and sums only its own rows, and reads its own mask entries from
// memory: no mask tile in shared memory and no barrier in the key loop. The lanes' weights and
// rescale factors then reach every lane by subgroupShuffle for O. With Br < D_split (decode's
// Br = 1) every lane holds every row. With every row's scores in every lane and the mask staged
// in shared memory behind a barrier a tile, the H100's prefill row (N=512 KV=4096 D=128) took
// 2,810 µs; reduce-scattered, 1,624 µs, and the decode rows 10-23% less.
const bool SCATTER = Br >= D_split;
const uint HELD = SCATTER ? Br / D_split : Br;
uint held_row(uint lane, uint j) { return SCATTER ? lane * HELD + j : j; }
// Row r's value of x, from the lane that holds it.
float of_row(const float x[HELD], uint r, uint lane0)
{
    return SCATTER ? subgroupShuffle(x[r % HELD], lane0 + r / HELD) : x[r];
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

// This group's K and V vectors of the tile at `first`, and the mask's f16 bits for its keys and
// this lane's held rows (keys past the tile re-read its last key, rows past N row N − 1: in
// bounds, and not live).
void load_tile(const bool vectors, uint first, uint ncols, uint group, uint lane, uint rows,
               out KV_RAW kt[KEYS_PER_GROUP][T4], out KV_RAW vt[KEYS_PER_GROUP][T4],
               out uint mask_bits[KEYS_PER_GROUP][HELD])
{
    [[unroll]] for (uint i = 0; i < KEYS_PER_GROUP; ++i) {
        const uint key = first + min(group + i * COL_GROUPS, ncols - 1);
        [[unroll]] for (uint j = 0; j < HELD; ++j) {
            const uint r = min(held_row(lane, j), rows - 1);
            mask_bits[i][j] =
                p.mask != 0 ? uint(data_m_bits[(row_tile * Br + r) * m_stride + key]) : 0;
        }
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
              inout float M[HELD], inout float L[HELD], inout vec4 O[Br][T4])
{
    const bool masked = p.mask != 0;
    const uint lane0 = gl_SubgroupInvocationID - lane;   // this group's lane 0
    KV_RAW kt[KEYS_PER_GROUP][T4], vt[KEYS_PER_GROUP][T4];
    KV_RAW k_ahead[KEYS_PER_GROUP][T4], v_ahead[KEYS_PER_GROUP][T4];
    uint mt[KEYS_PER_GROUP][HELD], m_ahead[KEYS_PER_GROUP][HELD];
    if (KV_AHEAD && kv_begin < kv_end) {
        load_tile(vectors, kv_begin, min(Bc, kv_end - kv_begin), group, lane, rows, k_ahead,
                  v_ahead, m_ahead);
    }
    for (uint first = kv_begin; first < kv_end; first += Bc) {
        const uint ncols = min(Bc, kv_end - first);
        if (KV_AHEAD) {
            [[unroll]] for (uint i = 0; i < KEYS_PER_GROUP; ++i) {
                [[unroll]] for (uint t = 0; t < T4; ++t) {
                    kt[i][t] = k_ahead[i][t];
                    vt[i][t] = v_ahead[i][t];
                }
                [[unroll]] for (uint j = 0; j < HELD; ++j) {
                    mt[i][j] = m_ahead[i][j];
                }
            }
            // The last tile loads itself again (in bounds; unused): no branch around the loads.
            const uint next = first + Bc < kv_end ? first + Bc : first;
            load_tile(vectors, next, min(Bc, kv_end - next), group, lane, rows, k_ahead, v_ahead,
                      m_ahead);
        } else {
            load_tile(vectors, first, ncols, group, lane, rows, kt, vt, mt);
        }

        // 1. Scores of this group's keys. The tile body has no branch around a load: a slot
        //    past the tile re-reads the tile's last key (in bounds) and is marked not live, and
        //    rows past N compute with their zero Q, so every K (and later V) load of the tile
        //    can be in flight together.
        float S[KEYS_PER_GROUP][HELD];
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
            // The lanes' sums: at each step a lane adds its partner's partial sums of the rows
            // it keeps (with SCATTER, the half of its rows on its side of bit w; the partner
            // gets the other half), so every kept sum is own + partner's, as in the butterfly.
            uint n = Br;
            [[unroll]] for (uint w = D_split / 2; w > 0; w /= 2) {
                if (SCATTER) {
                    const bool upper = (lane & w) != 0;
                    n /= 2;
                    [[unroll]] for (uint r = 0; r < n; ++r) {
                        const float sent = upper ? acc[r] : acc[r + n];
                        const float kept = upper ? acc[r + n] : acc[r];
                        acc[r] = kept + subgroupShuffleXor(sent, w);
                    }
                } else {
                    [[unroll]] for (uint r = 0; r < Br; ++r) {
                        acc[r] += subgroupShuffleXor(acc[r], w);
                    }
                }
            }
            [[unroll]] for (uint j = 0; j < HELD; ++j) {
                S[i][j] = acc[j];
            }
        }
        // Then the logits of the held rows: with the mask, softcap and live tests applied in
        // the loop above, the D=128 pipeline spilled 80 B and the H100's prefill row took 1.22
        // times as long.
        float tile_max[HELD];
        [[unroll]] for (uint j = 0; j < HELD; ++j) {
            tile_max[j] = NEG_HALF_MAX;
        }
        [[unroll]] for (uint i = 0; i < KEYS_PER_GROUP; ++i) {
            const bool in_tile = group + i * COL_GROUPS < ncols;
            [[unroll]] for (uint j = 0; j < HELD; ++j) {
                const uint r = held_row(lane, j);
                bool is_live = in_tile && r < rows;
                float s = S[i][j];
                if (p.logit_softcap != 0.0) {
                    s = p.logit_softcap * tanh(s);
                }
                if (masked) {
                    // −∞ by its bits (no arithmetic on an infinity); other values widen exactly.
                    is_live = is_live && mt[i][j] != F16_NEG_INF_BITS;
                    s += slope_of[r] * unpackHalf2x16(mt[i][j]).x;
                }
                // A key that is not live keeps the score DEAD (−FLT_MAX, finite and below
                // the running maximum's start −FLT_MAX/2): it never raises the maximum, and its
                // weight is set to 0 by a compare where it is used, with no flag kept.
                S[i][j] = is_live ? s : DEAD;
                tile_max[j] = max(tile_max[j], S[i][j]);
            }
        }

        // 2. The softmax update of the held rows. Nothing is accumulated while M is still
        //    −FLT_MAX/2.
        float alpha[HELD];
        [[unroll]] for (uint j = 0; j < HELD; ++j) {
            const float m_new = max(M[j], tile_max[j]);
            alpha[j] = M[j] == NEG_HALF_MAX ? 0.0 : exp(M[j] - m_new);
            M[j] = m_new;
            float sum = 0.0;
            [[unroll]] for (uint i = 0; i < KEYS_PER_GROUP; ++i) {
                // A key that is not live (score DEAD) has weight exactly 0.
                const float e = S[i][j] != DEAD ? exp(S[i][j] - m_new) : 0.0;
                S[i][j] = e;
                sum += e;
            }
            L[j] = L[j] * alpha[j] + sum;
        }
        [[unroll]] for (uint r = 0; r < Br; ++r) {
            const float a = of_row(alpha, r, lane0);
            [[unroll]] for (uint t = 0; t < T4; ++t) {
                O[r][t] *= a;
            }
        }
        [[unroll]] for (uint i = 0; i < KEYS_PER_GROUP; ++i) {
            float P[Br];
            [[unroll]] for (uint r = 0; r < Br; ++r) {
                P[r] = of_row(S[i], r, lane0);
            }
            [[unroll]] for (uint t = 0; t < T4; ++t) {
                const vec4 v = widen(vt[i][t]);
                [[unroll]] for (uint r = 0; r < Br; ++r) {
                    // A zero weight adds nothing, and must not meet an infinite V (0·∞ = NaN).
                    O[r][t] = P[r] != 0.0 ? fma(vec4(P[r]), v, O[r][t]) : O[r][t];
                }
            }
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

    float M[HELD], L[HELD];
    [[unroll]] for (uint j = 0; j < HELD; ++j) {
        M[j] = NEG_HALF_MAX;
        L[j] = 0.0;
    }
    vec4 O[Br][T4];
    [[unroll]] for (uint r = 0; r < Br; ++r) {
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
    if (SCATTER || lane == 0) {
        [[unroll]] for (uint j = 0; j < HELD; ++j) {
            group_max[group * Br + held_row(lane, j)] = M[j];
            group_sum[group * Br + held_row(lane, j)] = L[j];
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
        const float mg = group_max[group * Br + r];
        factor[r] = mg == NEG_HALF_MAX ? 0.0 : exp(mg - m);
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
