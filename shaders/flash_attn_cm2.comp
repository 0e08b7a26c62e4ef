#version 450

// flash_attn_cm2.comp: flash attention with NV cooperative matrix 2 (the cm2 path, §9.8):
// workgroup-scope matrices for S = Q·Kᵀ and P·V, with Q, K, V and P staged through shared
// memory by ordinary code (interface in flash_attn_base.comp; upstream binds the same buffers
// as byte arrays and loads them through tensor layouts, which reads the same bytes).
//
// Pipeline (host, §9.5): small rows (N ≤ 32): Br = 32, Bc = 32, WorkGroupSize 256 when
// D mod 32 == 0, else 128; large rows: Br = 64, WorkGroupSize 128, Bc = 32 for quantized K/V or
// D = 256, else 64. Clamp (spec constant 4) is not needed: every key, row and mask read is
// bounds-checked, so aligned and unaligned pipelines compute the same thing.
//
// Precision, as the interface states for this path (ACC_TYPE float, or float16_t for the
// f16acc variants):
//   Q converted to f16, then multiplied by float16_t(scale) in f16; K and V decoded as f16
//   (f16 data as is; quantized blocks in f16 arithmetic like upstream's decode callbacks:
//   d·q rounded, plus m rounded); S = Q·Kᵀ accumulated in ACC_TYPE; softcap and mask in
//   ACC_TYPE (tanh evaluated in f32 and rounded); running maximum and sum, the exponentials
//   and the rescale factor in ACC_TYPE; P rounded to f16 (L adds the rounded weights); P·V with
//   an f16 accumulator per tile, converted and added to O in ACC_TYPE; the final O·(1/L) in
//   ACC_TYPE.
//
// Per tile of keys [first, first + ncols):
//   1. K staging: stage[c·KS + d] = K[first + c][d] (f16), zero for c ≥ ncols; S = Q·Kᵀ, stored
//      row-major to Ssh.
//   2. softmax, LANES invocations per row: keys with a −∞ mask (by bits) and keys ≥ ncols are
//      not live (weight exactly 0, no arithmetic on the infinity); M' = max(M, max S),
//      α = exp(M − M') (0 before the first live key), P = f16(exp(S − M')), L = L·α + Σ P.
//   3. O = O·α per row (per-element operation reading α from shared memory); V staging as in
//      1 (zero rows past ncols, so the NaN keys a cache holds beyond KV never meet a zero
//      weight); O += f16(P·V).
// At the end O·(1/L) is stored through a tensor layout of N rows, which drops the rows past N;
// a row whose keys are all masked keeps L = 0 and is written as NaN (bits), like the scalar
// path. With split-k the unnormalised O, L and M go to the scratch (§9.7).
//
// Shared memory: stage max(Bc·(D + 8), Br·QC, Br·(Bc + 8)) f16 + Ssh Br·(Bc + 8) ACC_TYPE + row
// arrays (rows padded, see KS).
// Workgroup-scope cooperative matrices leave maxComputeSharedMemorySize minus
// cooperativeMatrixWorkgroupScopeReservedSharedMemory (48 − 8 = 40 KiB on the H100), so:
// - Q is staged in column chunks of QC: all of D when Br ≤ Bc, else 16 columns (Br = 64,
//   Bc = 32). S = Q·Kᵀ is then a chain of D/QC coopMatMulAdd steps into one accumulator:
//   still a D-term sum in ACC_TYPE in some order, as the error model assumes.
// - P (f16) lives in stage: once S is in Ssh the staged keys are dead, and P is loaded into
//   its matrix before V is staged over it.
// With all of Q and a separate P the H100's layer rejected Br = 64, D = 256 (40.75 KiB with
// f16 accumulators, 45.25 KiB f32) and Br = Bc = 64, D = 128 (41.25 KiB f32)
// (VUID-RuntimeSpirv-maxComputeSharedMemorySize-10168). Now at most 36.25 KiB (Br = Bc = 64,
// D = 128, f32; Br = 64, Bc = 32, D = 256: 27.75 KiB).
//
// Worked example (q4_1 K/V, D = 64, N = 1, H = 8, H_kv = 2, KV = 40): GQA mode with ratio 4
// (N = 4 ≤ 32: small rows, Br = Bc = 32, 256 invocations), dispatch (1, 2, 1). Workgroup
// (0, 1, 0) has heads 4..7 as rows 0..3 (rows 4..31 zero), K/V head 1; tile 0 holds keys
// 0..31, tile 1 keys 32..39 (stage rows 8..31 zero). Row 2 is stored at dst[(4 + 2)·64 ..].

#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_KHR_cooperative_matrix : enable
#extension GL_NV_cooperative_matrix2 : enable
#extension GL_KHR_shader_subgroup_shuffle : enable

#define FA_F16_DECODE 1
#include "flash_attn_base.comp"

// Q columns per staged chunk (see "Shared memory" above).
const uint QC = Br > Bc ? 16 : D;
const uint Q_CHUNKS = D / QC;
// Staged rows are padded against bank conflicts (a row stride that is a multiple of 128 bytes
// puts a matrix load's rows, and the softmax lanes' rows, in the same banks): K and V rows by
// 8 halves, P and S rows by 8 elements.
const uint KS = D + 8;
const uint PS = Bc + 8;
const uint STAGE_KQ = Bc * KS > Br * QC ? Bc * KS : Br * QC;
const uint STAGE_SIZE = STAGE_KQ > Br * PS ? STAGE_KQ : Br * PS;

// The softmax step gives each row LANES consecutive invocations (8 with Br = 32 and 256
// invocations), KEYS_PER_LANE consecutive keys each, and combines the lanes' maxima and sums by
// shuffles: LANES divides the subgroup (32 on NVIDIA, the only cm2 devices). One invocation
// per row, reading the mask serially, took most of a decode tile's time; with the keys
// interleaved (lane, lane + LANES, ...) and a 2-byte load per mask element, the prefill row
// (N = 512, KV 4096, D 128) took 1,198 µs on the H100, with a lane's keys consecutive and
// read 4 to a load 863 µs.
const uint LANES = WorkGroupSize / Br;
const uint KEYS_PER_LANE = Bc / LANES;

shared float16_t stage[STAGE_SIZE];   // Q chunks, K, then P (row-major Br x Bc), then V
shared ACC_TYPE Ssh[Br * PS];
shared ACC_TYPE row_max[Br];
shared ACC_TYPE row_sum[Br];
shared ACC_TYPE row_alpha[Br];
shared ACC_TYPE row_inv[Br];
shared bool row_seen[Br];

ACC_TYPE times_alpha(const in uint32_t r, const in uint32_t c, const in ACC_TYPE e)
{
    return e * row_alpha[r];
}

ACC_TYPE times_inverse(const in uint32_t r, const in uint32_t c, const in ACC_TYPE e)
{
    return e * row_inv[r];
}

// A fully masked row (L = 0) is NaN.
float nan_if_empty(const in uint32_t r, const in uint32_t c, const in float e)
{
    return row_sum[r] == ACC_TYPE(0.0) ? ROW_NAN : e;
}

// Staging keys first .. first + ncols − 1 of K (or V) as f16 rows of D, zero past ncols, in
// two steps: fetch_keys issues every load of the tile into registers (constant slot count,
// `vectors` = KV_VECTORS a constant in each call, keys past ncols re-reading the tile's last
// key, in bounds), store_keys writes them to stage. Loads behind a loop and a test per load
// went one at a time on the H100; and V's loads are issued before the softmax and stored after
// it, so their latency hides behind it.
const uint KV_VECS = Bc * D / 4;
const uint KV_SLOTS = (KV_VECS + WorkGroupSize - 1) / WorkGroupSize;

void fetch_keys(const bool is_v, const bool vectors, uint first, uint ncols, out f16vec4 x[KV_SLOTS])
{
    [[unroll]] for (uint i = 0; i < KV_SLOTS; ++i) {
        const uint e = min(gl_LocalInvocationID.x + i * WorkGroupSize, KV_VECS - 1);
        const uint key = first + min(e / (D / 4), ncols - 1);
        const uint d = (e % (D / 4)) * 4;
        x[i] = is_v ? load_v4_f16_as(vectors, v_base, key, d) : load_k4_f16_as(vectors, k_base, key, d);
    }
}

void fetch_keys_any(const bool is_v, uint first, uint ncols, out f16vec4 x[KV_SLOTS])
{
    if (KV_VECTORS) {
        fetch_keys(is_v, true, first, ncols, x);
    } else {
        fetch_keys(is_v, false, first, ncols, x);
    }
}

void store_keys(uint ncols, const in f16vec4 x[KV_SLOTS])
{
    [[unroll]] for (uint i = 0; i < KV_SLOTS; ++i) {
        const uint e = gl_LocalInvocationID.x + i * WorkGroupSize;
        if (e < KV_VECS) {
            const uint c = e / (D / 4);
            const f16vec4 v = c < ncols ? x[i] : f16vec4(0.0);
            const uint at = c * KS + (e % (D / 4)) * 4;
            stage[at] = v.x;
            stage[at + 1] = v.y;
            stage[at + 2] = v.z;
            stage[at + 3] = v.w;
        }
    }
}

void main()
{
    init_indices();
    const uint tid = gl_LocalInvocationID.x;

    if (tid < Br) {
        row_max[tid] = ACC_TYPE(0.0);
        row_sum[tid] = ACC_TYPE(0.0);
        row_alpha[tid] = ACC_TYPE(1.0);
        row_seen[tid] = false;
    }
    // ALiBi slope of the row this invocation's softmax lanes serve.
    const float slope = alibi_slope(row_head(tid / LANES));
    // Q: f16(q)·f16(scale) in f16 (rows past N are zero and never stored), QC columns at a
    // time through stage.
    const float16_t scale16 = float16_t(p.scale);
    coopmat<float16_t, gl_ScopeWorkgroup, Br, QC, gl_MatrixUseA> Qm[Q_CHUNKS];
    [[unroll]] for (uint qc = 0; qc < Q_CHUNKS; ++qc) {
        for (uint e = tid; e < Br * QC; e += WorkGroupSize) {
            const uint r = e / QC;
            float16_t q = float16_t(0.0);
            if (row_valid(r)) {
                q = float16_t(data_q[q_base + (row_tile * Br + r) * q_stride + qc * QC + e % QC])
                  * scale16;
            }
            stage[e] = q;
        }
        barrier();
        coopMatLoad(Qm[qc], stage, 0, QC, gl_CooperativeMatrixLayoutRowMajor);
        barrier();
    }
    coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator> O =
        coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator>(0.0);
    barrier();

    for (uint first = kv_begin; first < kv_end; first += Bc) {
        const uint ncols = min(Bc, kv_end - first);

        // 1. S = Q·Kᵀ.
        f16vec4 kv[KV_SLOTS];
        fetch_keys_any(false, first, ncols, kv);
        store_keys(ncols, kv);
        barrier();
        coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseAccumulator> S =
            coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseAccumulator>(0.0);
        [[unroll]] for (uint qc = 0; qc < Q_CHUNKS; ++qc) {
            coopmat<float16_t, gl_ScopeWorkgroup, QC, Bc, gl_MatrixUseB> Kt;
            // Kᵀ (d, c) = stage[c·KS + d]: column-major with stride KS, from column qc·QC.
            coopMatLoad(Kt, stage, qc * QC, KS, gl_CooperativeMatrixLayoutColumnMajor);
            S = coopMatMulAdd(Qm[qc], Kt, S);
        }
        coopMatStore(S, Ssh, 0, PS, gl_CooperativeMatrixLayoutRowMajor);
        fetch_keys_any(true, first, ncols, kv);   // V, stored in step 3
        barrier();

        // 2. Softmax update in ACC_TYPE, LANES invocations per row (see LANES).
        {
            const uint r = tid / LANES;
            const uint lane = tid % LANES;
            const bool masked = p.mask != 0 && row_valid(r);
            const uint mask_row = (row_tile * Br + r) * m_stride + first;
            // This row's state, read before any lane of it writes it back below.
            const bool seen = row_seen[r];
            const ACC_TYPE m_old = row_max[r];
            const ACC_TYPE l_old = row_sum[r];
            ACC_TYPE s_of[KEYS_PER_LANE];
            bool live_of[KEYS_PER_LANE];
            bool any = false;
            ACC_TYPE tile_max = ACC_TYPE(0.0);
            // The lane's keys are consecutive; their mask halves come 4 to a load where rows
            // and tiles start at multiples of 4 (uniform), else one at a time.
            const bool m_vec = ((m_stride | first) & 3u) == 0u;
            [[unroll]] for (uint j4 = 0; j4 < KEYS_PER_LANE; j4 += 4) {
                const uint c0 = lane * KEYS_PER_LANE + j4;
                uvec4 bits4 = uvec4(0u);
                if (masked) {
                    if (m_vec && c0 + 3 < ncols) {
                        bits4 = uvec4(data_m4[(mask_row + c0) / 4]);
                    } else {
                        [[unroll]] for (uint e = 0; e < 4; ++e) {
                            bits4[e] = uint(data_m_bits[mask_row + min(c0 + e, ncols - 1)]);
                        }
                    }
                }
                // (The test inside the loop, not in its condition: with `e < 4 && ...` there the
                // H100's compiler kept the loop and put s_of and live_of in local memory, and
                // the prefill row took 1,279 µs instead of 863.)
                [[unroll]] for (uint e = 0; e < 4; ++e) {
                    if (j4 + e < KEYS_PER_LANE) {
                        const uint j = j4 + e;
                        const uint c = c0 + e;
                        bool live = c < ncols;
                        if (live && masked) {
                            live = bits4[e] != F16_NEG_INF_BITS;
                        }
                        ACC_TYPE s = Ssh[r * PS + c];
                        if (live) {
                            if (p.logit_softcap != 0.0) {
                                s = ACC_TYPE(p.logit_softcap * tanh(float(s)));
                            }
                            if (masked) {
                                s = s + ACC_TYPE(slope) * ACC_TYPE(uint16BitsToFloat16(uint16_t(bits4[e])));
                            }
                            tile_max = any ? max(tile_max, s) : s;
                            any = true;
                        }
                        s_of[j] = s;
                        live_of[j] = live;
                    }
                }
            }
            [[unroll]] for (uint x = 1; x < LANES; x *= 2) {
                const bool other_any = subgroupShuffleXor(any, x);
                // (Shuffled as float, exactly: f16 shuffles would need another extension.)
                const ACC_TYPE other_max = ACC_TYPE(subgroupShuffleXor(float(tile_max), x));
                if (other_any) {
                    tile_max = any ? max(tile_max, other_max) : other_max;
                    any = true;
                }
            }
            ACC_TYPE m_new = m_old;
            if (any) {
                m_new = seen ? max(m_old, tile_max) : tile_max;
            }
            // Nothing was accumulated before the first live key.
            const ACC_TYPE alpha = seen ? exp(m_old - m_new) : ACC_TYPE(0.0);
            ACC_TYPE sum = ACC_TYPE(0.0);
            [[unroll]] for (uint j = 0; j < KEYS_PER_LANE; ++j) {
                const float16_t pc = live_of[j] ? float16_t(exp(s_of[j] - m_new)) : float16_t(0.0);
                stage[r * PS + lane * KEYS_PER_LANE + j] = pc;
                sum += ACC_TYPE(pc);
            }
            [[unroll]] for (uint x = 1; x < LANES; x *= 2) {
                sum += ACC_TYPE(subgroupShuffleXor(float(sum), x));
            }
            if (lane == 0) {
                row_sum[r] = l_old * alpha + sum;
                row_max[r] = m_new;
                row_alpha[r] = alpha;
                row_seen[r] = seen || any;
            }
        }
        barrier();

        // 3. O = O·α + P·V; P leaves stage before V is staged there.
        coopMatPerElementNV(O, O, times_alpha);
        coopmat<float16_t, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseA> Pm;
        coopMatLoad(Pm, stage, 0, PS, gl_CooperativeMatrixLayoutRowMajor);
        barrier();
        store_keys(ncols, kv);
        barrier();
        coopmat<float16_t, gl_ScopeWorkgroup, Bc, D, gl_MatrixUseB> Vm;
        coopMatLoad(Vm, stage, 0, KS, gl_CooperativeMatrixLayoutRowMajor);
        coopmat<float16_t, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator> PV =
            coopmat<float16_t, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator>(0.0);
        PV = coopMatMulAdd(Pm, Vm, PV);
        O += coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator>(PV);
        // The next tile overwrites stage and Ssh.
        barrier();
    }

    // Results through a tensor layout of the valid rows: rows past N are dropped.
    uint base;
    uint row0;
    uint row_stride;
    if (p.k_num > 1) {
        base = split_o_offset(0);
        row0 = 0;
        row_stride = D;
    } else {
        base = dst_offset(0) - row_tile * Br * (p.gqa_ratio > 1 ? D : p.ne1 * D);
        row0 = row_tile * Br;
        row_stride = p.gqa_ratio > 1 ? D : p.ne1 * D;
    }
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> tO =
        createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    tO = setTensorLayoutDimensionNV(tO, p.N, D);
    tO = setTensorLayoutStrideNV(tO, row_stride, 1);
    tO = sliceTensorLayoutNV(tO, row0, Br, 0, D);

    if (p.k_num > 1) {
        coopmat<float, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator> Of =
            coopmat<float, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator>(O);
        coopMatStoreTensorNV(Of, data_o, base, tO);
        if (tid < Br && row_valid(tid)) {
            data_o[split_l_offset(tid)] = float(row_sum[tid]);
            data_o[split_m_offset(tid)] = row_seen[tid] ? float(row_max[tid]) : NEG_HALF_MAX;
        }
    } else {
        if (tid < Br) {
            row_inv[tid] = row_sum[tid] == ACC_TYPE(0.0) ? ACC_TYPE(0.0)
                                                         : ACC_TYPE(1.0) / row_sum[tid];
        }
        barrier();
        coopMatPerElementNV(O, O, times_inverse);
        coopmat<float, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator> Of =
            coopmat<float, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator>(O);
        coopMatPerElementNV(Of, Of, nan_if_empty);
        coopMatStoreTensorNV(Of, data_o, base, tO);
    }
}
