// The CUDA driver, loaded with dlopen on first use. Nothing links libcuda: a program using fa_jit starts on a
// machine without a driver, and only GPU operations fail (with a CudaError that says so).
#pragma once

#include <cuda.h>

namespace fa_jit::driver {

// One pointer per driver entry point fa_jit uses, typed from cuda.h's own prototypes (decltype keeps them exact:
// cuda.h maps e.g. cuMemAlloc to cuMemAlloc_v2, and cuGetProcAddress resolves the base name to that version).
#define FA_JIT_DRIVER_FUNCTIONS(X)                                                                                    \
    X(cuInit)                                                                                                         \
    X(cuDriverGetVersion)                                                                                             \
    X(cuGetErrorName)                                                                                                 \
    X(cuGetErrorString)                                                                                               \
    X(cuDeviceGetCount)                                                                                               \
    X(cuDeviceGet)                                                                                                    \
    X(cuDeviceGetName)                                                                                                \
    X(cuDeviceGetAttribute)                                                                                           \
    X(cuDevicePrimaryCtxRetain)                                                                                       \
    X(cuCtxGetCurrent)                                                                                                \
    X(cuCtxSetCurrent)                                                                                                \
    X(cuCtxGetDevice)                                                                                                 \
    X(cuCtxSynchronize)                                                                                               \
    X(cuModuleLoadData)                                                                                               \
    X(cuModuleUnload)                                                                                                 \
    X(cuModuleGetFunction)                                                                                            \
    X(cuFuncGetAttribute)                                                                                             \
    X(cuFuncSetAttribute)                                                                                             \
    X(cuLaunchKernel)                                                                                                 \
    X(cuMemAlloc)                                                                                                     \
    X(cuMemFree)                                                                                                      \
    X(cuMemcpyHtoD)                                                                                                   \
    X(cuMemcpyDtoH)                                                                                                   \
    X(cuMemsetD8)                                                                                                     \
    X(cuStreamCreate)                                                                                                 \
    X(cuStreamDestroy)                                                                                                \
    X(cuStreamSynchronize)                                                                                            \
    X(cuEventCreate)                                                                                                  \
    X(cuEventDestroy)                                                                                                 \
    X(cuEventRecord)                                                                                                  \
    X(cuEventSynchronize)                                                                                             \
    X(cuEventElapsedTime)                                                                                             \
    X(cuPointerGetAttribute)

// Entry points that older drivers lack; null when absent, and callers fall back.
#define FA_JIT_DRIVER_OPTIONAL_FUNCTIONS(X) X(cuFuncGetParamInfo)

struct Api {
#define FA_JIT_DECLARE(name) decltype(&::name) name = nullptr;
    FA_JIT_DRIVER_FUNCTIONS(FA_JIT_DECLARE)
    FA_JIT_DRIVER_OPTIONAL_FUNCTIONS(FA_JIT_DECLARE)
#undef FA_JIT_DECLARE
    int version = 0;  // cuDriverGetVersion
};

// The loaded and initialized driver (cuInit done). Throws CudaError when libcuda.so.1 is missing or cuInit fails;
// later calls rethrow the same error cheaply.
const Api& api();

// Non-throwing probe: the API when loaded and initialized, else null.
const Api* try_api() noexcept;

// Throws CudaError naming `call`, the CUresult's name and message, and where.
[[noreturn]] void throw_error(const char* call, CUresult result, const char* file, int line);

}  // namespace fa_jit::driver

// Calls api().name(args...) and throws CudaError naming the call when it fails.
#define FA_JIT_CU(name, ...)                                                                                          \
    do {                                                                                                              \
        const CUresult fa_jit_result_ = ::fa_jit::driver::api().name(__VA_ARGS__);                                  \
        if (fa_jit_result_ != CUDA_SUCCESS) ::fa_jit::driver::throw_error(#name, fa_jit_result_, __FILE__, __LINE__); \
    } while (0)
