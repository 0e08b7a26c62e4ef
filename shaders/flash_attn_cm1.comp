#version 450

// flash_attn_cm1.comp: flash attention with KHR cooperative matrices (cm1, docs/interface.md §9.8):
// S = Q·Kᵀ and P·V on 16×16×16 f16 subgroup-scope matrices, the softmax in ordinary
// arithmetic (interface in flash_attn_base.comp).
//
// Pipeline (host, §9.5): WorkGroupSize 128 with a required subgroup size of 32 and full
// subgroups, so 4 subgroups; Br = 16 query rows, Bc = 64 keys per tile. D is a multiple of 16
// (every head size upstream allows). The small-rows pipeline (Br = 1) is never selected
// (§12 item 8) and not supported here.
//
// Precision (the interface's for this path, except P·V, see below):
//   Q·scale in f32, rounded to f16 (shared Qsh); K and V staged as f16 (blocks: d·q in f32,
//   then rounded); S accumulated by the cooperative matrices in ACC_TYPE and kept in ACC_TYPE
//   (softcap and mask results rounded to ACC_TYPE); running maximum and sum in f32; P rounded
//   to f16 (the sum L adds the rounded weights, so the weights in O and L agree); O·α in
//   ACC_TYPE, then P·V added to it by the cooperative matrices in ACC_TYPE (in their order);
//   the final O·float16_t(1/L) in ACC_TYPE. Upstream's pinned cm1 multiplies V in f32 by
//   the f16 P and adds key by key; the error model covers both (FaArith::Cm1).
//
// The workgroup's 4 subgroups are independent passes over their own keys: subgroup g takes keys
// 16g .. 16g + 15 of every tile [first, first + ncols), with its own running maximum M, sum L
// and O per row; nothing in the key loop is shared between subgroups (subgroup barriers only).
// Per tile and subgroup:
//   1. K staging: the subgroup's Ksh rows c = K[first + c] as f16, zero for c ≥ ncols (keys
//      past the split or KV are never read, so any KV and split length work). At D = 64 the
//      tile's K was fetched into registers during the previous tile; right after this tile's
//      staging the next tile's K, this tile's V (D ≤ 128) and the softmax lanes' mask are
//      fetched, so their loads are in flight during steps 2 and 3.
//   2. S: the subgroup's 16 × 16 block of S, Σ over D/16 steps of Q[:, 16s..] × Kᵀ[16s.., cols],
//      stored row-major in its Ssh region. Then V replaces K in the subgroup's Ksh rows.
//   3. softmax, ROW_LANES = 2 lanes per row, 8 consecutive keys each: keys with a −∞ mask (by
//      bits) and keys ≥ ncols are not live (weight exactly 0, no arithmetic on the infinity);
//      M' = max(M, max S) and the tile's Σ P over the row's lanes by subgroupShuffleXor (every
//      lane gets the same bits); α = exp(M − M'), P = f16(exp(S − M')), L = L·α + Σ P.
//   4. O (D/16 accumulators of 16 × 16): O_b = P × V_b + O_b·α, α as a matrix whose row r
//      holds row r's α. Where a V half of the subgroup's tile is ±∞ or NaN, keys are added
//      one at a time instead, skipping zero weights (0·∞ is never added).
// At the end the subgroups are combined (one rescale each: f_g = exp(M_g − max_g M_g)), in
// subgroup order, through shared memory. A row whose keys are all masked keeps L = 0 and is
// written as NaN (bits), like the scalar path; with split-k the reduce handles it.
//
// Shared memory (D = 256, f32 accumulators): Qsh 8.25 KiB + Ksh 33 KiB + Ssh 4 KiB + Psh4
// 2 KiB + row arrays 0.625 KiB: 49,024 of the 49,152 bytes allowed.
//
// Worked example (f16 K/V, D = 80, N = 20, KV = 70, H = 1): dispatch (2, 1, 1); workgroup 1
// takes queries 16..19 (rows 4..15 zero, never stored). Tile 0 holds keys 0..63, tile 1 keys
// 64..69; in tile 1 subgroup 0 takes keys 64..69 (Ksh rows 6..15 zero, not live, and their
// V rows zero too) and subgroups 1..3 none (all zero, not live). Subgroup 2 computes S columns
// 32..47 of tile 0 from five 16-wide slices of D, and its P·V as five blocks of O (elements
// 0..15, .., 64..79), each P (16 × 16) times V rows 32..47 of the tile, elements 16b .. 16b + 15.

#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_KHR_cooperative_matrix : enable

#include "flash_attn_base.comp"

#ifndef ACC_TYPEV4
#define ACC_TYPEV4 vec4
#endif

// Cooperative matrix edge (M = N = K = 16).
const uint MAT = 16;
// The pipeline's required subgroup size, and its subgroups.
const uint SG = 32;
const uint SUBGROUPS = WorkGroupSize / SG;
// Each subgroup is an independent pass over its own keys of every tile (SG_KEYS = 16 of the
// host's Bc = 64): its own K staging, S block, running maximum, sum and O, with subgroup
// barriers only; the subgroups' results are combined once at the end. Sharing one maximum per
// row across the workgroup took three workgroup barriers a tile and 224 registers; this takes
// 182 and the H100 runs the prefill row (N=512 KV=4096 D=128) 1.02 and the decode rows
// 1.02-1.15 times as fast.
const uint SG_KEYS = Bc / SUBGROUPS;
// Softmax: ROW_LANES lanes per row (2 for Br = 16), KEYS_PER_LANE consecutive keys each.
const uint ROW_LANES = SG / Br;
const uint KEYS_PER_LANE = SG_KEYS / ROW_LANES;
// O: D/16 accumulators of Br × 16 (Br = 16), block b holding elements 16b .. 16b + 15.
const uint O_BLOCKS = D / MAT;
// K and V vec4s each lane stages per tile (both go through the subgroup's Ksh rows). K is
// fetched a tile ahead where it is few (at D = 128 ahead took 53 more registers and the
// H100's prefill row 3% longer); V at the tile's start, in flight during S, up to D = 128.
const uint KV_SLOTS = SG_KEYS * (D / 4) / SG;
const bool K_AHEAD = KV_SLOTS <= 8;
const bool V_AHEAD = KV_SLOTS <= 16;
// At the end the subgroups' O pass to subgroup 0 through Ssh, END_BLOCKS blocks at a time.
const uint END_BLOCKS = 4;

// Shared rows are padded against bank conflicts (a row stride that is a multiple of 128 bytes
// puts a coopmat block's rows in the same banks): Q and K rows by 8 halves (Ksh in f16vec4
// units), S rows by 8 elements and P rows by 8 halves where D ≤ 128 (the factor
// 256 / (D + 128) is 1 there and 0 above, where that padding would not fit in 48 KiB). Every
// row stride is a multiple of 16 bytes, the cooperative-matrix load alignment. Ksh, Ssh and
// Psh4 have one region per subgroup; at the end Ssh holds O blocks.
const uint QS = D + 8;
const uint KS4 = D / 4 + 2;
const uint SS = SG_KEYS + 8 * (256 / (D + 128));
const uint PS4 = SG_KEYS / 4 + 2 * (256 / (D + 128));
shared float16_t Qsh[Br * QS];
shared f16vec4 Ksh[Bc * KS4];
shared ACC_TYPE Ssh[SUBGROUPS * Br * SS];
shared f16vec4 Psh4[SUBGROUPS * Br * PS4];
// At the end: the rows' M and L, and each subgroup's.
shared float row_scratch[2 * Br];
float row_max(uint r) { return row_scratch[r]; }
float row_sum(uint r) { return row_scratch[Br + r]; }
shared float sg_max[SUBGROUPS * Br];
shared float sg_sum[SUBGROUPS * Br];

// Br × 16 blocks in ACC_TYPE: S, O, and the per-row factors α and f_s.
#define OMAT coopmat<ACC_TYPE, gl_ScopeSubgroup, MAT, MAT, gl_MatrixUseAccumulator>

// A subgroup's own shared data, written and read by its lanes only.
void subgroup_sync()
{
    subgroupMemoryBarrierShared();
    subgroupBarrier();
}

// The subgroup's keys of the tile as f16, K or V (`is_v`): fetch_rows issues every load into
// registers (`vectors` = KV_VECTORS a constant in each call; keys past ncols re-read the
// tile's last key; quantized blocks' d·q in f32 rounded to f16 here), store_rows writes them
// to the subgroup's Ksh rows, 0 past ncols (a zero weight then meets a zero V). Behind a test at
// every load the loads went one at a time on the H100 (2026-11-26).
void fetch_rows(const bool is_v, const bool vectors, uint first, uint ncols, uint sg, uint lane,
                out f16vec4 x[KV_SLOTS])
{
    [[unroll]] for (uint i = 0; i < KV_SLOTS; ++i) {
        const uint e = lane + i * SG;
        const uint key = first + min(sg * SG_KEYS + e / (D / 4), ncols - 1);
        const uint d = (e % (D / 4)) * 4;
        x[i] = f16vec4(is_v ? load_v4_as(vectors, v_base, key, d)
                            : load_k4_as(vectors, k_base, key, d));
    }
}

void fetch_rows_any(const bool is_v, uint first, uint ncols, uint sg, uint lane,
                    out f16vec4 x[KV_SLOTS])
{
    if (KV_VECTORS) {
        fetch_rows(is_v, true, first, ncols, sg, lane, x);
    } else {
        fetch_rows(is_v, false, first, ncols, sg, lane, x);
    }
}

void store_rows(uint ncols, uint sg, uint lane, const in f16vec4 x[KV_SLOTS])
{
    [[unroll]] for (uint i = 0; i < KV_SLOTS; ++i) {
        const uint e = lane + i * SG;
        const uint c = sg * SG_KEYS + e / (D / 4);
        Ksh[c * KS4 + e % (D / 4)] = c < ncols ? x[i] : f16vec4(0.0);
    }
}

// No half that store_rows keeps (keys below ncols) is ±∞ or NaN, tested on the bits of packed
// pairs: a half is ±∞ or NaN when its exponent bits are all set, and only then does adding
// 0x0400 to them carry into its sign bit (no carry crosses into the other half); widening to
// f32 for the test cost the H200's prefill row 16%.
bool stored_finite(uint ncols, uint sg, uint lane, const in f16vec4 x[KV_SLOTS])
{
    uint carries = 0;
    [[unroll]] for (uint i = 0; i < KV_SLOTS; ++i) {
        const uint c = sg * SG_KEYS + (lane + i * SG) / (D / 4);
        const uint w = ((packFloat2x16(x[i].xy) & 0x7C007C00u) + 0x04000400u)
                     | ((packFloat2x16(x[i].zw) & 0x7C007C00u) + 0x04000400u);
        carries |= c < ncols ? w : 0u;
    }
    return (carries & 0x80008000u) == 0;
}

// o + p·v, skipping a zero weight (so that 0·∞ is never added): P·V is exact in f32, so fma in
// ACC_TYPE rounds as the product rounded to ACC_TYPE and then added (or once, if fused).
ACC_TYPEV4 pv_step(float16_t pw, const f16vec4 v, ACC_TYPEV4 o)
{
    return pw != float16_t(0.0) ? fma(ACC_TYPEV4(pw), ACC_TYPEV4(v), o) : o;
}

// Row r's elements d .. d + 3 of the result (normalised by the row's L), or of split-k's
// unnormalised O with the row's L and M.
void store_o(uint r, uint d, const vec4 o4)
{
    if (p.k_num > 1) {
        const uint at = split_o_offset(r) + d;
        data_o[at] = o4.x;
        data_o[at + 1] = o4.y;
        data_o[at + 2] = o4.z;
        data_o[at + 3] = o4.w;
        if (d == 0) {
            data_o[split_l_offset(r)] = row_sum(r);
            data_o[split_m_offset(r)] = row_max(r);
        }
    } else {
        vec4 out4 = vec4(ROW_NAN);
        if (row_sum(r) != 0.0) {
            out4 = vec4(ACC_TYPEV4(o4) * ACC_TYPE(float16_t(1.0 / row_sum(r))));
        }
        const uint at = dst_offset(r) + d;
        data_o[at] = out4.x;
        data_o[at + 1] = out4.y;
        data_o[at + 2] = out4.z;
        data_o[at + 3] = out4.w;
    }
}

// Vec4 e (< MAT·MAT/4) of a row-major 16 × 16 block: row e / 4, columns 4·(e % 4) .. + 3.
ACC_TYPEV4 block_vec4(uint at)
{
    return ACC_TYPEV4(Ssh[at], Ssh[at + 1], Ssh[at + 2], Ssh[at + 3]);
}

void main()
{
    init_indices();
    const uint tid = gl_LocalInvocationID.x;
    const uint sg = gl_SubgroupID;
    const uint lane = gl_SubgroupInvocationID;

    // Q rows: q·scale in f32, rounded to f16 (rows past N are zero and never stored).
    for (uint e = tid; e < Br * D; e += WorkGroupSize) {
        const uint r = e / D;
        float q = 0.0;
        if (row_valid(r)) {
            q = data_q[q_base + (row_tile * Br + r) * q_stride + e % D] * p.scale;
        }
        Qsh[r * QS + e % D] = float16_t(q);
    }
    OMAT O[O_BLOCKS];
    [[unroll]] for (uint b = 0; b < O_BLOCKS; ++b) {
        O[b] = OMAT(0.0);
    }
    // Step 3's row and lane; the row's running maximum and sum over this subgroup's keys (the
    // same on both of its lanes).
    const uint srow = lane / ROW_LANES;
    const uint slane = lane % ROW_LANES;
    const float slope = alibi_slope(row_head(srow));
    float m_run = NEG_HALF_MAX;
    float l_run = 0.0;
    const bool masked = p.mask != 0 && row_valid(srow);
    // The subgroup's regions of Ssh and Psh4, and the softmax lane's first entry in its row.
    const uint sbase = sg * Br * SS;
    const uint pbase = sg * Br * PS4;
    const uint s_lane = sbase + srow * SS + slane * KEYS_PER_LANE;
    f16vec4 kv[KV_SLOTS];
    if (K_AHEAD && kv_begin < kv_end) {
        fetch_rows_any(false, kv_begin, min(Bc, kv_end - kv_begin), sg, lane, kv);
    }
    barrier();

    for (uint first = kv_begin; first < kv_end; first += Bc) {
        const uint ncols = min(Bc, kv_end - first);
        const uint c_sg = sg * SG_KEYS;   // the subgroup's first key in the tile

        if (!K_AHEAD) {
            fetch_rows_any(false, first, ncols, sg, lane, kv);
        }
        store_rows(ncols, sg, lane, kv);
        subgroup_sync();

        // Loads for later steps, in flight during S: V, the next tile's K, the softmax
        // lane's mask.
        f16vec4 vv[KV_SLOTS];
        if (V_AHEAD) {
            fetch_rows_any(true, first, ncols, sg, lane, vv);
        }
        if (K_AHEAD && first + Bc < kv_end) {
            fetch_rows_any(false, first + Bc, min(Bc, kv_end - first - Bc), sg, lane, kv);
        }
        uint mbits[KEYS_PER_LANE];
        [[unroll]] for (uint m = 0; m < KEYS_PER_LANE; ++m) {
            mbits[m] = 0;
        }
        if (masked) {
            const uint mask_row = (row_tile * Br + srow) * m_stride + first;
            [[unroll]] for (uint m = 0; m < KEYS_PER_LANE; ++m) {
                const uint c = min(c_sg + slane * KEYS_PER_LANE + m, ncols - 1);
                mbits[m] = uint(data_m_bits[mask_row + c]);
            }
        }

        // 2. S = Q·Kᵀ for the subgroup's keys, 16 columns a block.
        [[unroll]] for (uint cb = 0; cb < SG_KEYS / MAT; ++cb) {
            OMAT s = OMAT(0.0);
            for (uint dk = 0; dk < D; dk += MAT) {
                coopmat<float16_t, gl_ScopeSubgroup, MAT, MAT, gl_MatrixUseA> qa;
                coopmat<float16_t, gl_ScopeSubgroup, MAT, MAT, gl_MatrixUseB> kb;
                coopMatLoad(qa, Qsh, dk, QS, gl_CooperativeMatrixLayoutRowMajor);
                // Kᵀ block (d, c) = K element dk + d of key c_sg + 16cb + c: column-major,
                // stride KS4 (in f16vec4 units, as the offset).
                coopMatLoad(kb, Ksh, (c_sg + cb * MAT) * KS4 + dk / 4, KS4,
                            gl_CooperativeMatrixLayoutColumnMajor);
                s = coopMatMulAdd(qa, kb, s);
            }
            coopMatStore(s, Ssh, sbase + cb * MAT, SS, gl_CooperativeMatrixLayoutRowMajor);
        }
        subgroup_sync();

        // K is consumed: the subgroup's V goes into the same Ksh rows. A lane with a V half
        // that is ±∞ or NaN makes the whole subgroup take the guarded P·V below.
        if (!V_AHEAD) {
            fetch_rows_any(true, first, ncols, sg, lane, vv);
        }
        store_rows(ncols, sg, lane, vv);
        uint v_bad = stored_finite(ncols, sg, lane, vv) ? 0u : 1u;
        [[unroll]] for (uint w = SG / 2; w > 0; w /= 2) {
            v_bad |= subgroupShuffleXor(v_bad, w);
        }

        // 3. Softmax update, ROW_LANES lanes per row: keys with a −∞ mask (by bits) and keys
        //    ≥ ncols are not live (weight exactly 0, no arithmetic on the infinity). P goes to
        //    Psh4 as f16; α = exp(M − M') replaces the lane's S entries, so that the region
        //    holds row r's α in every column (a matrix for the rescale).
        {
            ACC_TYPE sv[KEYS_PER_LANE];
            bool live[KEYS_PER_LANE];
            float tile_max = NEG_HALF_MAX;
            [[unroll]] for (uint m = 0; m < KEYS_PER_LANE; ++m) {
                const uint c = slane * KEYS_PER_LANE + m;
                live[m] = c_sg + c < ncols && (!masked || mbits[m] != F16_NEG_INF_BITS);
                ACC_TYPE s = Ssh[s_lane + m];
                if (live[m]) {
                    if (p.logit_softcap != 0.0) {
                        s = ACC_TYPE(p.logit_softcap * tanh(float(s)));
                    }
                    if (masked) {
                        // f16 widens exactly.
                        s = ACC_TYPE(float(s) + slope * unpackHalf2x16(mbits[m]).x);
                    }
                    tile_max = max(tile_max, float(s));
                }
                sv[m] = s;
            }
            [[unroll]] for (uint w = ROW_LANES / 2; w > 0; w /= 2) {
                tile_max = max(tile_max, subgroupShuffleXor(tile_max, w));
            }
            const float m_new = max(m_run, tile_max);
            // Nothing is accumulated while the maximum is still the initial −FLT_MAX/2.
            const float alpha = m_run == NEG_HALF_MAX ? 0.0 : exp(m_run - m_new);
            float sum = 0.0;
            [[unroll]] for (uint m4 = 0; m4 < KEYS_PER_LANE / 4; ++m4) {
                f16vec4 p4;
                [[unroll]] for (uint k = 0; k < 4; ++k) {
                    const uint m = 4 * m4 + k;
                    p4[k] = live[m] ? float16_t(exp(float(sv[m]) - m_new)) : float16_t(0.0);
                    sum += float(p4[k]);
                }
                Psh4[pbase + srow * PS4 + (slane * KEYS_PER_LANE) / 4 + m4] = p4;
            }
            [[unroll]] for (uint w = ROW_LANES / 2; w > 0; w /= 2) {
                sum += subgroupShuffleXor(sum, w);
            }
            l_run = l_run * alpha + sum;
            m_run = m_new;
            [[unroll]] for (uint m = 0; m < KEYS_PER_LANE; ++m) {
                Ssh[s_lane + m] = ACC_TYPE(alpha);
            }
        }
        subgroup_sync();

        // 4. O = O·α + P·V over the subgroup's keys on the cooperative matrices: per block b,
        //    the Br × 16 weights times V's 16 × 16 block b, added to O_b·α (ACC_TYPE; the
        //    order of the sum is the implementation's). A zero weight times a finite V adds
        //    exactly 0.
        coopmat<float16_t, gl_ScopeSubgroup, MAT, MAT, gl_MatrixUseA> pa;
        coopMatLoad(pa, Psh4, pbase, PS4, gl_CooperativeMatrixLayoutRowMajor);
        OMAT alpha_m;
        coopMatLoad(alpha_m, Ssh, sbase, SS, gl_CooperativeMatrixLayoutRowMajor);
        if (v_bad == 0) {
            [[unroll]] for (uint b = 0; b < O_BLOCKS; ++b) {
                coopmat<float16_t, gl_ScopeSubgroup, MAT, MAT, gl_MatrixUseB> vb;
                coopMatLoad(vb, Ksh, c_sg * KS4 + b * (MAT / 4), KS4,
                            gl_CooperativeMatrixLayoutRowMajor);
                O[b] = coopMatMulAdd(pa, vb, O[b] * alpha_m);
            }
        } else {
            // Some V half of the subgroup's tile is ±∞ or NaN (rare: raw f16 bits, or a block
            // scale past f16 range), and a zero weight must not meet it (0·∞ is NaN; ggml skips
            // masked keys). Each block of O·α goes through the subgroup's Ssh region, where
            // its lanes add the keys one at a time in key order, skipping zero weights, and
            // comes back. A rolled key loop keeps this rare copy small.
            [[unroll]] for (uint b = 0; b < O_BLOCKS; ++b) {
                subgroup_sync();
                coopMatStore(O[b] * alpha_m, Ssh, sbase, MAT, gl_CooperativeMatrixLayoutRowMajor);
                subgroup_sync();
                [[unroll]] for (uint h = 0; h < MAT * MAT / 4 / SG; ++h) {
                    const uint e = lane + SG * h;   // block_vec4's e
                    const uint at = sbase + 4 * e;
                    ACC_TYPEV4 o = block_vec4(at);
                    [[dont_unroll]] for (uint c = 0; c < SG_KEYS; ++c) {
                        o = pv_step(Psh4[pbase + (e / 4) * PS4 + c / 4][c % 4],
                                    Ksh[(c_sg + c) * KS4 + b * (MAT / 4) + e % 4], o);
                    }
                    Ssh[at] = o.x;
                    Ssh[at + 1] = o.y;
                    Ssh[at + 2] = o.z;
                    Ssh[at + 3] = o.w;
                }
                subgroup_sync();
                coopMatLoad(O[b], Ssh, sbase, MAT, gl_CooperativeMatrixLayoutRowMajor);
            }
        }
        // The next tile's K and S overwrite the Ksh rows and Ssh region read here.
        subgroup_sync();
    }

    // The combination: per row M = max_s M_s over the subgroups, each subgroup's O and L
    // rescaled by f_s = exp(M_s − M) (0 for a subgroup that saw no live key), added in
    // subgroup order.
    if (slane == 0) {
        sg_max[sg * Br + srow] = m_run;
        sg_sum[sg * Br + srow] = l_run;
    }
    barrier();
    if (tid < Br) {
        float mx = NEG_HALF_MAX;
        [[unroll]] for (uint s2 = 0; s2 < SUBGROUPS; ++s2) {
            mx = max(mx, sg_max[s2 * Br + tid]);
        }
        float l = 0.0;
        [[unroll]] for (uint s2 = 0; s2 < SUBGROUPS; ++s2) {
            const float ms = sg_max[s2 * Br + tid];
            if (ms != NEG_HALF_MAX) {
                l += sg_sum[s2 * Br + tid] * exp(ms - mx);
            }
        }
        row_scratch[tid] = mx;
        row_scratch[Br + tid] = l;
    }
    {
        // f_s as a matrix in the subgroup's Ssh region, like α.
        float mx = NEG_HALF_MAX;
        [[unroll]] for (uint s2 = 0; s2 < SUBGROUPS; ++s2) {
            mx = max(mx, sg_max[s2 * Br + srow]);
        }
        const float ms = sg_max[sg * Br + srow];
        const ACC_TYPE f = ACC_TYPE(ms == NEG_HALF_MAX ? 0.0 : exp(ms - mx));
        [[unroll]] for (uint m = 0; m < KEYS_PER_LANE; ++m) {
            Ssh[s_lane + m] = f;
        }
    }
    subgroup_sync();
    OMAT f_m;
    coopMatLoad(f_m, Ssh, sbase, SS, gl_CooperativeMatrixLayoutRowMajor);
    [[unroll]] for (uint b = 0; b < O_BLOCKS; ++b) {
        O[b] = O[b] * f_m;
    }
    // Subgroup s > 0 passes its O blocks to subgroup 0 through Ssh, END_BLOCKS at a time;
    // subgroup 0 adds them and stores the rows below N. The block loops run over all of O
    // with a test, so O is only ever indexed by loop constants: with b from b0 to
    // min(b0 + END_BLOCKS, O_BLOCKS) the H100's compiler kept O in local memory (exactly its
    // 128 bytes at D = 128), and every cm1 row ran 1.04-1.09x slower.
    [[unroll]] for (uint b0 = 0; b0 < O_BLOCKS; b0 += END_BLOCKS) {
        [[unroll]] for (uint s2 = 1; s2 < SUBGROUPS; ++s2) {
            barrier();
            if (sg == s2) {
                [[unroll]] for (uint b = 0; b < O_BLOCKS; ++b) {
                    if (b >= b0 && b < b0 + END_BLOCKS) {
                        coopMatStore(O[b], Ssh, (b - b0) * MAT * MAT, MAT,
                                     gl_CooperativeMatrixLayoutRowMajor);
                    }
                }
            }
            barrier();
            if (sg == 0) {
                [[unroll]] for (uint b = 0; b < O_BLOCKS; ++b) {
                    if (b >= b0 && b < b0 + END_BLOCKS) {
                        OMAT t;
                        coopMatLoad(t, Ssh, (b - b0) * MAT * MAT, MAT,
                                    gl_CooperativeMatrixLayoutRowMajor);
                        O[b] += t;
                    }
                }
            }
        }
        barrier();   // also orders the rows' M and L (row_scratch) before store_o
        if (sg == 0) {
            [[unroll]] for (uint b = 0; b < O_BLOCKS; ++b) {
                if (b >= b0 && b < b0 + END_BLOCKS) {
                    coopMatStore(O[b], Ssh, (b - b0) * MAT * MAT, MAT,
                                 gl_CooperativeMatrixLayoutRowMajor);
                }
            }
            subgroup_sync();
            [[unroll]] for (uint b = b0; b < min(b0 + END_BLOCKS, O_BLOCKS); ++b) {
                [[unroll]] for (uint h = 0; h < MAT * MAT / 4 / SG; ++h) {
                    const uint e = lane + SG * h;
                    const uint r = e / 4;
                    if (row_valid(r)) {
                        store_o(r, b * MAT + 4 * (e % 4),
                                vec4(block_vec4((b - b0) * MAT * MAT + 4 * e)));
                    }
                }
            }
        }
    }
}
