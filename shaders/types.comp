// types.comp: element types and ggml block layouts shared by every kernel.
//
// Select the A operand with the define DATA_A_<T>=1, T in F32, F16, BF16, Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0. That defines
//   A_TYPE   element type of the A buffer (float, float16_t, uint16_t for raw bf16 bits,
//            or the block struct),
//   QUANT_K  elements per block (1 for the float types),
//   QUANT_R  2 when byte j of qs holds elements j (low nibble) and j + QUANT_K/2 (high
//            nibble), 1 otherwise.
// Every block struct is declared whatever DATA_A says, so kernels that read several
// quantized operands (flash attention K/V) can name them. Each struct is std430 with
// 8/16-bit members and is byte-identical to its ggml-common.h block (size = array stride).
// To add a type: declare its struct below, then add a DATA_A_<T> branch at the end.

#ifndef VKDIFF_TYPES_COMP
#define VKDIFF_TYPES_COMP

#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require

// bf16 is the upper half of a binary32, so widening is a shift (exact).
float bf16_to_fp32(uint bits)
{
    return uintBitsToFloat(bits << 16);
}

// ---- Legacy 32-element blocks (all have 2-byte alignment except q5_1) ----

#define QK4_0 32
struct block_q4_0 {           // 18 bytes
    float16_t d;              // @0
    uint8_t qs[QK4_0 / 2];    // @2: element j in the low nibble, j + 16 in the high one
};

#define QK4_1 32
struct block_q4_1 {           // 20 bytes
    float16_t d;              // @0
    float16_t m;              // @2
    uint8_t qs[QK4_1 / 2];    // @4
};

#define QK5_0 32
struct block_q5_0 {           // 22 bytes
    float16_t d;              // @0
    uint16_t qh[2];           // @2: bit e of (qh[1] << 16 | qh[0]) is bit 4 of element e;
                              //     16-bit halves because offset 2 is not 4-byte aligned
    uint8_t qs[QK5_0 / 2];    // @6
};

#define QK5_1 32
struct block_q5_1 {           // 24 bytes, 4-byte aligned
    float16_t d;              // @0
    float16_t m;              // @2
    uint qh;                  // @4: bit e is bit 4 of element e
    uint8_t qs[QK5_1 / 2];    // @8
};

#define QK8_0 32
struct block_q8_0 {           // 34 bytes
    float16_t d;              // @0
    int8_t qs[QK8_0];         // @2
};

// ---- A operand selection ----

#if defined(DATA_A_F32)
#define A_TYPE float
#define QUANT_K 1
#define QUANT_R 1
#elif defined(DATA_A_F16)
#define A_TYPE float16_t
#define QUANT_K 1
#define QUANT_R 1
#elif defined(DATA_A_BF16)
#define A_TYPE uint16_t
#define QUANT_K 1
#define QUANT_R 1
#elif defined(DATA_A_Q4_0)
#define A_TYPE block_q4_0
#define QUANT_K QK4_0
#define QUANT_R 2
#elif defined(DATA_A_Q4_1)
#define A_TYPE block_q4_1
#define QUANT_K QK4_1
#define QUANT_R 2
#elif defined(DATA_A_Q5_0)
#define A_TYPE block_q5_0
#define QUANT_K QK5_0
#define QUANT_R 2
#elif defined(DATA_A_Q5_1)
#define A_TYPE block_q5_1
#define QUANT_K QK5_1
#define QUANT_R 2
#elif defined(DATA_A_Q8_0)
#define A_TYPE block_q8_0
#define QUANT_K QK8_0
#define QUANT_R 1
#endif

#endif // VKDIFF_TYPES_COMP
