// fp16 / bf16 element traits and the float -> 16-bit pair conversion the 16-bit kernels use for P and O.
#pragma once

#include "dtypes.cuh"

namespace fa_jit::tile {

template <typename T>
struct IsBf16 {
    static constexpr bool value = false;
};
template <>
struct IsBf16<bf16_t> {
    static constexpr bool value = true;
};
template <typename T>
struct IsF16Type {  // the element types of the 16-bit kernels
    static constexpr bool value = false;
};
template <>
struct IsF16Type<half_t> {
    static constexpr bool value = true;
};
template <>
struct IsF16Type<bf16_t> {
    static constexpr bool value = true;
};

// Two floats -> one 32-bit register of two 16-bit values, `lo` in the low half (round to nearest even): the A operand
// element pair of an MMA (P) or two neighbouring output columns (O).
template <bool kBf16>
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
    unsigned r;
    if (kBf16)
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// Probabilities in the accumulator layout (s[nt][2h + c]: row g + 8h, column 8nt + 2t + c) as the T pairs of P V's A
// operand: p[nt][h] holds columns 2t, 2t + 1 of row g + 8h.
template <bool kBf16, int kNT>
__device__ __forceinline__ void pack_probabilities(const float (&s)[kNT][4], unsigned (&p)[kNT][2]) {
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int h = 0; h < 2; ++h) p[nt][h] = pack2<kBf16>(s[nt][2 * h], s[nt][2 * h + 1]);
}

}  // namespace fa_jit::tile
