// NVRTC, loaded with dlopen on first use, so a process whose kernels all come from the cache never needs it.
#pragma once

#include <nvrtc.h>

#include <string>

namespace fa_jit::nvrtc {

#define FA_JIT_NVRTC_FUNCTIONS(X)                                                                                     \
    X(nvrtcVersion)                                                                                                   \
    X(nvrtcGetErrorString)                                                                                            \
    X(nvrtcGetNumSupportedArchs)                                                                                      \
    X(nvrtcGetSupportedArchs)                                                                                         \
    X(nvrtcCreateProgram)                                                                                             \
    X(nvrtcDestroyProgram)                                                                                            \
    X(nvrtcAddNameExpression)                                                                                         \
    X(nvrtcCompileProgram)                                                                                            \
    X(nvrtcGetProgramLogSize)                                                                                         \
    X(nvrtcGetProgramLog)                                                                                             \
    X(nvrtcGetPTXSize)                                                                                                \
    X(nvrtcGetPTX)                                                                                                    \
    X(nvrtcGetCUBINSize)                                                                                              \
    X(nvrtcGetCUBIN)                                                                                                  \
    X(nvrtcGetLoweredName)

struct Api {
#define FA_JIT_DECLARE(name) decltype(&::name) name = nullptr;
    FA_JIT_NVRTC_FUNCTIONS(FA_JIT_DECLARE)
#undef FA_JIT_DECLARE
    int version = 0;  // major * 1000 + minor * 10
};

// The loaded NVRTC. Throws CompileError ("NVRTC not found ...") when it cannot be loaded.
const Api& api();

// True once api() has loaded NVRTC in this process (never loads it).
bool loaded() noexcept;

// The file NVRTC was loaded from ("" before it is loaded).
std::string library_path();

}  // namespace fa_jit::nvrtc
