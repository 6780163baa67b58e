// FA_JIT_HOST_DEVICE: marks constexpr helpers that both the kernels (NVRTC, nvcc) and the host library (a plain C++
// compiler, which has no __host__ / __device__) evaluate.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define FA_JIT_HOST_DEVICE __host__ __device__
#else
#define FA_JIT_HOST_DEVICE
#endif
