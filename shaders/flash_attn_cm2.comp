#version 450

// flash_attn_cm2.comp: flash attention with NV cooperative matrix 2 (cm2, docs/interface.md §9.8):
// workgroup-scope matrices for S = Q·Kᵀ, the softmax and P·V. Q and f16 K and V load straight
// from memory through tensor layouts; quantized K and V are decoded by ordinary code into shared
// memory (interface in flash_attn_base.comp; upstream binds the same buffers as byte arrays and
// decodes quantized blocks in tensor-load callbacks, which reads the same bytes).
//
// Pipeline (host, §9.5): small rows (N ≤ 32): Br = 32, Bc = 32, WorkGroupSize 256 when
// D mod 32 == 0, else 128; large rows: Br = 64, WorkGroupSize 128, Bc = 32 for quantized K/V or
// D = 256, else 64. Clamp (spec constant 4) is 0 on the aligned pipeline, where the host has
// checked that KV is a multiple of Bc and that Q's, K's and V's row strides are multiples of 8:
// there K and V load without bounds checks and the strides are declared multiples of 8. Q,
// the mask and O keep bounds checks everywhere (mask reads past its edge give −∞: rows past
// N, which are never stored, and keys past kv_end), so both pipelines compute the same thing.
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
//   1. S = Q·Kᵀ, f16 Kᵀ loaded through a transposed view of a tensor layout that is zero past
//      kv_end; quantized K staged as stage[c·KS + d] = K[first + c][d] (f16), zero for c ≥ ncols.
//   2. softmax on matrices, every row's running maximum M and sum L spread over Bc columns:
//      the mask tile is loaded through a tensor layout that ends at kv_end with the clamp
//      value −∞, scaled by the row's ALiBi slope if any, and added as a matrix after the
//      softcap (IEEE infinities: a −∞ mask, and so every key past kv_end, makes the logit −∞).
//      Without a mask a per-element function makes keys ≥ ncols DEAD (−∞) on a partial tile.
//      M' = max(M, row max) by a row reduction (NMax: NaN never wins), α = exp(M − M'),
//      P = f16(max(exp(S − M'), 0)) with NMax, so a dead key's weight is exactly 0 and so is
//      the NaN that a −∞ mask on a NaN or +∞ logit leaves; L = L·α + row sum of P (as P times
//      ones). M starts at the lowest finite value, so S − M' is never −∞ − (−∞). (With a lane
//      per key group reading S from shared memory, the prefill row took 863 µs on the H100,
//      upstream 211; with per-element functions testing −∞ bits for the mask and the weights,
//      409 µs and 0.51 of upstream on the H200 on 2026-11-29.)
//   3. O = O·α (α spread to D columns by a row reduction); V loaded or staged as K in 1 (zero
//      rows past ncols, so the NaN keys a cache holds beyond KV never meet a zero weight; staged
//      V is fetched before step 2); O += f16(P·V).
// At the end O·(1/L) is stored through a tensor layout of N rows, which drops the rows past N;
// a row whose keys are all masked keeps L = 0 and is written as NaN (bits), like the scalar
// path. With split-k the unnormalised O, L and M go to the scratch (§9.7).
//
// Shared memory: for quantized K/V the stage of Bc·(D + 8) f16 (ALiBi slopes are computed
// where used, so f16 K/V need none beyond the matrices' own). Q is not staged:
// on the H100, upstream's cm2 shader with Q staged through 16 KiB of shared memory ran the
// prefill row (N = 512, KV 4096, D 128) at 0.57 of its speed, and ours with f16 K and V direct
// took 792 µs with Q staged, 409 µs without (456 µs with Q, K and V all staged).

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
#extension GL_EXT_spirv_intrinsics : require

// IEEE infinities and NaNs in 32- and 16-bit arithmetic (SignedZeroInfNanPreserve: execution
// mode 4461, capability 4466; the host runs this path only where the device supports both), so
// that a −∞ mask added to a finite logit gives −∞ and exp(−∞) is 0.
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4466], 4461, 32);
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4466], 4461, 16);
// NMax (GLSL.std.450 instruction 80): the other operand when one is NaN (GLSL's max leaves
// that undefined).
spirv_instruction(set = "GLSL.std.450", id = 80) float nmax(float a, float b);
spirv_instruction(set = "GLSL.std.450", id = 80) float16_t nmax(float16_t a, float16_t b);

#define FA_F16_DECODE 1
#include "flash_attn_base.comp"

// Quantized K and V are decoded into shared memory (KV_STAGED); f16 K and V load straight from
// memory through tensor layouts, with no barrier in the key loop.
#if QUANT_K > 1
#define KV_STAGED 1
// Staged K and V rows are padded by 8 halves against bank conflicts (a row stride that is a
// multiple of 128 bytes puts a matrix load's rows in the same banks).
const uint KS = D + 8;
shared float16_t stage[Bc * KS];      // K, then V
#endif

// A key that takes no part in a row (past the tile's keys, or under a −∞ mask) has the logit
// −∞: it never wins a maximum and its weight exp(−∞ − M) is 0, M being finite (below).
#define DEAD ACC_TYPE(uintBitsToFloat(0xFF800000u))

// The running maximum's start: the lowest finite ACC_TYPE value (f16: −65504), below every
// live logit and finite, so that exp(s − M) of a dead key is exp(−∞) and never exp(−∞ + ∞).
ACC_TYPE lowest_finite()
{
    const ACC_TYPE big = ACC_TYPE(uintBitsToFloat(0x7F7FFFFFu));   // FLT_MAX, ∞ in f16
    return isinf(big) ? ACC_TYPE(-65504.0) : -big;
}

ACC_TYPE max_of(const in ACC_TYPE a, const in ACC_TYPE b) { return nmax(a, b); }
// Row reductions that only spread a row's (equal) values to a matrix of another width.
ACC_TYPE first_of(const in ACC_TYPE a, const in ACC_TYPE b) { return a; }

ACC_TYPE softcapped(const in ACC_TYPE s)
{
    return p.logit_softcap != 0.0 ? ACC_TYPE(p.logit_softcap * tanh(float(s))) : s;
}

// The logit of key c of row r (c counted from the tile's first key; ncols keys in the tile).
ACC_TYPE logit(const in uint32_t r, const in uint32_t c, const in ACC_TYPE s, const in uint ncols)
{
    return c < ncols ? softcapped(s) : DEAD;
}

// ALiBi: the mask scaled by its row's slope (a −∞ mask stays −∞, the slope being positive).
ACC_TYPE alibi_scaled(const in uint32_t r, const in uint32_t c, const in ACC_TYPE m)
{
    return ACC_TYPE(alibi_slope(row_head(r))) * m;
}

ACC_TYPE max_pair(const in uint32_t r, const in uint32_t c, const in ACC_TYPE a, const in ACC_TYPE b)
{
    return nmax(a, b);
}

// exp(M_old − M_new) (while no key of the row has been live, O and L are still 0).
ACC_TYPE rescale(const in uint32_t r, const in uint32_t c, const in ACC_TYPE m_old, const in ACC_TYPE m_new)
{
    return exp(m_old - m_new);
}

// A key's weight f16(exp(s − M)) (L adds the rounded weights): 0 for a dead key, and 0 for a
// NaN logit (NMax), which a −∞ mask on a NaN or +∞ logit gives: such a key takes no part, as
// in ggml's CPU path. (A NaN logit under a finite mask makes ggml's row NaN: no promise.)
ACC_TYPE weight(const in uint32_t r, const in uint32_t c, const in ACC_TYPE s, const in ACC_TYPE m)
{
    return ACC_TYPE(float16_t(nmax(exp(s - m), ACC_TYPE(0.0))));
}

// O·(1/L) (in ACC_TYPE, 1/L first), 0 for a row with L = 0 (made NaN below).
ACC_TYPE normalized(const in uint32_t r, const in uint32_t c, const in ACC_TYPE o, const in ACC_TYPE l)
{
    return l == ACC_TYPE(0.0) ? ACC_TYPE(0.0) : o * (ACC_TYPE(1.0) / l);
}

// A fully masked row (L = 0) is NaN.
float nan_if_empty(const in uint32_t r, const in uint32_t c, const in float o, const in float l)
{
    return l == 0.0 ? ROW_NAN : o;
}

// Split-k: the rows' L and M go to the scratch from column 0 of the row-spread matrices.
ACC_TYPE put_l(const in uint32_t r, const in uint32_t c, const in ACC_TYPE l)
{
    if (c == 0 && row_valid(r)) {
        data_o[split_l_offset(r)] = float(l);
    }
    return l;
}

ACC_TYPE put_m(const in uint32_t r, const in uint32_t c, const in ACC_TYPE m)
{
    if (c == 0 && row_valid(r)) {
        data_o[split_m_offset(r)] = float(m);
    }
    return m;
}

#ifdef KV_STAGED
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
#endif

void main()
{
    init_indices();
    // Q: f16(q)·f16(scale) in f16, through a tensor layout of the N valid rows (rows past N are
    // zero and never stored).
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> tQ =
        createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    tQ = setTensorLayoutDimensionNV(tQ, p.N, D);
    // On the aligned pipeline (Clamp 0) the host has checked KV % Bc == 0 (so the mask's stride,
    // KV or 0, is a multiple of 8) and Q's, K's and V's row strides % 8 == 0: said so, tensor
    // loads use 16-byte accesses. (GQA mode's Q stride is nb02, which the host does not check.)
    const bool strides_of_8 = Clamp == 0;
    tQ = setTensorLayoutStrideNV(tQ, strides_of_8 && p.gqa_ratio == 1 ? q_stride & ~7u : q_stride, 1);
    coopmat<float, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator> Qf;
    coopMatLoadTensorNV(Qf, data_q, q_base, sliceTensorLayoutNV(tQ, row_tile * Br, Br, 0, D));
    coopmat<float16_t, gl_ScopeWorkgroup, Br, D, gl_MatrixUseA> Qm =
        coopmat<float16_t, gl_ScopeWorkgroup, Br, D, gl_MatrixUseA>(Qf);
    Qm *= float16_t(p.scale);
    // The mask as a tensor of N rows (GQA: Br rows of stride 0, every head reading row 0) by
    // kv_end keys, −∞ past its edge: keys past kv_end die on partial tiles, and rows past N
    // (never stored) keep M at its start and weights 0. Clamped to its edge instead,
    // upstream's cm2 prefill row with an earlier per-element mask function ran 0.68 of its
    // speed. With the add as a matrix on every tile (no per-element mask function) the
    // prefill row ran 1.04x faster on the H200 than with it on partial and ALiBi tiles
    // (2026-11-29).
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> tM =
        createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    tM = setTensorLayoutDimensionNV(tM, p.gqa_ratio > 1 ? Br : p.N, kv_end);
    tM = setTensorLayoutClampValueNV(tM, 0xFC00u);   // f16 −∞
    tM = setTensorLayoutStrideNV(tM, strides_of_8 ? m_stride & ~7u : m_stride, 1);
    const uint m_row0 = p.gqa_ratio > 1 ? 0 : row_tile * Br;
#ifndef KV_STAGED
    // f16 K and V straight from memory: tensors of kv_end keys by D, zero past kv_end (so the
    // NaN keys a cache holds beyond KV never meet a zero weight); Kᵀ through a transposed view.
    tensorLayoutNV<2, Clamp> tK = createTensorLayoutNV(2, Clamp);
    tK = setTensorLayoutDimensionNV(tK, kv_end, D);
    tK = setTensorLayoutStrideNV(tK, strides_of_8 ? p.nb11 & ~7u : p.nb11, 1);
    tensorLayoutNV<2, Clamp> tV = createTensorLayoutNV(2, Clamp);
    tV = setTensorLayoutDimensionNV(tV, kv_end, D);
    tV = setTensorLayoutStrideNV(tV, strides_of_8 ? p.nb21 & ~7u : p.nb21, 1);
    tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
#endif

    // Running state, every row's value spread over its Bc columns: maximum M (the lowest finite
    // value before the row's first live key) and sum L.
    coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseAccumulator> M =
        coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseAccumulator>(lowest_finite());
    coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseAccumulator> L =
        coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseAccumulator>(0.0);
    coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator> O =
        coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator>(0.0);

    // Kept rolled, as upstream marks its loop: unrolled, the decode pipelines were 4x the size.
    [[dont_unroll]] for (uint first = kv_begin; first < kv_end; first += Bc) {
        const uint ncols = min(Bc, kv_end - first);

        // 1. S = Q·Kᵀ.
        coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseAccumulator> S =
            coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseAccumulator>(0.0);
        coopmat<float16_t, gl_ScopeWorkgroup, D, Bc, gl_MatrixUseB> Kt;
#ifdef KV_STAGED
        f16vec4 kv[KV_SLOTS];
        fetch_keys_any(false, first, ncols, kv);
        store_keys(ncols, kv);
        barrier();
        // Kᵀ (d, c) = stage[c·KS + d]: column-major with stride KS.
        coopMatLoad(Kt, stage, 0, KS, gl_CooperativeMatrixLayoutColumnMajor);
        S = coopMatMulAdd(Qm, Kt, S);
        // V's loads are issued now, so their latency hides behind the softmax; stored once
        // every invocation is past Kᵀ's load.
        fetch_keys_any(true, first, ncols, kv);
        barrier();
        store_keys(ncols, kv);
#else
        coopMatLoadTensorNV(Kt, data_k, k_base, sliceTensorLayoutNV(tK, first, Bc, 0, D), transposed);
        S = coopMatMulAdd(Qm, Kt, S);
#endif

        // 2. Softmax update in ACC_TYPE: logits (DEAD for dead keys), M' = max(M, row max)
        // (maxima ignore NaN), α = exp(M − M'), P = f16(exp(S − M')) (0 for NaN), L = L·α + Σ P.
        if (p.mask != 0) {
            // Softcap, then + mask (ALiBi: + slope·mask) as matrices: keys past kv_end read the
            // mask's clamp value −∞ and die, a −∞ mask gives −∞ (or NaN on a NaN or +∞ logit,
            // which the maximum and the weights drop as well).
            coopmat<float16_t, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseAccumulator> mask;
            coopMatLoadTensorNV(mask, data_m, 0, sliceTensorLayoutNV(tM, m_row0, Br, first, Bc));
            coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseAccumulator> mk =
                coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseAccumulator>(mask);
            if (p.logit_softcap != 0.0) {
                coopMatPerElementNV(S, S, logit, ncols);
            }
            if (p.max_bias > 0.0) {
                coopMatPerElementNV(mk, mk, alibi_scaled);
            }
            S += mk;
        } else if (ncols < Bc || p.logit_softcap != 0.0) {
            // (A whole tile without softcap keeps its logits as they are.)
            coopMatPerElementNV(S, S, logit, ncols);
        }
        coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseAccumulator> tile_max;
        coopMatReduceNV(tile_max, S, gl_CooperativeMatrixReduceRowNV, max_of);
        coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseAccumulator> M_old = M;
        coopMatPerElementNV(M, tile_max, max_pair, M_old);
        coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseAccumulator> alpha;
        coopMatPerElementNV(alpha, M_old, rescale, M);
        coopMatPerElementNV(S, S, weight, M);
        coopmat<float16_t, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseA> Pm =
            coopmat<float16_t, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseA>(S);
        // The row sums of P as P times a matrix of ones (every column gets its row's sum), on
        // the tensor cores like P·V, instead of a row reduction.
        coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseAccumulator> tile_sum =
            coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, Bc, gl_MatrixUseAccumulator>(0.0);
        tile_sum = coopMatMulAdd(Pm, coopmat<float16_t, gl_ScopeWorkgroup, Bc, Bc, gl_MatrixUseB>(1.0), tile_sum);
        L = L * alpha + tile_sum;

        // 3. O = O·α + f16(P·V).
        coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator> alpha_d;
        coopMatReduceNV(alpha_d, alpha, gl_CooperativeMatrixReduceRowNV, first_of);
        O = alpha_d * O;
        coopmat<float16_t, gl_ScopeWorkgroup, Bc, D, gl_MatrixUseB> Vm;
#ifdef KV_STAGED
        barrier();
        coopMatLoad(Vm, stage, 0, KS, gl_CooperativeMatrixLayoutRowMajor);
#else
        coopMatLoadTensorNV(Vm, data_v, v_base, sliceTensorLayoutNV(tV, first, Bc, 0, D));
#endif
        coopmat<float16_t, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator> PV =
            coopmat<float16_t, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator>(0.0);
        PV = coopMatMulAdd(Pm, Vm, PV);
        O += coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator>(PV);
#ifdef KV_STAGED
        barrier();   // the next tile overwrites stage
#endif
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
        coopMatPerElementNV(L, L, put_l);
        coopMatPerElementNV(M, M, put_m);
    } else {
        coopmat<ACC_TYPE, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator> L_d;
        coopMatReduceNV(L_d, L, gl_CooperativeMatrixReduceRowNV, first_of);
        coopMatPerElementNV(O, O, normalized, L_d);
        coopmat<float, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator> Of =
            coopmat<float, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator>(O);
        coopMatPerElementNV(Of, Of, nan_if_empty,
                            coopmat<float, gl_ScopeWorkgroup, Br, D, gl_MatrixUseAccumulator>(L_d));
        coopMatStoreTensorNV(Of, data_o, base, tO);
    }
}
