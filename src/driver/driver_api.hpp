// The CUDA driver, loaded with dlopen on first use. Nothing links libcuda: a program using fa_jit starts on a
// machine without a driver, and only GPU operations fail (with a CudaError that says so).
#pragma once

#include <cuda.h>

namespace fa_jit::driver {

// One pointer per driver entry point fa_jit uses, typed from cuda.h's own prototypes, with the CUDA version that
// introduced that prototype. cuGetProcAddress must be asked for that version, not for CUDA_VERSION: one base name
// can carry several ABIs (CUDA 13.0 gave cuCtxSynchronize and cuCtxGetDevice a context parameter), and the
// newest one would not match the prototype we call. Versions are those of cudaTypedefs.h's PFN_<name>_v<version>.
#define FA_JIT_DRIVER_FUNCTIONS(X)    \
    X(cuInit, 2000)                   \
    X(cuDriverGetVersion, 2020)       \
    X(cuGetErrorName, 6000)           \
    X(cuGetErrorString, 6000)         \
    X(cuDeviceGetCount, 2000)         \
    X(cuDeviceGet, 2000)              \
    X(cuDeviceGetName, 2000)          \
    X(cuDeviceGetAttribute, 2000)     \
    X(cuDevicePrimaryCtxRetain, 7000) \
    X(cuCtxGetCurrent, 4000)          \
    X(cuCtxSetCurrent, 4000)          \
    X(cuCtxGetDevice, 2000)           \
    X(cuCtxSynchronize, 2000)         \
    X(cuModuleLoadData, 2000)         \
    X(cuModuleUnload, 2000)           \
    X(cuModuleGetFunction, 2000)      \
    X(cuFuncGetAttribute, 2020)       \
    X(cuFuncSetAttribute, 9000)       \
    X(cuLaunchKernel, 4000)           \
    X(cuMemAlloc, 3020)               \
    X(cuMemFree, 3020)                \
    X(cuMemcpyHtoD, 3020)             \
    X(cuMemcpyDtoH, 3020)             \
    X(cuMemsetD8, 3020)               \
    X(cuMemsetD32Async, 3020)         \
    X(cuMemcpyDtoHAsync, 3020)        \
    X(cuMemAllocAsync, 11020)         \
    X(cuMemFreeAsync, 11020)          \
    X(cuStreamIsCapturing, 10000)     \
    X(cuStreamCreate, 2000)           \
    X(cuStreamDestroy, 4000)          \
    X(cuStreamSynchronize, 2000)      \
    X(cuEventCreate, 2000)            \
    X(cuEventDestroy, 4000)           \
    X(cuEventRecord, 2000)            \
    X(cuEventSynchronize, 2000)       \
    X(cuEventElapsedTime, 12080)      \
    X(cuPointerGetAttribute, 4000)

// Entry points that older drivers lack, or that only the tests use (CUDA graphs); null when absent, and callers
// fall back.
#define FA_JIT_DRIVER_OPTIONAL_FUNCTIONS(X) \
    X(cuFuncGetParamInfo, 12040)            \
    X(cuLaunchKernelEx, 11060)              \
    X(cuTensorMapEncodeTiled, 12000)        \
    X(cuStreamGetId, 12000)                 \
    X(cuStreamBeginCapture, 10010)          \
    X(cuStreamEndCapture, 10000)            \
    X(cuGraphInstantiateWithFlags, 11040)   \
    X(cuGraphLaunch, 10000)                 \
    X(cuGraphExecDestroy, 10000)            \
    X(cuGraphDestroy, 10000)

struct Api {
#define FA_JIT_DECLARE(name, version) decltype(&::name) name = nullptr;
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
        const CUresult fa_jit_result_ = ::fa_jit::driver::api().name(__VA_ARGS__);                                    \
        if (fa_jit_result_ != CUDA_SUCCESS) ::fa_jit::driver::throw_error(#name, fa_jit_result_, __FILE__, __LINE__); \
    } while (0)
