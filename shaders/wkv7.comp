#version 450

// wkv7.comp: RWKV-7 WKV recurrence (GGML_OP_RWKV_WKV7), all f32.
//
// Bindings (set 0, float arrays): 0 r, 1 w, 2 k, 3 v, 4 a, 5 b (readonly, (S, H, T)),
//   6 state_in (readonly, S*S*H*B), 7 dst ((C, T + S*B)).
// Push constants: uint B (sequences), T (tokens of all sequences), C (= S*H), H (heads).
// Specialization constants: none declared; the host's constant 0 is ignored.
// Defines: A_TYPE and FLOAT_TYPE are accepted and ignored (everything is float).
// Dispatch: B*H workgroups in x; workgroup x handles sequence x / H, head x % H.
//
// Any head size S = C / H works (ggml accepts any). Up to MAX_HEAD_SIZE (128) invocation i
// owns state row i (value index) in a private array and the token's vectors are shared;
// invocations i >= S only take part in the barriers. Larger S takes a slower path that keeps
// the state in dst's final-state rows (its own output) and lets invocation i own the rows
// i, i + 128, ...: rows are independent, so that path needs no shared memory and no barrier.
// T must be a multiple of B (tokens are split into B runs of T / B).
//
// The loops over j are written out in full by macro (MAX_HEAD_SIZE steps in groups of 8, each
// group and step skipped past S), in the same sequential order. Every index into the private
// state array is then a constant, so it lives in registers: with a rolled or partly unrolled
// loop the index is a variable and the array goes to local memory (on the H100 that made this
// kernel several times slower and its timing unstable). It also matters on lavapipe: llvmpipe
// stops *every* loop of an invocation once it has run 65535 iterations in total (its "loop
// limiter", shared between all loops of a shader), so a rolled loop gave wrong results from
// token 499 on at S = 64 (2·64 iterations a token); now only the token loop counts.
//
// Token t + 1's inputs are loaded into registers while token t is computed, and stored to
// shared memory after token t's last barrier: a token's loads then overlap the previous one's
// arithmetic instead of waiting between the two barriers. The arithmetic and its order are
// unchanged. With S a multiple of 4 a row of the state is read and written as 4-vectors
// (state_in4, dst4 alias bindings 6 and 7), a quarter of the scalar path's requests.
//
// Worked example (B = 2, T = 4, H = 2, S = 3, C = 6): workgroup 3 is sequence 1, head 1,
// tokens 2 and 3. Token t reads inputs at t*6 + 3 + j and writes y_i to dst[t*6 + 3 + i];
// row i of its state is state_in[1*6*3 + 1*3*3 + 3i + j] = state_in[27 + 3i + j] and the
// final state goes to dst[4*6 + 27 + 3i + j], the last one (i = j = 2) at dst[59], the
// end of the 6 * (4 + 3*2) = 60-element dst.

#define MAX_HEAD_SIZE 128
// Written out rather than left to [[unroll]], which a driver may ignore (and then count): the
// steps j = 0 .. MAX_HEAD_SIZE − 1 in order, a group of 8 skipped as a whole past S (a
// uniform branch) and each step past S inside its group.
#define EIGHT_STEPS(STEP, j0) if (j0 < head_size) { STEP(j0) STEP(j0 + 1) STEP(j0 + 2) \
    STEP(j0 + 3) STEP(j0 + 4) STEP(j0 + 5) STEP(j0 + 6) STEP(j0 + 7) }
#define ALL_STEPS(STEP) EIGHT_STEPS(STEP, 0) EIGHT_STEPS(STEP, 8) EIGHT_STEPS(STEP, 16) \
    EIGHT_STEPS(STEP, 24) EIGHT_STEPS(STEP, 32) EIGHT_STEPS(STEP, 40) EIGHT_STEPS(STEP, 48) \
    EIGHT_STEPS(STEP, 56) EIGHT_STEPS(STEP, 64) EIGHT_STEPS(STEP, 72) EIGHT_STEPS(STEP, 80) \
    EIGHT_STEPS(STEP, 88) EIGHT_STEPS(STEP, 96) EIGHT_STEPS(STEP, 104) EIGHT_STEPS(STEP, 112) \
    EIGHT_STEPS(STEP, 120)
#define LOAD_STEP(j) if (j < head_size) { state[j] = state_in[state_row + j]; }
#define STORE_STEP(j) if (j < head_size) { dst[state_out + j] = state[j]; }
// The same steps four at a time (S a multiple of 4: a quad is inside S as a whole).
#define FOUR_QUADS(STEP, j0) if (j0 < head_size) { STEP(j0) STEP(j0 + 4) STEP(j0 + 8) \
    STEP(j0 + 12) }
#define ALL_QUADS(STEP) FOUR_QUADS(STEP, 0) FOUR_QUADS(STEP, 16) FOUR_QUADS(STEP, 32) \
    FOUR_QUADS(STEP, 48) FOUR_QUADS(STEP, 64) FOUR_QUADS(STEP, 80) FOUR_QUADS(STEP, 96) \
    FOUR_QUADS(STEP, 112)
#define LOAD_QUAD(j) if (j < head_size) { const vec4 q = state_in4[(state_row + j) / 4]; \
    state[j] = q.x; state[j + 1] = q.y; state[j + 2] = q.z; state[j + 3] = q.w; }
#define STORE_QUAD(j) if (j < head_size) { \
    dst4[(state_out + j) / 4] = vec4(state[j], state[j + 1], state[j + 2], state[j + 3]); }
#define SA_STEP(j) if (j < head_size) { sa = fma(TOK(a_tok, j), state[j], sa); }
#define UPDATE_STEP(j) if (j < head_size) { \
    state[j] = state[j] * TOK(w_tok, j) + v_i * TOK(k_tok, j) + sa * TOK(b_tok, j); \
    y = fma(TOK(r_tok, j), state[j], y); }

layout(local_size_x = MAX_HEAD_SIZE, local_size_y = 1, local_size_z = 1) in;

layout(binding = 0) readonly buffer RBuf { float r[]; };
layout(binding = 1) readonly buffer WBuf { float w[]; };
layout(binding = 2) readonly buffer KBuf { float k[]; };
layout(binding = 3) readonly buffer VBuf { float v[]; };
layout(binding = 4) readonly buffer ABuf { float a[]; };
layout(binding = 5) readonly buffer BBuf { float b[]; };
layout(binding = 6) readonly buffer StateBuf { float state_in[]; };
layout(binding = 7) buffer DstBuf { float dst[]; };
layout(binding = 6) readonly buffer StateBuf4 { vec4 state_in4[]; };
layout(binding = 7) writeonly buffer DstBuf4 { vec4 dst4[]; };

layout(push_constant) uniform parameter {
    uint B;
    uint T;
    uint C;
    uint H;
} p;

// The current token's per-key vectors, read by every row.
// As 4-vectors: the steps j = 4m .. 4m + 3 read one vector (a constant component each).
shared vec4 r_tok[MAX_HEAD_SIZE / 4];
shared vec4 w_tok[MAX_HEAD_SIZE / 4];
shared vec4 k_tok[MAX_HEAD_SIZE / 4];
shared vec4 a_tok[MAX_HEAD_SIZE / 4];
shared vec4 b_tok[MAX_HEAD_SIZE / 4];
#define TOK(arr, j) arr[(j) / 4][(j) % 4]

// S > MAX_HEAD_SIZE: rows i, i + MAX_HEAD_SIZE, ... of this invocation, state in dst.
void large_head(uint head_size, uint seq, uint head, uint i)
{
    const uint seq_len = p.T / p.B;
    const uint first_token = seq * seq_len;
    for (uint row = i; row < head_size; row += MAX_HEAD_SIZE) {
        const uint state_row = seq * p.C * head_size + head * head_size * head_size + row * head_size;
        const uint st = p.T * p.C + state_row;
        for (uint j = 0; j < head_size; ++j) {
            dst[st + j] = state_in[state_row + j];
        }
        for (uint t = first_token; t < first_token + seq_len; ++t) {
            const uint tb = t * p.C + head * head_size;
            float sa = 0.0;
            for (uint j = 0; j < head_size; ++j) {
                sa = fma(a[tb + j], dst[st + j], sa);
            }
            const float v_i = v[tb + row];
            float y = 0.0;
            for (uint j = 0; j < head_size; ++j) {
                const float s = dst[st + j] * w[tb + j] + v_i * k[tb + j] + sa * b[tb + j];
                dst[st + j] = s;
                y = fma(r[tb + j], s, y);
            }
            dst[tb + row] = y;
        }
    }
}

void main()
{
    const uint head_size = p.C / p.H;
    const uint seq = gl_WorkGroupID.x / p.H;
    const uint head = gl_WorkGroupID.x % p.H;
    const uint i = gl_LocalInvocationID.x;
    if (head_size > MAX_HEAD_SIZE) {
        large_head(head_size, seq, head, i);
        return;
    }
    const bool owns_row = i < head_size;

    const uint seq_len = p.T / p.B;
    const uint first_token = seq * seq_len;
    // Offset of state row i, both in state_in and (after the T*C outputs) in dst.
    const uint state_row = seq * p.C * head_size + head * head_size * head_size + i * head_size;

    // Rows are 4-vector aligned when S is a multiple of 4 (so are C and T * C).
    const bool quads = head_size % 4 == 0;
    float state[MAX_HEAD_SIZE];
    if (owns_row) {
        if (quads) {
            ALL_QUADS(LOAD_QUAD)
        } else {
            ALL_STEPS(LOAD_STEP)
        }
    }

    // The next token's inputs (this invocation's element of each), one token ahead.
    float next_r = 0.0, next_w = 0.0, next_k = 0.0, next_a = 0.0, next_b = 0.0, next_v = 0.0;
    const uint end_token = first_token + seq_len;
#define LOAD_TOKEN(t) { const uint e = (t) * p.C + head * head_size + i; \
    next_r = r[e]; next_w = w[e]; next_k = k[e]; next_a = a[e]; next_b = b[e]; next_v = v[e]; }
    if (owns_row && first_token < end_token) {
        LOAD_TOKEN(first_token)
    }

    for (uint t = first_token; t < end_token; ++t) {
        const uint token_base = t * p.C + head * head_size;
        const float v_i = next_v;
        if (owns_row) {
            TOK(r_tok, i) = next_r;
            TOK(w_tok, i) = next_w;
            TOK(k_tok, i) = next_k;
            TOK(a_tok, i) = next_a;
            TOK(b_tok, i) = next_b;
        }
        barrier();

        if (owns_row) {
            if (t + 1 < end_token) {
                LOAD_TOKEN(t + 1)
            }

            // sa_i = sum_j a_j * St[i][j], over the old state, j in order.
            float sa = 0.0;
            ALL_STEPS(SA_STEP)

            // St'[i][j] = St[i][j] w_j + v_i k_j + sa_i b_j;  y_i = sum_j r_j St'[i][j].
            float y = 0.0;
            ALL_STEPS(UPDATE_STEP)
            dst[token_base + i] = y;
        }
        // The next token overwrites the shared vectors.
        barrier();
    }

    if (owns_row) {
        const uint state_out = p.T * p.C + state_row;
        if (quads) {
            ALL_QUADS(STORE_QUAD)
        } else {
            ALL_STEPS(STORE_STEP)
        }
    }
}
