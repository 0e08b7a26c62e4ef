#version 450

// flash_attn.comp: scalar flash attention, f32 arithmetic throughout (interface in
// flash_attn_base.comp).
//
// One workgroup computes Br query rows (or Br heads in GQA mode) over its keys
// [kv_begin, kv_end), in tiles of Bc keys, with a running maximum M, running sum L and
// unnormalised output O per row, all in shared memory. Per tile:
//   1. scores: the key's dot product with each row is split over D_split invocations (each
//      takes D/D_split consecutive elements, summed sequentially with fma); the partial sums
//      go to shared memory. Keys at or past kv_end are neither read nor scored, so any KV and
//      any split length work.
//   2. softmax update (one invocation per row): partials summed in a fixed tree of depth
//      log₂ D_split, then S = softcap·tanh(S) when a softcap is set, S += slope·mask; the new
//      maximum M' = max(M, max S), α = exp(M − M'), P = exp(S − M'), L = L·α + Σ P.
//   3. output update (one invocation per 4 output elements): O = O·α + Σ_c P_c·V_c, in key
//      order, with fma.
// At the end the row is O·(1/L) in dst, or (O, L, M) in the split-k scratch for
// flash_attn_split_k_reduce.comp. A key whose mask entry is −∞ is skipped (weight 0, like
// ggml's CPU path), and so is any key whose weight underflows to 0 in step 3. A row whose keys
// are all masked keeps L = 0 and is written as NaN: ggml's CPU path gives 0·(1/0) = NaN there at
// the pinned commit (Vulkan leaves 1/0 undefined, so the kernel writes the NaN itself).
//
// Shared memory: Br·D (Q) + Br·D (O) + Br·Bc·D_split (partial dots) + 2·Br·Bc (scores, live
// flags) + 3·Br words: 26 KiB at most (Br = 8, D = 256, Bc = 32, D_split = 8).
//
// Worked example (q4_0 K/V, D = 64, N = 3, H = 2, H_kv = 2, KV = 40, no mask, Br = 8,
// Bc = 32, D_split = 8, WorkGroupSize = 128): dispatch (1, 2, 1). In workgroup (0, 1, 0) rows
// 0..2 are queries 0..2 of head 1 (rows 3..7 hold zeros and are never stored); 16 groups of 8
// invocations score the keys: invocation 77 is group 9, lane 5, so in tile 0 it sums elements
// 40..47 of key 9 against each row, and in tile 1 (keys 32..39, ncols = 8) it has no key.
// Key 9's elements 40..43 are block 9·nb11 + 1 of the head's slice (nb11 = 2 blocks per row),
// low nibbles of qs[8..11]. In step 3 invocation 20 owns row 1, elements 16..19 (20 = 1·16
// + 4), and writes dst[1·2·64 + 1·64 + 16 ..] = (16, h = 1, q = 1).

#include "flash_attn_base.comp"

const uint COL_GROUPS = WorkGroupSize / D_split;
const uint D_PER_LANE = D / D_split;

shared float Qs[Br * D];
shared vec4 Os[Br * D / 4];
shared float partial[Br * Bc * D_split];
shared float scores[Br * Bc];
shared uint key_live[Br * Bc];
shared float row_max[Br];
shared float row_sum[Br];
shared float row_alpha[Br];

void main()
{
    init_indices();
    const uint tid = gl_LocalInvocationID.x;

    // Q rows, multiplied by the scale (rows past N are zero and never stored).
    for (uint e = tid; e < Br * D; e += WorkGroupSize) {
        const uint r = e / D;
        const uint d = e % D;
        float q = 0.0;
        if (row_valid(r)) {
            q = data_q[q_base + (row_tile * Br + r) * q_stride + d] * p.scale;
        }
        Qs[e] = q;
    }
    for (uint o = tid; o < Br * D / 4; o += WorkGroupSize) {
        Os[o] = vec4(0.0);
    }
    if (tid < Br) {
        row_max[tid] = NEG_HALF_MAX;
        row_sum[tid] = 0.0;
        row_alpha[tid] = 1.0;
    }
    barrier();

    const uint lane = tid % D_split;
    const uint group = tid / D_split;
    float slope = 1.0;
    if (tid < Br) {
        slope = alibi_slope(row_head(tid));
    }

    for (uint first = kv_begin; first < kv_end; first += Bc) {
        const uint ncols = min(Bc, kv_end - first);

        // 1. Partial dot products: lane `lane` of group `group` takes elements
        //    lane·D_PER_LANE .. + D_PER_LANE of keys first + group, + COL_GROUPS, ...
        for (uint c = group; c < ncols; c += COL_GROUPS) {
            float acc[Br];
            for (uint r = 0; r < Br; ++r) {
                acc[r] = 0.0;
            }
            for (uint t = 0; t < D_PER_LANE; t += 4) {
                const uint d = lane * D_PER_LANE + t;
                const vec4 k = load_k4(k_base, first + c, d);
                for (uint r = 0; r < Br; ++r) {
                    const uint qi = r * D + d;
                    float a = acc[r];
                    a = fma(Qs[qi], k.x, a);
                    a = fma(Qs[qi + 1], k.y, a);
                    a = fma(Qs[qi + 2], k.z, a);
                    a = fma(Qs[qi + 3], k.w, a);
                    acc[r] = a;
                }
            }
            for (uint r = 0; r < Br; ++r) {
                partial[(r * Bc + c) * D_split + lane] = acc[r];
            }
        }
        barrier();

        // 2. Scores and the softmax update, one invocation per row. A key whose mask entry is
        //    −∞ is skipped, as ggml's CPU path does: weight exactly 0, its K and V values never
        //    used (no arithmetic on the infinity either).
        if (tid < Br) {
            const uint r = tid;
            const bool masked = p.mask != 0 && row_valid(r);
            const uint mask_row = (row_tile * Br + r) * m_stride + first;
            float tile_max = NEG_HALF_MAX;
            for (uint c = 0; c < ncols; ++c) {
                const uint at = (r * Bc + c) * D_split;
                const bool live = !masked || uint(data_m_bits[mask_row + c]) != F16_NEG_INF_BITS;
                key_live[r * Bc + c] = live ? 1 : 0;
                if (!live) {
                    continue;
                }
                for (uint w = D_split / 2; w > 0; w /= 2) {
                    for (uint l = 0; l < w; ++l) {
                        partial[at + l] += partial[at + l + w];
                    }
                }
                float s = partial[at];
                if (p.logit_softcap != 0.0) {
                    s = p.logit_softcap * tanh(s);
                }
                if (masked) {
                    s += slope * float(data_m[mask_row + c]);
                }
                scores[r * Bc + c] = s;
                tile_max = max(tile_max, s);
            }
            const float m_old = row_max[r];
            const float m_new = max(m_old, tile_max);
            // Nothing is accumulated while the maximum is still the initial −FLT_MAX/2.
            const float alpha = m_old == NEG_HALF_MAX ? 0.0 : exp(m_old - m_new);
            float sum = 0.0;
            for (uint c = 0; c < ncols; ++c) {
                float e = 0.0;
                if (key_live[r * Bc + c] != 0) {
                    e = exp(scores[r * Bc + c] - m_new);
                }
                scores[r * Bc + c] = e;
                sum += e;
            }
            row_sum[r] = row_sum[r] * alpha + sum;
            row_max[r] = m_new;
            row_alpha[r] = alpha;
        }
        barrier();

        // 3. O = O·α + Σ_c P_c·V_c for this invocation's 4 output elements. (The next tile's
        //    step 1 writes only `partial`, and its barrier orders step 2 after this.)
        for (uint o = tid; o < Br * D / 4; o += WorkGroupSize) {
            const uint r = o / (D / 4);
            const uint d = (o % (D / 4)) * 4;
            vec4 acc = Os[o] * row_alpha[r];
            for (uint c = 0; c < ncols; ++c) {
                const float pc = scores[r * Bc + c];
                if (pc != 0.0) {
                    acc = fma(vec4(pc), load_v4(v_base, first + c, d), acc);
                }
            }
            Os[o] = acc;
        }
    }

    // Same invocation-to-element map as step 3, so each reads its own O; L and M were last
    // written before the last barrier.
    for (uint o = tid; o < Br * D / 4; o += WorkGroupSize) {
        const uint r = o / (D / 4);
        const uint d = (o % (D / 4)) * 4;
        if (!row_valid(r)) {
            continue;
        }
        if (p.k_num > 1) {
            const uint at = split_o_offset(r) + d;
            data_o[at] = Os[o].x;
            data_o[at + 1] = Os[o].y;
            data_o[at + 2] = Os[o].z;
            data_o[at + 3] = Os[o].w;
            if (d == 0) {
                data_o[split_l_offset(r)] = row_sum[r];
                data_o[split_m_offset(r)] = row_max[r];
            }
        } else {
            const vec4 out4 = row_sum[r] == 0.0 ? vec4(ROW_NAN) : Os[o] * (1.0 / row_sum[r]);
            const uint at = dst_offset(r) + d;
            data_o[at] = out4.x;
            data_o[at + 1] = out4.y;
            data_o[at + 2] = out4.z;
            data_o[at + 3] = out4.w;
        }
    }
}
