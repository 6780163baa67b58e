// Element types shared by the kernels and the reference. NVRTC compiles these with no CUDA toolkit header, so the
// 16-bit types are plain storage structs and every conversion is one inline-PTX instruction.
#pragma once

namespace fa_jit {

// IEEE binary16 and bfloat16, stored as raw bits. Layout-compatible with __half / __nv_bfloat16 (2 bytes, 2-aligned).
struct alignas(2) half_t {
    unsigned short bits;
};
struct alignas(2) bf16_t {
    unsigned short bits;
};

// ---- bit casts (no __float_as_uint: that needs the toolkit's device_functions header) -------------------------------
__device__ __forceinline__ unsigned float_as_bits(float x) {
    unsigned u;
    asm("mov.b32 %0, %1;" : "=r"(u) : "f"(x));
    return u;
}
__device__ __forceinline__ float bits_as_float(unsigned u) {
    float x;
    asm("mov.b32 %0, %1;" : "=f"(x) : "r"(u));
    return x;
}

// -inf without <cmath> (NVRTC has no __builtin_huge_val).
__device__ __forceinline__ float neg_inf_f32() { return bits_as_float(0xff800000u); }
__device__ __forceinline__ double neg_inf_f64() {
    double x;
    asm("mov.b64 %0, %1;" : "=d"(x) : "l"(0xfff0000000000000ull));
    return x;
}

// ---- to_float: exact widening --------------------------------------------------------------------------------------
__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(half_t x) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
    return f;
}
__device__ __forceinline__ float to_float(bf16_t x) {
    // bf16 is the upper half of an fp32; widening is a shift (cvt.f32.bf16 would need sm_90).
    return bits_as_float(static_cast<unsigned>(x.bits) << 16);
}

// ---- from_float<T>: round to nearest even (NaN stays NaN, overflow goes to inf) -----------------------------------
template <typename T>
__device__ __forceinline__ T from_float(float x);

template <>
__device__ __forceinline__ float from_float<float>(float x) {
    return x;
}
template <>
__device__ __forceinline__ half_t from_float<half_t>(float x) {
    half_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(x));
    return h;
}
template <>
__device__ __forceinline__ bf16_t from_float<bf16_t>(float x) {
    bf16_t h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(x));  // sm_80+
    return h;
}

}  // namespace fa_jit
