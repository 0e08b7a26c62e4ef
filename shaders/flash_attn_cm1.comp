#version 450

// flash_attn_cm1.comp: flash attention with KHR cooperative matrices (the cm1 path, §9.8):
// S = Q·Kᵀ on 16×16×16 f16 subgroup-scope matrices, the rest in ordinary arithmetic
// (interface in flash_attn_base.comp).
//
// Pipeline (host, §9.5): WorkGroupSize 128 with a required subgroup size of 32 and full
// subgroups, so 4 subgroups; Br = 16 query rows, Bc = 64 keys per tile. D is a multiple of 16
// (every head size upstream allows). The small-rows pipeline (Br = 1) is never selected
// (§12.8) and not supported here.
//
// Precision, as the interface states for this path:
//   Q·scale in f32, rounded to f16 (shared Qsh); K staged as f16 (quantized K: d·q in f32,
//   then rounded); S accumulated by the cooperative matrices in ACC_TYPE and kept in ACC_TYPE
//   (softcap and mask results rounded to ACC_TYPE); running maximum and sum in f32; P rounded
//   to f16 (the sum L adds the rounded weights, so the weights in O and L agree); V read in
//   f32 and multiplied by the f16 P in f32, then accumulated into O in ACC_TYPE (f16vec4 for
//   the f16acc variants: every add rounds to f16); the final O·float16_t(1/L) in ACC_TYPE.
//
// The workgroup's 4 subgroups are independent passes over their own keys: subgroup g takes keys
// 16g .. 16g + 15 of every tile [first, first + ncols), with its own running maximum M, sum L
// and O per row; nothing in the key loop is shared between subgroups (subgroup barriers only).
// Per tile and subgroup:
//   1. K staging: the subgroup's Ksh rows c = K[first + c] as f16, zero for c ≥ ncols (keys
//      past the split or KV are never read, so any KV and split length work). At D = 64 the
//      tile's K was fetched into registers during the previous tile; right after this tile's
//      staging the next tile's K, this tile's V and the softmax lanes' mask are fetched, so
//      their loads are in flight during steps 2 and 3.
//   2. S: the subgroup's 16 × 16 block of S, Σ over D/16 steps of Q[:, 16s..] × Kᵀ[16s.., cols],
//      stored row-major in its Ssh region.
//   3. softmax, ROW_LANES = 2 lanes per row, 8 consecutive keys each: keys with a −∞ mask (by
//      bits) and keys ≥ ncols are not live (weight exactly 0, no arithmetic on the infinity);
//      M' = max(M, max S) and the tile's Σ P over the row's lanes by subgroupShuffleXor (every
//      lane gets the same bits); α = exp(M − M'), P = f16(exp(S − M')), L = L·α + Σ P.
//   4. O (registers): O = O·α + Σ_c P_c·V_c over the subgroup's 16 keys, in key order. Lane l
//      holds slots l + 32i of the subgroup's Br × D/4 vec4s of O; at D = 64 and 128 all of a
//      lane's slots are the same 4 elements of different rows, so its V is one vec4 a key,
//      loaded at the tile's start.
// At the end the subgroups are combined (one rescale each: f_g = exp(M_g − max_g M_g)), in
// subgroup order, through shared memory. A row whose keys are all masked keeps L = 0 and is
// written as NaN (bits), like the scalar path; with split-k the reduce handles it.
//
// Shared memory (D = 256, f32 accumulators): Qsh 8.25 KiB + Ksh 33 KiB + Ssh 4 KiB + Psh4
// 2 KiB + row arrays 0.75 KiB: 48 KiB, the limit.
//
// Worked example (f16 K/V, D = 80, N = 20, KV = 70, H = 1): dispatch (2, 1, 1); workgroup 1
// takes queries 16..19 (rows 4..15 zero, never stored). Tile 0 holds keys 0..63, tile 1 keys
// 64..69; in tile 1 subgroup 0 takes keys 64..69 (Ksh rows 6..15 zero, not live) and
// subgroups 1..3 none (all zero, not live). Subgroup 2 computes S columns 32..47 of tile 0
// from five 16-wide slices of D. D/4 = 20 does not divide 32: lane 5 of a subgroup holds O
// slots 5, 37, 69, ... (rows 0, 1, 3, ...; elements 20..23, 68..71, 36..39, ...), each with its
// own V column, read 4 keys at a time. With D = 128 lane 5 would hold elements 20..23 of all
// 16 rows.

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
// O: lane l of a subgroup holds slots l + SG·i (i < SLOTS) of the Br × D/4 vec4s, slot o
// being row o / (D/4), elements 4·(o % (D/4)) .. +3. Its slots use V_SETS distinct vec4
// columns of V (one where D/4 divides SG, D/4 / SG where SG divides D/4, else one a slot).
const uint SLOTS = Br * (D / 4) / SG;
// Slots computed together (one test of their first row): a divisor of SLOTS (D/8).
const uint SLOT_GROUP = SLOTS % 4 == 0 ? 4 : 2;
const uint V_SETS = (D / 4) % SG == 0 ? (D / 4) / SG : (SG % (D / 4) == 0 ? 1 : SLOTS);
// With one V column a lane loads its keys' V once per tile, at the tile's start; otherwise in
// chunks of 4 keys during P·V.
const bool V_AHEAD = V_SETS == 1;
// K vec4s each lane stages per tile; they are fetched a tile ahead where they are few (at
// D = 128 ahead took 53 more registers and the H100's prefill row 3% longer).
const uint K_SLOTS = SG_KEYS * (D / 4) / SG;
const bool K_AHEAD = K_SLOTS <= 8;

// V as held in registers: f16 V widens exactly when used; block V is d·q in f32.
#if QUANT_K > 1
#define V_REG vec4
#else
#define V_REG f16vec4
#endif

// Shared rows are padded against bank conflicts (a row stride that is a multiple of 128 bytes
// puts a coopmat block's rows in the same banks): Q and K rows by 8 halves (Ksh in f16vec4
// units), S rows by 8 elements where D ≤ 128 (the factor 256 / (D + 128) is 1 there and 0
// above, where the padding would not fit in 48 KiB). Ksh, Ssh and Psh4 have one region per
// subgroup; at the end Ssh holds a subgroup's O, SLOT_GROUP slots at a time.
const uint QS = D + 8;
const uint KS4 = D / 4 + 2;
const uint SS = SG_KEYS + 8 * (256 / (D + 128));
const uint PS4 = SG_KEYS / 4 + 256 / (D + 128);
shared float16_t Qsh[Br * QS];
shared f16vec4 Ksh[Bc * KS4];
shared ACC_TYPE Ssh[SUBGROUPS * Br * SS];
shared f16vec4 Psh4[SUBGROUPS * Br * PS4];
// During the key loop each subgroup's α per row; at the end the rows' M and L (D = 256 with f32
// accumulators has no room for more: 48 KiB in all).
shared float row_scratch[SUBGROUPS * Br];
#define sg_alpha row_scratch
float row_max(uint r) { return row_scratch[r]; }
float row_sum(uint r) { return row_scratch[Br + r]; }
shared float sg_max[SUBGROUPS * Br];
shared float sg_sum[SUBGROUPS * Br];

// A subgroup's own shared data, written and read by its lanes only.
void subgroup_sync()
{
    subgroupMemoryBarrierShared();
    subgroupBarrier();
}

// Slot i's row and V column (vec4 index) for this lane.
uint slot_row(uint lane, uint i) { return (lane + SG * i) / (D / 4); }
uint v_column(uint lane, uint set) { return (lane + SG * set) % (D / 4); }
// Slot i computes when its subgroup's first row of that slot is below N (uniform: rows past
// N in a computing slot have zero Q and finite weights, and are never stored; decode's rows
// are mostly padding).
bool slot_live(uint i) { return row_valid((SG * i) / (D / 4)); }

// 1. The subgroup's keys of the tile as f16: fetch_k issues every load into registers
// (`vectors` = KV_VECTORS a constant in each call; keys past ncols re-read the tile's last key;
// the f16 rounding is done here), store_k writes them to the subgroup's Ksh rows, 0 past ncols.
// Behind a test at every load the loads went one at a time on the H100 (docs/bench.md,
// session 8). The next tile's K is fetched while this one's S, softmax and P·V run.
void fetch_k(const bool vectors, uint first, uint ncols, uint sg, uint lane,
             out f16vec4 x[K_SLOTS])
{
    [[unroll]] for (uint i = 0; i < K_SLOTS; ++i) {
        const uint e = lane + i * SG;
        const uint key = first + min(sg * SG_KEYS + e / (D / 4), ncols - 1);
        x[i] = f16vec4(load_k4_as(vectors, k_base, key, (e % (D / 4)) * 4));
    }
}

void fetch_k_any(uint first, uint ncols, uint sg, uint lane, out f16vec4 x[K_SLOTS])
{
    if (KV_VECTORS) {
        fetch_k(true, first, ncols, sg, lane, x);
    } else {
        fetch_k(false, first, ncols, sg, lane, x);
    }
}

void store_k(uint ncols, uint sg, uint lane, const in f16vec4 x[K_SLOTS])
{
    [[unroll]] for (uint i = 0; i < K_SLOTS; ++i) {
        const uint e = lane + i * SG;
        const uint c = sg * SG_KEYS + e / (D / 4);
        Ksh[c * KS4 + e % (D / 4)] = c < ncols ? x[i] : f16vec4(0.0);
    }
}

// V of the subgroup's keys c0 .. c0 + n − 1 (n = SG_KEYS or 4) at V column `col`, a key
// past ncols reading the tile's last key (in bounds; its P is 0).
void fetch_v(const bool vectors, uint first, uint c0, uint ncols, uint col,
             out V_REG vv[SG_KEYS])
{
    [[unroll]] for (uint m = 0; m < SG_KEYS; ++m) {
        vv[m] = V_REG(load_v4_as(vectors, v_base, first + min(c0 + m, ncols - 1), 4 * col));
    }
}
void fetch_v4(const bool vectors, uint first, uint c0, uint ncols, uint col, out V_REG vv[4])
{
    [[unroll]] for (uint m = 0; m < 4; ++m) {
        vv[m] = V_REG(load_v4_as(vectors, v_base, first + min(c0 + m, ncols - 1), 4 * col));
    }
}

// No component is ±∞ or NaN (tested on the bits: f16 V widens exactly).
bool finite4(vec4 v)
{
    return all(notEqual(floatBitsToUint(v) & 0x7F800000u, uvec4(0x7F800000u)));
}

// All of a lane's V this tile is finite. f16 V on the bits of packed pairs: a half is ±∞ or
// NaN when its exponent bits are all set, and only then does adding 0x0400 to them carry into
// its sign bit (no carry crosses into the other half); widening to f32 for finite4 cost the
// H200's prefill row 16%.
bool all_finite(const in V_REG vv[SG_KEYS])
{
#if QUANT_K > 1
    bool ok = true;
    [[unroll]] for (uint m = 0; m < SG_KEYS; ++m) {
        ok = ok && finite4(vv[m]);
    }
    return ok;
#else
    uint carries = 0;
    [[unroll]] for (uint m = 0; m < SG_KEYS; ++m) {
        carries |= (packFloat2x16(vv[m].xy) & 0x7C007C00u) + 0x04000400u;
        carries |= (packFloat2x16(vv[m].zw) & 0x7C007C00u) + 0x04000400u;
    }
    return (carries & 0x80008000u) == 0;
#endif
}

// o + p·v, skipping a zero weight when `guard` (so that 0·∞ is never added). f16 V: P·V is
// exact in f32, so fma in ACC_TYPE rounds as the product rounded to ACC_TYPE and then added
// (or once, if fused); block V (d·q in f32) is multiplied in f32 first.
ACC_TYPEV4 pv_step(const bool guard, float16_t pw, const V_REG v, ACC_TYPEV4 o)
{
#if QUANT_K > 1
    const ACC_TYPEV4 t = o + ACC_TYPEV4(float(pw) * v);
#else
    const ACC_TYPEV4 t = fma(ACC_TYPEV4(pw), ACC_TYPEV4(v), o);
#endif
    return (!guard || pw != float16_t(0.0)) ? t : o;
}

// Slot i's O over the keys c0 .. c0 + 3 of the subgroup's tile share (weights in Psh4).
ACC_TYPEV4 pv4(const bool guard, uint pbase, uint lane, uint i, uint c0, const V_REG v0,
               const V_REG v1, const V_REG v2, const V_REG v3, ACC_TYPEV4 o)
{
    const f16vec4 p4 = Psh4[pbase + slot_row(lane, i) * PS4 + c0 / 4];
    o = pv_step(guard, p4.x, v0, o);
    o = pv_step(guard, p4.y, v1, o);
    o = pv_step(guard, p4.z, v2, o);
    return pv_step(guard, p4.w, v3, o);
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
    ACC_TYPEV4 Of[SLOTS];
    [[unroll]] for (uint i = 0; i < SLOTS; ++i) {
        Of[i] = ACC_TYPEV4(0.0);
    }
    // Step 3's row and lane; the row's running maximum and sum over this subgroup's keys (the
    // same on both of its lanes).
    const uint srow = lane / ROW_LANES;
    const uint slane = lane % ROW_LANES;
    const float slope = alibi_slope(row_head(srow));
    float m_run = NEG_HALF_MAX;
    float l_run = 0.0;
    const bool masked = p.mask != 0 && row_valid(srow);
    const uint sbase = sg * Br * SS;
    const uint pbase = sg * Br * PS4;
    f16vec4 kv[K_SLOTS];
    if (K_AHEAD && kv_begin < kv_end) {
        fetch_k_any(kv_begin, min(Bc, kv_end - kv_begin), sg, lane, kv);
    }
    barrier();

    for (uint first = kv_begin; first < kv_end; first += Bc) {
        const uint ncols = min(Bc, kv_end - first);
        const uint c_sg = sg * SG_KEYS;   // the subgroup's first key in the tile

        if (!K_AHEAD) {
            fetch_k_any(first, ncols, sg, lane, kv);
        }
        store_k(ncols, sg, lane, kv);
        subgroup_sync();

        // Loads for later steps, in flight during S: V, the next tile's K, the softmax
        // lane's mask.
        V_REG vv[SG_KEYS];
        if (V_AHEAD) {
            if (KV_VECTORS) {
                fetch_v(true, first, c_sg, ncols, v_column(lane, 0), vv);
            } else {
                fetch_v(false, first, c_sg, ncols, v_column(lane, 0), vv);
            }
        }
        if (K_AHEAD && first + Bc < kv_end) {
            fetch_k_any(first + Bc, min(Bc, kv_end - first - Bc), sg, lane, kv);
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
            coopmat<ACC_TYPE, gl_ScopeSubgroup, MAT, MAT, gl_MatrixUseAccumulator> s =
                coopmat<ACC_TYPE, gl_ScopeSubgroup, MAT, MAT, gl_MatrixUseAccumulator>(0.0);
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

        // 3. Softmax update, ROW_LANES lanes per row: keys with a −∞ mask (by bits) and keys
        //    ≥ ncols are not live (weight exactly 0, no arithmetic on the infinity).
        {
            ACC_TYPE sv[KEYS_PER_LANE];
            bool live[KEYS_PER_LANE];
            float tile_max = NEG_HALF_MAX;
            [[unroll]] for (uint m = 0; m < KEYS_PER_LANE; ++m) {
                const uint c = slane * KEYS_PER_LANE + m;
                live[m] = c_sg + c < ncols && (!masked || mbits[m] != F16_NEG_INF_BITS);
                ACC_TYPE s = Ssh[sbase + srow * SS + c];
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
            if (slane == 0) {
                sg_alpha[sg * Br + srow] = alpha;
            }
        }
        subgroup_sync();

        // 4. O = O·α + Σ_c P_c·V_c over the subgroup's keys, in key order; P = 0 (keys past
        //    ncols, masked keys) adds nothing (0·∞ is never added: a select, where the lane's
        //    V is not all finite). The next tile's Psh4 and sg_alpha writes come after its two
        //    subgroup barriers.
        [[unroll]] for (uint i0 = 0; i0 < SLOTS; i0 += SLOT_GROUP) {
            if (slot_live(i0)) {
                [[unroll]] for (uint i = i0; i < i0 + SLOT_GROUP; ++i) {
                    Of[i] *= ACC_TYPE(sg_alpha[sg * Br + slot_row(lane, i)]);
                }
            }
        }
        if (V_AHEAD) {
            if (all_finite(vv)) {
                // A zero weight times a finite V adds exactly 0: no select (it cost the H100's
                // prefill row 38%). Slots in fours, keys outer, so that four slots' add chains
                // interleave (behind a test per row they ran one after another: the H100's
                // prefill row spent 61% of its time here).
                [[unroll]] for (uint i0 = 0; i0 < SLOTS; i0 += SLOT_GROUP) {
                    if (slot_live(i0)) {
                        [[unroll]] for (uint c0 = 0; c0 < SG_KEYS; c0 += 4) {
                            [[unroll]] for (uint i = i0; i < i0 + SLOT_GROUP; ++i) {
                                Of[i] = pv4(false, pbase, lane, i, c0, vv[c0], vv[c0 + 1],
                                            vv[c0 + 2], vv[c0 + 3], Of[i]);
                            }
                        }
                    }
                }
            } else {
                // The rare lane with a non-finite V: a rolled loop over the slots, each slot's
                // O taken and put back by compile-time index (selects; no dynamic index into
                // Of, which would move it to local memory). A second unrolled copy made the
                // pipeline 1.7 times larger and the H200's prefill row 1.26 times slower.
                [[dont_unroll]] for (uint i = 0; i < SLOTS; ++i) {
                    ACC_TYPEV4 o = Of[0];
                    [[unroll]] for (uint ii = 1; ii < SLOTS; ++ii) {
                        o = i == ii ? Of[ii] : o;
                    }
                    [[unroll]] for (uint c0 = 0; c0 < SG_KEYS; c0 += 4) {
                        o = pv4(true, pbase, lane, i, c0, vv[c0], vv[c0 + 1], vv[c0 + 2],
                                vv[c0 + 3], o);
                    }
                    [[unroll]] for (uint ii = 0; ii < SLOTS; ++ii) {
                        Of[ii] = i == ii ? o : Of[ii];
                    }
                }
            }
        } else {
            // Several V columns (D = 256, or D/4 not a divisor or multiple of SG): V in chunks
            // of 4 keys, every step guarded.
            for (uint c0 = 0; c0 < SG_KEYS; c0 += 4) {
                [[unroll]] for (uint set = 0; set < V_SETS; ++set) {
                    V_REG v4[4];
                    if (KV_VECTORS) {
                        fetch_v4(true, first, c_sg + c0, ncols, v_column(lane, set), v4);
                    } else {
                        fetch_v4(false, first, c_sg + c0, ncols, v_column(lane, set), v4);
                    }
                    [[unroll]] for (uint i = set; i < SLOTS; i += V_SETS) {
                        if (slot_live(i)) {
                            Of[i] = pv4(true, pbase, lane, i, c0, v4[0], v4[1], v4[2], v4[3],
                                        Of[i]);
                        }
                    }
                }
            }
        }
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
    [[unroll]] for (uint i = 0; i < SLOTS; ++i) {
        if (slot_live(i)) {
            const uint r = slot_row(lane, i);
            float mx = NEG_HALF_MAX;
            [[unroll]] for (uint s2 = 0; s2 < SUBGROUPS; ++s2) {
                mx = max(mx, sg_max[s2 * Br + r]);
            }
            const float ms = sg_max[sg * Br + r];
            Of[i] *= ACC_TYPE(ms == NEG_HALF_MAX ? 0.0 : exp(ms - mx));
        }
    }
    // Subgroup s > 0 passes its O to subgroup 0 through Ssh, SLOT_GROUP slots a pass (the
    // same lane and slot on both sides; fixed loop bounds keep Of in registers).
    [[unroll]] for (uint i0 = 0; i0 < SLOTS; i0 += SLOT_GROUP) {
        if (!slot_live(i0)) {
            break;   // uniform: the later slots' rows are past N too
        }
        [[unroll]] for (uint s2 = 1; s2 < SUBGROUPS; ++s2) {
            barrier();
            if (sg == s2) {
                [[unroll]] for (uint i = i0; i < i0 + SLOT_GROUP; ++i) {
                    const uint at = ((i - i0) * SG + lane) * 4;
                    Ssh[at] = Of[i].x;
                    Ssh[at + 1] = Of[i].y;
                    Ssh[at + 2] = Of[i].z;
                    Ssh[at + 3] = Of[i].w;
                }
            }
            barrier();
            if (sg == 0) {
                [[unroll]] for (uint i = i0; i < i0 + SLOT_GROUP; ++i) {
                    const uint at = ((i - i0) * SG + lane) * 4;
                    Of[i] += ACC_TYPEV4(Ssh[at], Ssh[at + 1], Ssh[at + 2], Ssh[at + 3]);
                }
            }
        }
    }
    barrier();   // the rows' M and L (row_scratch), when there is no pass
    if (sg == 0) {
        [[unroll]] for (uint i = 0; i < SLOTS; ++i) {
            const uint r = slot_row(lane, i);
            if (row_valid(r)) {
                store_o(r, 4 * ((lane + SG * i) % (D / 4)), vec4(Of[i]));
            }
        }
    }
}
