// 2^x without the MUFU pipe, for the softmax (tile/softmax.cuh, Exp2Split). ex2 and softcap's tanh both run on the
// MUFU pipe, which then bounds softcap's key step at d 64 while the FMA pipe has room.
//
// x = j + f with j = round(x): adding 1.5 * 2^23 rounds x and leaves j in the low mantissa bits. 2^f for f in
// [-1/2, 1/2] is a polynomial in Horner form, times 2^j built from j by one shift-add into a float's exponent field.
// x below -126.5 (and -inf) gives exactly 0, as ex2.approx.ftz does (x is clamped to -127, whose 2^j is the float 0);
// NaN gives NaN, as ex2 does (the clamp keeps it, and the last step is a product, not an integer add).
// Host and device compute the same bits (IEEE adds and fmaf), so the CPU tests check the device's numbers.
#pragma once

#include "host_device.cuh"

#if !defined(__CUDACC_RTC__) && !defined(__CUDACC__)
#include <cmath>  // fmaf, fmaxf (built in for the device compilers)
#endif

namespace fa_jit {

namespace exp2_fma_detail {
FA_JIT_HOST_DEVICE inline int bits_of(float x) {
#if defined(__CUDA_ARCH__)
    return __float_as_int(x);
#else
    int i;
    __builtin_memcpy(&i, &x, sizeof i);
    return i;
#endif
}
FA_JIT_HOST_DEVICE inline float float_of(int i) {
#if defined(__CUDA_ARCH__)
    return __int_as_float(i);
#else
    float x;
    __builtin_memcpy(&x, &i, sizeof x);
    return x;
#endif
}
// max(x, lo), NaN kept (PTX max.NaN; fmaxf would return lo).
FA_JIT_HOST_DEVICE inline float max_keep_nan(float x, float lo) {
#if defined(__CUDA_ARCH__)
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(lo));
    return r;
#else
    return x != x ? x : fmaxf(x, lo);
#endif
}
// Round-to-nearest adds that the compiler may not fuse or reorder.
FA_JIT_HOST_DEVICE inline float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}
}  // namespace exp2_fma_detail

// Coefficients fitted for relative error over [-1/2, 1/2]; max relative error of 2^x in fp32 Horner: degree 3
// 7.5e-5 (2 % of half a bf16 ulp, 2^-8: P rounds to the same bf16 almost always), degree 4 2.7e-6 (0.6 % of half
// an fp16 ulp, 2^-11; degree 3 would be 15 % of it).
template <int kDegree>
FA_JIT_HOST_DEVICE inline float exp2_fma(float x) {
    static_assert(kDegree == 3 || kDegree == 4, "fitted degrees: 3 and 4");
    using namespace exp2_fma_detail;
    constexpr float kRound = 12582912.f;  // 1.5 * 2^23
    x = max_keep_nan(x, -127.f);          // -inf too
    const float r = add_rn(x, kRound);    // 1.5 * 2^23 + round(x), exact
    const float f = add_rn(x, -add_rn(r, -kRound));
    float p;
    if constexpr (kDegree == 3)
        p = fmaf(fmaf(fmaf(0.0551714525f, f, 0.242610618f), f, 0.693260968f), f, 0.999928117f);
    else
        p = fmaf(fmaf(fmaf(fmaf(0.00957008172f, f, 0.0559178069f), f, 0.240247443f), f, 0.693121850f), f, 0.999999285f);
    // bits(r) = bits(1.5 * 2^23) + j, whose shift by 23 leaves j << 23: 2^j is the float with exponent field j + 127
    // (0 at j = -127: the float 0).
    const float scale = float_of(static_cast<int>((static_cast<unsigned>(bits_of(r)) << 23) + 0x3f800000u));
    return p * scale;
}

}  // namespace fa_jit
