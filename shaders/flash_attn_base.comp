// flash_attn_base.comp: interface shared by the flash-attention shaders (GGML_OP_FLASH_ATTN_EXT,
// §9 of docs/interface.md): specialization and push constants, bindings, K/V/mask loads,
// the workgroup's index set-up, the ALiBi slope and the split-k output layout.
//
// Defines: FLOAT_TYPE, Q_TYPE, D_TYPE (= float), ACC_TYPE (float or float16_t: the
//   accumulator of the coopmat paths; the scalar path accumulates in float either way).
//   K/V type: f16 without a DATA_A define, else DATA_A_<T>=1 with BLOCK_SIZE=QUANT_K_<T> (the
//   K/V block length; this file reads QUANT_K from types.comp), T in Q4_0, Q8_0 (every path)
//   and Q4_1, Q5_0, Q5_1, IQ4_NL (cm2). cm1 adds ACC_TYPEV4 and COOPMAT, cm2 DEQUANTFUNC
//   (upstream's decode-callback name; unused here). A file defining FA_F16_DECODE before the
//   include also gets float16 decoders (load_k4_f16_as, load_v4_f16_as) and needs shaderFloat16.
//   Device needs: 16-bit storage (blocks are read as 16-bit words).
// Specialization constants: 0 WorkGroupSize (= local_size_x), 1 Br (query rows per
//   workgroup), 2 Bc (keys per tile), 3 D (head size, a multiple of 16 and of 4·D_split),
//   4 Clamp (ignored: every key, row and mask load is bounds-checked), 5 D_split (invocations
//   sharing one key's dot product; divides WorkGroupSize).
// Bindings (set 0): 0 Q f32, 1 K, 2 V (f16, or A_TYPE blocks), 3 mask f16 (any buffer when
//   p.mask == 0), 4 O f32 (dst, or the split-k scratch). Upstream at the pinned commit
//   declares quantized K and V as one arrayed binding 1 (kv_packed[2]); the host binds K at 1
//   and V at 2 with one descriptor each, so V is read from binding 2 here (upstream's later fix).
// Push constants (32 words, 128 bytes), units as the host fills them (§9.4, §12 item 5):
//   N, KV, ne1 (= H), ne2 (= N before the GQA rewrite), ne3, neq2, neq3, nek2, nek3, nev2,
//   nev3, nem1, nb01 (f32 elements), nb02, nb03 (bytes), nb11 (elements for f16, blocks for
//   quants), nb12, nb13 (bytes), nb21 (elements/blocks), nb22, nb23 (bytes), nb31 (unused),
//   scale (already divided by logit_softcap when that is not 0), max_bias, logit_softcap,
//   mask (0/1), n_head_log2 (2^⌊log₂ H⌋), m0, m1, gqa_ratio, split_kv, k_num.
// Dispatch: (⌈N/Br⌉, neq2/gqa_ratio, neq3) workgroups, or (k_num, ·, ·) when k_num > 1.
//
// GQA mode (gqa_ratio > 1, a single query): the Br rows of a workgroup are the heads
// iq2 .. iq2 + gqa_ratio − 1 that share one K/V head: Q rows are nb02/4 apart and every row
// reads mask row 0.
//
// Worked example (f16 K/V, D = 64, H = 4, H_kv = 2, N = 1, KV = 70, GQA mode: gqa_ratio = 2,
// Br = 8, Bc = 32, no split): workgroup (0, 1, 0) takes heads 2 and 3 (rows r = 0, 1; rows
// 2..7 are idle), K/V head ik2 = 2/2 = 1 at element (1·nb12)/2; key j of it at
// + j·nb11 + d. Its keys come in three tiles: 0..31, 32..63 and 64..69 (the last one
// bounds-checked: keys 70..95 are never read). Row r = 1 is written to
// dst[(2 + 1)·64 + d], i.e. (d, h = 3, q = 0).

#extension GL_EXT_control_flow_attributes : enable
#extension GL_EXT_shader_16bit_storage : require

#include "types.comp"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(constant_id = 0) const uint WorkGroupSize = 128;
layout(constant_id = 1) const uint Br = 1;
layout(constant_id = 2) const uint Bc = 32;
layout(constant_id = 3) const uint D = 32;
layout(constant_id = 4) const uint Clamp = 0;
layout(constant_id = 5) const uint D_split = 16;

layout(push_constant) uniform parameter {
    uint N;
    uint KV;

    uint ne1;
    uint ne2;
    uint ne3;

    uint neq2;
    uint neq3;
    uint nek2;
    uint nek3;
    uint nev2;
    uint nev3;
    uint nem1;

    uint nb01;
    uint nb02;
    uint nb03;
    uint nb11;
    uint nb12;
    uint nb13;
    uint nb21;
    uint nb22;
    uint nb23;
    uint nb31;

    float scale;
    float max_bias;
    float logit_softcap;

    uint mask;
    uint n_head_log2;
    float m0;
    float m1;

    uint gqa_ratio;
    uint split_kv;
    uint k_num;
} p;

layout(binding = 0) readonly buffer Q { float data_q[]; };
#if QUANT_K > 1
// The blocks read as 16-bit words (quants two per word, little-endian): only 16-bit storage
// is needed, like upstream's packed16 views (no storageBuffer8BitAccess). Each struct is the
// ggml block byte for byte (std430, 2-byte alignment, array stride = block size).
#if defined(DATA_A_Q4_0) || defined(DATA_A_IQ4_NL)
struct kv_block {             // block_q4_0 / block_iq4_nl, 18 bytes
    float16_t d;
    uint16_t qs[8];           // bytes 2j, 2j + 1 of qs: elements 2j, 2j + 1 (low nibbles) and
                              // 2j + 16, 2j + 17 (high nibbles)
};
#elif defined(DATA_A_Q4_1)
struct kv_block {             // block_q4_1, 20 bytes
    float16_t d;
    float16_t m;
    uint16_t qs[8];
};
#elif defined(DATA_A_Q5_0)
struct kv_block {             // block_q5_0, 22 bytes
    float16_t d;
    uint16_t qh[2];           // bit e of qh[1] << 16 | qh[0]: bit 4 of element e
    uint16_t qs[8];
};
#elif defined(DATA_A_Q5_1)
struct kv_block {             // block_q5_1, 24 bytes
    float16_t d;
    float16_t m;
    uint16_t qh[2];
    uint16_t qs[8];
};
#elif defined(DATA_A_Q8_0)
struct kv_block {             // block_q8_0, 34 bytes
    float16_t d;
    uint16_t qs[16];          // elements 2j (low byte) and 2j + 1 (high byte), signed
};
#else
#error "flash attention: K/V must be f16, q4_0, q4_1, q5_0, q5_1, q8_0 or iq4_nl"
#endif
layout(binding = 1) readonly buffer KBlocks { kv_block data_kb[]; };
layout(binding = 2) readonly buffer VBlocks { kv_block data_vb[]; };
#else
layout(binding = 1) readonly buffer K { float16_t data_k[]; };
layout(binding = 2) readonly buffer V { float16_t data_v[]; };
// The same bindings as 4-vectors: one 8-byte load per 4 elements where a slice and its row
// stride are multiples of 4 elements (the usual KV cache; any layout stays legal).
layout(binding = 1) readonly buffer K4 { f16vec4 data_k4[]; };
layout(binding = 2) readonly buffer V4 { f16vec4 data_v4[]; };
#endif
layout(binding = 3) readonly buffer M { float16_t data_m[]; };
layout(binding = 3) readonly buffer MBits { uint16_t data_m_bits[]; };
layout(binding = 4) writeonly buffer O { float data_o[]; };

// −FLT_MAX/2: the running maximum before any key (bits 0xFEFFFFFF). Not −∞, so that
// exp(M_old − M_new) stays defined while every key seen so far is masked.
#define NEG_HALF_MAX uintBitsToFloat(0xFEFFFFFFu)
// What a row with no unmasked key becomes (see flash_attn.comp), written as bits: Vulkan leaves
// arithmetic on ±∞ and NaN (and division by 0) undefined, so the kernel never computes it.
#define ROW_NAN uintBitsToFloat(0x7FC00000u)
// −∞ in f16: a masked key. Tested on the bits, for the same reason.
#define F16_NEG_INF_BITS 0xFC00u
// The same −∞ converted to f32 (exact), for a mask staged as f32.
#define F32_NEG_INF_BITS 0xFF800000u

// ---- K/V loads: 4 consecutive elements d..d+3 (d a multiple of 4) of key `key` ----

#if QUANT_K > 1

#if defined(DATA_A_Q4_0) || defined(DATA_A_IQ4_NL)
const uint KV_BLOCK_BYTES = 18;
#elif defined(DATA_A_Q4_1)
const uint KV_BLOCK_BYTES = 20;
#elif defined(DATA_A_Q5_0)
const uint KV_BLOCK_BYTES = 22;
#elif defined(DATA_A_Q5_1)
const uint KV_BLOCK_BYTES = 24;
#else
const uint KV_BLOCK_BYTES = 34;
#endif

// One block's words for elements iqs..iqs+3: qs words w and w + 1, the scale, the minimum (0
// without one) and the 32 high bits (q5 formats; 0 otherwise). A branch, not a select, so only
// the buffer asked for is read (robust access is off).
#if defined(DATA_A_Q4_1) || defined(DATA_A_Q5_1)
#define KV_FETCH_MIN(buf) mm = float(buf[ib].m);
#else
#define KV_FETCH_MIN(buf) mm = 0.0;
#endif
#if defined(DATA_A_Q5_0) || defined(DATA_A_Q5_1)
#define KV_FETCH_QH(buf) qh = uint(buf[ib].qh[0]) | (uint(buf[ib].qh[1]) << 16);
#else
#define KV_FETCH_QH(buf) qh = 0;
#endif
#define KV_FETCH(buf) lo = uint(buf[ib].qs[w]); hi = uint(buf[ib].qs[w + 1]); \
    dd = float(buf[ib].d); KV_FETCH_MIN(buf) KV_FETCH_QH(buf)

void kv_words(const bool is_v, uint ib, uint w, out uint lo, out uint hi, out float dd,
              out float mm, out uint qh)
{
    if (is_v) {
        KV_FETCH(data_vb)
    } else {
        KV_FETCH(data_kb)
    }
}

// The raw parts of elements iqs..iqs+3 of block `ib` (iqs a multiple of 4): their quant
// values q (already offset: nibble − 8, 5-bit − 16, signed byte, or the iq4_nl table
// value), the scale d and the minimum m (0 without one). The element is d·q + m.
void kv_raw4(const bool is_v, uint ib, uint iqs, out vec4 q, out float dd, out float mm)
{
    uint lo, hi, qh;
#if defined(DATA_A_Q8_0)
    // Elements iqs..iqs+3 are the signed bytes of words iqs/2 and iqs/2 + 1.
    kv_words(is_v, ib, iqs / 2, lo, hi, dd, mm, qh);
    const int l = int(lo), h = int(hi);
    q = vec4(ivec4(bitfieldExtract(l, 0, 8), bitfieldExtract(l, 8, 8),
                   bitfieldExtract(h, 0, 8), bitfieldExtract(h, 8, 8)));
#else
    // Elements iqs..iqs+3 are the low (iqs < 16) or high nibbles of bytes iqs % 16 ...+3,
    // and bits iqs..iqs+3 of qh are their fifth bits.
    kv_words(is_v, ib, (iqs % 16) / 2, lo, hi, dd, mm, qh);
    const uint shift = iqs < 16 ? 0 : 4;
    uvec4 n = (uvec4(lo, lo >> 8, hi, hi >> 8) >> shift) & 0xFu;
    n |= ((uvec4(qh) >> (uvec4(0, 1, 2, 3) + iqs)) & 1u) << 4;
#if defined(DATA_A_Q4_0)
    q = vec4(n) - 8.0;
#elif defined(DATA_A_Q5_0)
    q = vec4(n) - 16.0;
#elif defined(DATA_A_IQ4_NL)
    q = vec4(kvalues_iq4nl[n.x], kvalues_iq4nl[n.y], kvalues_iq4nl[n.z], kvalues_iq4nl[n.w]);
#else
    q = vec4(n);
#endif
#endif
}

// Element (key, d) is element key·stride·QUANT_K + d counted from block `base` (stride in
// blocks).
void kv_locate(uint base, uint stride, uint key, uint d, out uint ib, out uint iqs)
{
    const uint e = key * stride * QUANT_K + d;
    ib = base + e / QUANT_K;
    iqs = e % QUANT_K;
}

// f32 decode (scalar and cm1 paths, q4_0 and q8_0 only): d·q is exact in float (an 11-bit
// scale times an integer of at most 8 bits).
vec4 dequant4(const bool is_v, uint base, uint stride, uint key, uint d)
{
    uint ib, iqs;
    kv_locate(base, stride, key, d, ib, iqs);
    vec4 q;
    float dd, mm;
    kv_raw4(is_v, ib, iqs, q, dd, mm);
    return q * dd + mm;
}

#if defined(FA_F16_DECODE)
// float16 decode (cm2, as upstream's decode callbacks, §3.2): d·q rounded to f16, plus m in
// f16 for the formats with a minimum (a second rounding). The quant values are exact in f16.
f16vec4 dequant4_f16(const bool is_v, uint base, uint stride, uint key, uint d)
{
    uint ib, iqs;
    kv_locate(base, stride, key, d, ib, iqs);
    vec4 q;
    float dd, mm;
    kv_raw4(is_v, ib, iqs, q, dd, mm);
    f16vec4 r = f16vec4(q) * float16_t(dd);
#if defined(DATA_A_Q4_1) || defined(DATA_A_Q5_1)
    r += float16_t(mm);
#endif
    return r;
}
#endif

// First block of the (head, batch) slice: byte offsets divided by the block size.
uint kv_base(uint byte_offset) { return byte_offset / KV_BLOCK_BYTES; }
vec4 load_k4(uint base, uint key, uint d) { return dequant4(false, base, p.nb11, key, d); }
vec4 load_v4(uint base, uint key, uint d) { return dequant4(true, base, p.nb21, key, d); }
// (Blocks have no vector form: see the f16 versions.)
vec4 load_k4_as(const bool vectors, uint base, uint key, uint d) { return load_k4(base, key, d); }
vec4 load_v4_as(const bool vectors, uint base, uint key, uint d) { return load_v4(base, key, d); }
#define KV_VECTORS false
#if defined(FA_F16_DECODE)
f16vec4 load_k4_f16_as(const bool vectors, uint base, uint key, uint d) { return dequant4_f16(false, base, p.nb11, key, d); }
f16vec4 load_v4_f16_as(const bool vectors, uint base, uint key, uint d) { return dequant4_f16(true, base, p.nb21, key, d); }
#endif

#else

uint kv_base(uint byte_offset) { return byte_offset / 2; }
// d is a multiple of 4; the alignment test is uniform over the dispatch. (Converted as loaded:
// the scalar path needs no float16 arithmetic.)
#define KV_ALIGNED(base, stride) (((base | stride) & 3u) == 0u)
// load_k4_as / load_v4_as take the alignment from the caller: `vectors` (KV_VECTORS: both
// slices and row strides multiples of 4) must be a constant where a loop calls them, so the
// loop's loads share one block; a test at every load kept them one at a time on the H100.
vec4 load_k4_as(const bool vectors, uint base, uint key, uint d)
{
    const uint e = base + key * p.nb11 + d;
    if (vectors) {
        return vec4(data_k4[e / 4]);
    }
    return vec4(float(data_k[e]), float(data_k[e + 1]), float(data_k[e + 2]), float(data_k[e + 3]));
}
vec4 load_v4_as(const bool vectors, uint base, uint key, uint d)
{
    const uint e = base + key * p.nb21 + d;
    if (vectors) {
        return vec4(data_v4[e / 4]);
    }
    return vec4(float(data_v[e]), float(data_v[e + 1]), float(data_v[e + 2]), float(data_v[e + 3]));
}
vec4 load_k4(uint base, uint key, uint d) { return load_k4_as(KV_ALIGNED(base, p.nb11), base, key, d); }
vec4 load_v4(uint base, uint key, uint d) { return load_v4_as(KV_ALIGNED(base, p.nb21), base, key, d); }
#define KV_VECTORS (KV_ALIGNED(k_base, p.nb11) && KV_ALIGNED(v_base, p.nb21))
#if defined(FA_F16_DECODE)
f16vec4 load_k4_f16_as(const bool vectors, uint base, uint key, uint d)
{
    const uint e = base + key * p.nb11 + d;
    if (vectors) {
        return data_k4[e / 4];
    }
    return f16vec4(data_k[e], data_k[e + 1], data_k[e + 2], data_k[e + 3]);
}
f16vec4 load_v4_f16_as(const bool vectors, uint base, uint key, uint d)
{
    const uint e = base + key * p.nb21 + d;
    if (vectors) {
        return data_v4[e / 4];
    }
    return f16vec4(data_v[e], data_v[e + 1], data_v[e + 2], data_v[e + 3]);
}
#endif

#endif

// ---- The workgroup's indices (§9.4 "init_indices") ----

uint row_tile;          // i: which Br query rows (0 when splitting)
uint split_index;       // which KV split (0 without split-k)
uint kv_begin, kv_end;  // this workgroup's keys: [kv_begin, kv_end)
uint iq2, iq3;          // first query head, batch
uint k_base, v_base;    // K/V slice offsets (elements for f16, blocks for quants)
uint q_base, q_stride;  // Q offset and row stride (f32 elements)
uint m_stride;          // mask row stride (elements): KV, or 0 in GQA mode

void init_indices()
{
    row_tile = gl_WorkGroupID.x;
    split_index = 0;
    if (p.k_num > 1) {
        row_tile = 0;
        split_index = gl_WorkGroupID.x;
    }
    kv_begin = split_index * p.split_kv;
    kv_end = min(p.KV, kv_begin + p.split_kv);

    iq2 = gl_WorkGroupID.y * p.gqa_ratio;
    iq3 = gl_WorkGroupID.z;
    const uint ik2 = iq2 / (p.neq2 / p.nek2);
    const uint ik3 = iq3 / (p.neq3 / p.nek3);
    const uint iv2 = iq2 / (p.neq2 / p.nev2);
    const uint iv3 = iq3 / (p.neq3 / p.nev3);
    k_base = kv_base(ik2 * p.nb12 + ik3 * p.nb13);
    v_base = kv_base(iv2 * p.nb22 + iv3 * p.nb23);

    q_base = (iq2 * p.nb02 + iq3 * p.nb03) / 4;
    q_stride = p.gqa_ratio > 1 ? p.nb02 / 4 : p.nb01;
    m_stride = p.gqa_ratio > 1 ? 0 : p.KV;
}

// Local row r of the workgroup: its query row (non-GQA) or its head offset (GQA) is
// row_tile·Br + r, valid below N.
bool row_valid(uint r) { return row_tile * Br + r < p.N; }
uint row_head(uint r) { return p.gqa_ratio > 1 ? iq2 + r : iq2; }

// ALiBi slope of `head`: m0^(h+1) below n_head_log2, else m1^(2(h − n_head_log2) + 1).
float alibi_slope(uint head)
{
    if (p.max_bias > 0.0) {
        if (head < p.n_head_log2) {
            return pow(p.m0, float(head + 1));
        }
        return pow(p.m1, float(2 * (head - p.n_head_log2) + 1));
    }
    return 1.0;
}

// dst (D, H, N, ne3): row r of this workgroup is element (·, head, query, iq3).
uint dst_offset(uint r)
{
    const uint batch = iq3 * p.ne2 * p.ne1 * D;
    if (p.gqa_ratio > 1) {
        return batch + (iq2 + r) * D;
    }
    return batch + iq2 * D + (row_tile * Br + r) * p.ne1 * D;
}

// Split-k scratch (§9.7): unnormalised O of split s at D·ne1·s + (iq2 + r)·D, then per split
// 2·ne1 floats: L (sum of exponentials) at + iq2 + r, M (their reference maximum) at
// + ne1 + iq2 + r.
uint split_o_offset(uint r) { return D * p.ne1 * split_index + (iq2 + r) * D; }
uint split_l_offset(uint r) { return D * p.ne1 * p.k_num + 2 * p.ne1 * split_index + iq2 + r; }
uint split_m_offset(uint r) { return split_l_offset(r) + p.ne1; }
