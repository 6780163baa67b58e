// Pieces shared by the two fp16/bf16 attention kernels (attention_f16.cu: mma.sync; attention_f16_wgmma.cu: wgmma):
// the element-type traits, conversion to T pairs, and the epilogue's shared / global accesses.
#pragma once

#include "dtypes.cuh"
#include "ptx.cuh"

namespace fa_jit {

template <typename T>
struct F16IsBf16 {
    static constexpr bool value = false;
};
template <>
struct F16IsBf16<bf16_t> {
    static constexpr bool value = true;
};
template <typename T>
struct F16IsSupported {
    static constexpr bool value = false;
};
template <>
struct F16IsSupported<half_t> {
    static constexpr bool value = true;
};
template <>
struct F16IsSupported<bf16_t> {
    static constexpr bool value = true;
};

namespace f16_ops {

// Two floats -> one 32-bit register of two 16-bit values, `lo` in the low half (round to nearest even).
template <bool kBf16>
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
    unsigned r;
    if (kBf16)
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// Plain 4- and 16-byte shared / global accesses for the epilogues (inline PTX: no toolkit vector types under NVRTC).
__device__ __forceinline__ void st_shared_b32(unsigned addr, unsigned v) {
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void ld_shared_v4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}
__device__ __forceinline__ void st_global_v4(void* ptr, const unsigned (&r)[4]) {
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(ptr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
}

}  // namespace f16_ops
}  // namespace fa_jit
