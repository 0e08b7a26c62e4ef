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
// Per tile of keys [first, first + ncols):
//   1. K staging: Ksh row c = K[first + c] as f16, zero for c ≥ ncols (keys past the
//      split or KV are never read, so any KV and split length work). The tile's K was fetched
//      into registers during the previous tile; right after this tile's staging the next
//      tile's K, this tile's V (grouped step 4) and the softmax lanes' mask are fetched, so
//      their loads are in flight during steps 2 and 3.
//   2. S: subgroup g computes columns 16g .. 16g + 15 of S (Bc / 16 = 4 blocks for 4
//      subgroups) as Σ over D/16 steps of Q[:, 16s..] × Kᵀ[16s.., cols], stored row-major in
//      Ssh.
//   3. softmax, ROW_LANES = WorkGroupSize/Br consecutive invocations per row (keys
//      lane, lane + ROW_LANES, ...): keys with a −∞ mask (by bits) and keys ≥ ncols are not
//      live (weight exactly 0, no arithmetic on the infinity); the new maximum
//      M' = max(M, max S) and the tile's Σ P are reduced over the row's lanes by butterfly
//      (subgroupShuffleXor: the lanes are in one subgroup, and every lane gets the same bits);
//      α = exp(M − M'), P = f16(exp(S − M')), L = L·α + Σ P, with M and L in registers.
//   4. O (registers): O = O·α + Σ_c P_c·V_c. Grouped (D = 32, 64, 128 at the host's sizes):
//      KEY_GROUPS adjacent lanes own the same 4 elements of every row, each lane the partial
//      sum over its own KEYS_PER_GROUP consecutive keys of every tile (V from registers, read
//      once per workgroup); the partial sums are added at the end by butterfly over the
//      groups. Otherwise each invocation owns fixed vec4 slots and sums all keys: when every
//      slot of an invocation has the same elements (D/4 divides WorkGroupSize) V is read once
//      per key for all of them, in chunks of V_CHUNK keys.
// A row whose keys are all masked keeps L = 0 and is written as NaN (bits), like the scalar
// path; with split-k the reduce handles it.
//
// Shared memory (D = 256, f32 accumulators): Qsh 8.25 KiB + Ksh 33 KiB + Ssh 4 KiB + Psh4 2 KiB
// + 3 row arrays: 47.4 KiB.
//
// Worked example (f16 K/V, D = 80, N = 20, KV = 70, H = 1): dispatch (2, 1, 1); workgroup 1
// takes queries 16..19 (rows 4..15 zero, never stored). Tile 0 holds keys 0..63, tile 1 keys
// 64..69 (Ksh rows 6..63 zero, not live). Subgroup 2 computes S columns 32..47 from five
// 16-wide slices of D. D/4 = 20 does not divide 128, so step 4 is not grouped: invocation 5
// owns O slots 5, 133, 261 (rows 0, 6, 13; elements 20..23, 52..55, 4..7 of their rows). With
// D = 128 it would be grouped: 4 groups, invocation 5 in group 1 owning elements 4..7 of all
// 16 rows over keys 16..31 of each tile.

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
const uint SUBGROUPS = WorkGroupSize / 32;
// O slots (vec4) per invocation (the chunked and general step 4).
const uint O_SLOTS = (Br * D / 4 + WorkGroupSize - 1) / WorkGroupSize;
// Invocations per row in step 3 (8 for the host's Br = 16, WorkGroupSize = 128), and keys each.
const uint ROW_LANES = WorkGroupSize / Br;
const uint KEYS_PER_LANE = Bc / ROW_LANES;
// Every O slot of an invocation covers the same 4 elements of its row.
const bool SAME_D = (WorkGroupSize % (D / 4)) == 0;
// Keys whose V the chunked step 4 loads together (Bc is a multiple of 16).
const uint V_CHUNK = 8;
// The K tile's vec4s, and those each invocation stages in step 1.
const uint K_VECS = Bc * D / 4;
const uint K_SLOTS = (K_VECS + WorkGroupSize - 1) / WorkGroupSize;

// Grouped step 4 (KEY_GROUPS adjacent lanes share 4 elements of every row, each lane its own
// KEYS_PER_GROUP consecutive keys of the tile): a lane's V is KEYS_PER_GROUP vec4s, loaded
// once per workgroup and early (before S), and its O is all Br rows at its 4 elements; the
// groups' partial sums are added at the end (subgroupShuffleXor). Where D/4 divides
// WorkGroupSize in 4 to 16 groups (V registers; one subgroup; Bc, a multiple of 16, splits
// evenly, into multiples of 4 keys as P is read 4 weights a load; at most WorkGroupSize/D_split
// groups for the host's D_split ≤ 8, the error model's bound on partial sums per element):
// D = 32, 64, 128 at the host's sizes. Else step 4 reads V in chunks of V_CHUNK keys, every
// lane all keys.
// (KEY_GROUPS rounds up, so it is at least 1. The H100's pipeline compiler crashed (SIGSEGV)
// on `SAME_D && Bc % KEY_GROUPS == 0` and on `SAME_D && KEY_GROUPS <= WorkGroupSize /
// D_split` as specialization-constant expressions, hence the plain bounds.)
const uint KEY_GROUPS = (WorkGroupSize + D / 4 - 1) / (D / 4);
const bool GROUPED = SAME_D && KEY_GROUPS >= 4 && KEY_GROUPS <= 16;
const uint KEYS_PER_GROUP = Bc / KEY_GROUPS;

// V as held in registers: f16 V widens exactly when used; block V is d·q in f32.
#if QUANT_K > 1
#define V_REG vec4
#else
#define V_REG f16vec4
#endif

// Shared rows are padded against bank conflicts (a row stride that is a multiple of 128 bytes
// puts a coopmat block's rows, and the softmax lanes' rows, in the same banks): Q and K rows by
// 8 halves (Ksh in f16vec4 units), S and P rows by 8 elements where D ≤ 128 (the factor
// 256 / (D + 128) is 1 there and 0 above, where the padding would not fit in 48 KiB).
const uint QS = D + 8;
const uint KS4 = D / 4 + 2;
const uint SS = Bc + 8 * (256 / (D + 128));
shared float16_t Qsh[Br * QS];
shared f16vec4 Ksh[Bc * KS4];
shared ACC_TYPE Ssh[Br * SS];
// P, row-major with stride SS (a multiple of 4): vectors, so the grouped step 4 reads four
// consecutive keys' weights in one load.
shared f16vec4 Psh4[Br * SS / 4];
float16_t psh(uint at) { return Psh4[at / 4][at % 4]; }
shared float row_max[Br];
shared float row_sum[Br];
shared float row_alpha[Br];

// 1. The K tile as f16: fetch_k issues every load of the unrolled slots into registers
// (`vectors` = KV_VECTORS a constant in each call; keys past ncols re-read the tile's last key;
// the f16 rounding is store_k's Ksh rounding, done earlier), store_k writes them to Ksh, 0 past
// ncols. Behind a test at every load the loads went one at a time on the H100 (docs/bench.md,
// session 8). The next tile's K is fetched while this one's S and softmax run.
void fetch_k(const bool vectors, uint first, uint ncols, out f16vec4 x[K_SLOTS])
{
    [[unroll]] for (uint i = 0; i < K_SLOTS; ++i) {
        const uint e = min(gl_LocalInvocationID.x + i * WorkGroupSize, K_VECS - 1);
        const uint key = first + min(e / (D / 4), ncols - 1);
        x[i] = f16vec4(load_k4_as(vectors, k_base, key, (e % (D / 4)) * 4));
    }
}

void fetch_k_any(uint first, uint ncols, out f16vec4 x[K_SLOTS])
{
    if (KV_VECTORS) {
        fetch_k(true, first, ncols, x);
    } else {
        fetch_k(false, first, ncols, x);
    }
}

void store_k(uint ncols, const in f16vec4 x[K_SLOTS])
{
    [[unroll]] for (uint i = 0; i < K_SLOTS; ++i) {
        const uint e = gl_LocalInvocationID.x + i * WorkGroupSize;
        if (e < K_VECS) {
            const uint c = e / (D / 4);
            const f16vec4 kc = c < ncols ? x[i] : f16vec4(0.0);
            Ksh[c * KS4 + e % (D / 4)] = kc;
        }
    }
}

// The grouped step 4's V: keys c0 .. c0 + KEYS_PER_GROUP - 1 of the tile at d0, a key past
// ncols reading the tile's last key (in bounds; its P is 0).
void fetch_v_group(const bool vectors, uint first, uint c0, uint ncols, uint d0,
                   out V_REG vv[KEYS_PER_GROUP])
{
    [[unroll]] for (uint m = 0; m < KEYS_PER_GROUP; ++m) {
        vv[m] = V_REG(load_v4_as(vectors, v_base, first + min(c0 + m, ncols - 1), d0));
    }
}

// The chunked step 4's V rows of keys c0 .. c0 + V_CHUNK - 1 at d0, in one basic block (see
// fetch_k); a key past ncols reads the tile's last key (in bounds).
void load_v_chunk(const bool vectors, uint first, uint c0, uint ncols, uint d0,
                  out vec4 vv[V_CHUNK])
{
    [[unroll]] for (uint j = 0; j < V_CHUNK; ++j) {
        vv[j] = load_v4_as(vectors, v_base, first + min(c0 + j, ncols - 1), d0);
    }
}

// No component is ±∞ or NaN (tested on the bits: f16 V widens exactly).
bool finite4(vec4 v)
{
    return all(notEqual(floatBitsToUint(v) & 0x7F800000u, uvec4(0x7F800000u)));
}

// The grouped step 4 of row r: O·α + Σ P·V over the lane's keys, in key order. `guard` (a
// constant at each call) skips zero weights, so that 0·∞ is never added. f16 V: P·V is exact in
// f32, so fma in ACC_TYPE rounds as the product rounded to ACC_TYPE and then added (or once, if
// fused); block V (d·q in f32) is multiplied in f32 first.
ACC_TYPEV4 pv_grouped(const bool guard, uint r, uint vg, const in V_REG vv[KEYS_PER_GROUP],
                      ACC_TYPEV4 o)
{
    o *= ACC_TYPE(row_alpha[r]);
    [[unroll]] for (uint m4 = 0; m4 < KEYS_PER_GROUP / 4; ++m4) {
        const f16vec4 p4 = Psh4[(r * SS + vg * KEYS_PER_GROUP) / 4 + m4];
        [[unroll]] for (uint k = 0; k < 4; ++k) {
            const uint m = 4 * m4 + k;
#if QUANT_K > 1
            const ACC_TYPEV4 t = o + ACC_TYPEV4(float(p4[k]) * vv[m]);
#else
            const ACC_TYPEV4 t = fma(ACC_TYPEV4(p4[k]), ACC_TYPEV4(vv[m]), o);
#endif
            o = (!guard || p4[k] != float16_t(0.0)) ? t : o;
        }
    }
    return o;
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
            data_o[split_l_offset(r)] = row_sum[r];
            data_o[split_m_offset(r)] = row_max[r];
        }
    } else {
        vec4 out4 = vec4(ROW_NAN);
        if (row_sum[r] != 0.0) {
            out4 = vec4(ACC_TYPEV4(o4) * ACC_TYPE(float16_t(1.0 / row_sum[r])));
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

    // Q rows: q·scale in f32, rounded to f16 (rows past N are zero and never stored).
    for (uint e = tid; e < Br * D; e += WorkGroupSize) {
        const uint r = e / D;
        float q = 0.0;
        if (row_valid(r)) {
            q = data_q[q_base + (row_tile * Br + r) * q_stride + e % D] * p.scale;
        }
        Qsh[r * QS + e % D] = float16_t(q);
    }
    // O: the grouped layout's Br rows at (vg, vd), or the O_SLOTS slots tid + i·WorkGroupSize
    // (the unused part of the array is never read, and compiled away).
    ACC_TYPEV4 Of[Br + O_SLOTS];
    [[unroll]] for (uint i = 0; i < Br + O_SLOTS; ++i) {
        Of[i] = ACC_TYPEV4(0.0);
    }
    const uint vg = tid % KEY_GROUPS;
    const uint vd = (tid / KEY_GROUPS) * 4;
    // Step 3's row and lane; the row's running maximum and sum (the same on all its lanes).
    const uint srow = tid / ROW_LANES;
    const uint slane = tid % ROW_LANES;
    const float slope = alibi_slope(row_head(srow));
    float m_run = NEG_HALF_MAX;
    float l_run = 0.0;
    const bool masked = p.mask != 0 && row_valid(srow);
    f16vec4 kv[K_SLOTS];
    [[unroll]] for (uint i = 0; i < K_SLOTS; ++i) {
        kv[i] = f16vec4(0.0);
    }
    if (kv_begin < kv_end) {
        fetch_k_any(kv_begin, min(Bc, kv_end - kv_begin), kv);
    }
    barrier();

    for (uint first = kv_begin; first < kv_end; first += Bc) {
        const uint ncols = min(Bc, kv_end - first);

        store_k(ncols, kv);
        barrier();

        // Loads for later steps, in flight during S: the grouped V, the next tile's K, the
        // softmax lane's mask.
        V_REG vv[KEYS_PER_GROUP];
        [[unroll]] for (uint m = 0; m < KEYS_PER_GROUP; ++m) {
            vv[m] = V_REG(0.0);
        }
        if (GROUPED) {
            if (KV_VECTORS) {
                fetch_v_group(true, first, vg * KEYS_PER_GROUP, ncols, vd, vv);
            } else {
                fetch_v_group(false, first, vg * KEYS_PER_GROUP, ncols, vd, vv);
            }
        }
        if (first + Bc < kv_end) {
            fetch_k_any(first + Bc, min(Bc, kv_end - first - Bc), kv);
        }
        const uint mask_row = (row_tile * Br + srow) * m_stride + first;
        uint mbits[KEYS_PER_LANE];
        float mval[KEYS_PER_LANE];
        [[unroll]] for (uint m = 0; m < KEYS_PER_LANE; ++m) {
            mbits[m] = 0;
            mval[m] = 0.0;
        }
        if (masked) {
            [[unroll]] for (uint m = 0; m < KEYS_PER_LANE; ++m) {
                const uint c = min(slane + m * ROW_LANES, ncols - 1);
                mbits[m] = uint(data_m_bits[mask_row + c]);
                mval[m] = float(data_m[mask_row + c]);
            }
        }

        // 2. S = Q·Kᵀ, 16 columns per subgroup and block.
        for (uint cb = gl_SubgroupID; cb < Bc / MAT; cb += SUBGROUPS) {
            coopmat<ACC_TYPE, gl_ScopeSubgroup, MAT, MAT, gl_MatrixUseAccumulator> s =
                coopmat<ACC_TYPE, gl_ScopeSubgroup, MAT, MAT, gl_MatrixUseAccumulator>(0.0);
            for (uint dk = 0; dk < D; dk += MAT) {
                coopmat<float16_t, gl_ScopeSubgroup, MAT, MAT, gl_MatrixUseA> qa;
                coopmat<float16_t, gl_ScopeSubgroup, MAT, MAT, gl_MatrixUseB> kb;
                coopMatLoad(qa, Qsh, dk, QS, gl_CooperativeMatrixLayoutRowMajor);
                // Kᵀ block (d, c) = K element dk + d of key 16cb + c: column-major, stride
                // KS4 (in f16vec4 units, as the offset).
                coopMatLoad(kb, Ksh, cb * MAT * KS4 + dk / 4, KS4,
                            gl_CooperativeMatrixLayoutColumnMajor);
                s = coopMatMulAdd(qa, kb, s);
            }
            coopMatStore(s, Ssh, cb * MAT, SS, gl_CooperativeMatrixLayoutRowMajor);
        }
        barrier();

        // 3. Softmax update, ROW_LANES invocations per row.
        {
            const uint r = srow;
            ACC_TYPE sv[KEYS_PER_LANE];
            bool live[KEYS_PER_LANE];
            float tile_max = NEG_HALF_MAX;
            [[unroll]] for (uint m = 0; m < KEYS_PER_LANE; ++m) {
                const uint c = slane + m * ROW_LANES;
                live[m] = c < ncols && (!masked || mbits[m] != F16_NEG_INF_BITS);
                ACC_TYPE s = Ssh[r * SS + c];
                if (live[m]) {
                    if (p.logit_softcap != 0.0) {
                        s = ACC_TYPE(p.logit_softcap * tanh(float(s)));
                    }
                    if (masked) {
                        s = ACC_TYPE(float(s) + slope * mval[m]);
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
            [[unroll]] for (uint m = 0; m < KEYS_PER_LANE; ++m) {
                float16_t pc = float16_t(0.0);
                if (live[m]) {
                    pc = float16_t(exp(float(sv[m]) - m_new));
                }
                const uint at = r * SS + slane + m * ROW_LANES;
                Psh4[at / 4][at % 4] = pc;
                sum += float(pc);
            }
            [[unroll]] for (uint w = ROW_LANES / 2; w > 0; w /= 2) {
                sum += subgroupShuffleXor(sum, w);
            }
            l_run = l_run * alpha + sum;
            m_run = m_new;
            if (slane == 0) {
                row_alpha[r] = alpha;
            }
        }
        barrier();

        // 4. O = O·α + Σ_c P_c·V_c, keys outer within a lane; the sums run in key order, and
        //    P = 0 (keys past ncols, masked keys) adds nothing (0·∞ is never added: a select,
        //    in the grouped step only where the lane's V is not all finite). The next tile's
        //    step 1 writes only Ksh, and its barrier orders its step 3 (Psh4, row_alpha) after
        //    this.
        if (GROUPED) {
            // A zero weight times a finite V adds exactly 0, so the select is needed only
            // where one of the lane's V is not finite (it cost the H100's prefill row 38%).
            bool v_finite = true;
#if QUANT_K > 1
            [[unroll]] for (uint m = 0; m < KEYS_PER_GROUP; ++m) {
                v_finite = v_finite && finite4(vv[m]);
            }
#else
            // On the bits of packed f16 pairs: a half is ±∞ or NaN when its exponent bits are
            // all set, and only then does adding 0x0400 to them carry into its sign bit (no
            // carry crosses into the other half). Widening to f32 for finite4 cost the H200's
            // prefill row 16%.
            uint carries = 0;
            [[unroll]] for (uint m = 0; m < KEYS_PER_GROUP; ++m) {
                carries |= (packFloat2x16(vv[m].xy) & 0x7C007C00u) + 0x04000400u;
                carries |= (packFloat2x16(vv[m].zw) & 0x7C007C00u) + 0x04000400u;
            }
            v_finite = (carries & 0x80008000u) == 0;
#endif
            if (v_finite) {
                // Rows in fours, skipping fours past N (uniform: in decode most rows are
                // padding). Behind a test per row the rows' add chains ran one after another:
                // the H100's prefill row spent 61% of its time here. Rows past N in a valid four
                // compute with finite P (zero Q) and are never stored.
                [[unroll]] for (uint r0 = 0; r0 < Br; r0 += 4) {
                    if (row_valid(r0)) {
                        [[unroll]] for (uint r = r0; r < min(r0 + 4, Br); ++r) {
                            Of[r] = pv_grouped(false, r, vg, vv, Of[r]);
                        }
                    }
                }
            } else {
                // The rare lane with a non-finite V: a rolled loop over the rows, each row's O
                // taken and put back by compile-time index (selects; no dynamic index into
                // Of, which would move it to local memory). A second unrolled copy of the
                // step made the pipeline 1.7 times larger and the H200's prefill row 1.26
                // times slower (instruction fetch).
                [[dont_unroll]] for (uint r = 0; r < Br; ++r) {
                    ACC_TYPEV4 o = Of[0];
                    [[unroll]] for (uint rr = 1; rr < Br; ++rr) {
                        o = r == rr ? Of[rr] : o;
                    }
                    o = pv_grouped(true, r, vg, vv, o);
                    [[unroll]] for (uint rr = 0; rr < Br; ++rr) {
                        Of[rr] = r == rr ? o : Of[rr];
                    }
                }
            }
            continue;
        }
        [[unroll]] for (uint i = 0; i < O_SLOTS; ++i) {
            const uint o = tid + i * WorkGroupSize;
            if (o < Br * D / 4) {
                Of[i] = Of[i] * ACC_TYPE(row_alpha[o / (D / 4)]);
            }
        }
        if (SAME_D) {
            // Keys in chunks of V_CHUNK, their loads together (load_v_chunk): with a load a
            // key, each behind an alignment test, the decode rows spent 44% of their time on
            // V on the H100.
            const uint d0 = (tid % (D / 4)) * 4;
            for (uint c0 = 0; c0 < ncols; c0 += V_CHUNK) {
                vec4 vc[V_CHUNK];
                if (KV_VECTORS) {
                    load_v_chunk(true, first, c0, ncols, d0, vc);
                } else {
                    load_v_chunk(false, first, c0, ncols, d0, vc);
                }
                [[unroll]] for (uint j = 0; j < V_CHUNK; ++j) {
                    [[unroll]] for (uint i = 0; i < O_SLOTS; ++i) {
                        const uint o = tid + i * WorkGroupSize;
                        const float16_t pc = o < Br * D / 4 ? psh((o / (D / 4)) * SS + c0 + j)
                                                            : float16_t(0.0);
                        Of[i] = pc != float16_t(0.0) ? Of[i] + ACC_TYPEV4(float(pc) * vc[j]) : Of[i];
                    }
                }
            }
        } else {
            for (uint c = 0; c < ncols; ++c) {
                for (uint i = 0; i < O_SLOTS; ++i) {
                    const uint o = tid + i * WorkGroupSize;
                    if (o >= Br * D / 4) {
                        break;
                    }
                    const float16_t pc = psh((o / (D / 4)) * SS + c);
                    if (pc != float16_t(0.0)) {
                        Of[i] += ACC_TYPEV4(float(pc) * load_v4(v_base, first + c, (o % (D / 4)) * 4));
                    }
                }
            }
        }
    }
    // The rows' L and M for the results.
    if (slane == 0) {
        row_sum[srow] = l_run;
        row_max[srow] = m_run;
    }
    barrier();

    // Results.
    if (GROUPED) {
        // The KEY_GROUPS lanes of an element add their partial sums (butterfly: every lane
        // gets the same bits); the group's first lane writes.
        [[unroll]] for (uint r = 0; r < Br; ++r) {
            if (row_valid(r)) {
                ACC_TYPEV4 o = Of[r];
                [[unroll]] for (uint w = 1; w < KEY_GROUPS; w *= 2) {
                    // Through f32 (exact for f16 O): no f16 subgroup extension needed.
                    o += ACC_TYPEV4(subgroupShuffleXor(vec4(o), w));
                }
                if (vg == 0) {
                    store_o(r, vd, vec4(o));
                }
            }
        }
        return;
    }
    for (uint i = 0; i < O_SLOTS; ++i) {
        const uint o = tid + i * WorkGroupSize;
        if (o >= Br * D / 4) {
            break;
        }
        const uint r = o / (D / 4);
        if (row_valid(r)) {
            store_o(r, (o % (D / 4)) * 4, vec4(Of[i]));
        }
    }
}
