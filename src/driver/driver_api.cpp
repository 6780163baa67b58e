#include "driver/driver_api.hpp"

#include "fa_jit/errors.hpp"
#include "util/log.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <exception>
#include <string>

namespace fa_jit {
namespace driver {
namespace {

constexpr int kNoDriver = -1;

// The library name first; a full path in FA_JIT_CUDA_LIBRARY lets a user point at a specific driver.
void* open_libcuda() {
    if (const char* path = std::getenv("FA_JIT_CUDA_LIBRARY"); path && *path) return dlopen(path, RTLD_NOW | RTLD_LOCAL);
    return dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
}

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

struct Loaded {
    Api api;
    std::exception_ptr error;  // set when loading or cuInit failed
};

Loaded load() {
    Loaded out;
    void* lib = open_libcuda();
    if (!lib) {
        const char* why = dlerror();
        out.error = std::make_exception_ptr(CudaError(
            "dlopen", kNoDriver, "CUDA_ERROR_NO_DRIVER",
            std::string("no CUDA driver: libcuda.so.1 not found (") + (why ? why : "unknown reason") +
                "). fa_jit can compile kernels without a driver, but running them needs an NVIDIA driver",
            ""));
        return out;
    }
    // Each entry point at the version of the prototype it is called through (see driver_api.hpp). Drivers without
    // cuGetProcAddress: the exact symbol cuda.h maps the name to (e.g. cuMemAlloc -> cuMemAlloc_v2).
    auto get_proc = reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
    auto resolve = [&](const char* name, int version, const char* symbol) -> void* {
        void* fn = nullptr;
        CUdriverProcAddressQueryResult status{};
        if (get_proc && get_proc(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS &&
            status == CU_GET_PROC_ADDRESS_SUCCESS)
            return fn;
        return dlsym(lib, symbol);
    };
    std::string missing;
#define FA_JIT_SYMBOL(name) #name
#define FA_JIT_EXPANDED_SYMBOL(name) FA_JIT_SYMBOL(name)
#define FA_JIT_RESOLVE(name, version)                                                                                 \
    out.api.name = reinterpret_cast<decltype(out.api.name)>(resolve(#name, version, FA_JIT_EXPANDED_SYMBOL(name)));  \
    if (!out.api.name) missing += (missing.empty() ? "" : ", ") + std::string(#name);
    FA_JIT_DRIVER_FUNCTIONS(FA_JIT_RESOLVE)
#undef FA_JIT_RESOLVE
#define FA_JIT_RESOLVE_OPTIONAL(name, version)                                                                        \
    out.api.name = reinterpret_cast<decltype(out.api.name)>(resolve(#name, version, FA_JIT_EXPANDED_SYMBOL(name)));
    FA_JIT_DRIVER_OPTIONAL_FUNCTIONS(FA_JIT_RESOLVE_OPTIONAL)
#undef FA_JIT_RESOLVE_OPTIONAL
    if (!missing.empty()) {
        out.error = std::make_exception_ptr(CudaError("cuGetProcAddress", kNoDriver, "CUDA_ERROR_NOT_FOUND",
                                                      "the CUDA driver is too old; missing: " + missing, ""));
        return out;
    }
    if (CUresult r = out.api.cuInit(0); r != CUDA_SUCCESS) {
        const char* name = nullptr;
        const char* message = nullptr;
        out.api.cuGetErrorName(r, &name);
        out.api.cuGetErrorString(r, &message);
        out.error = std::make_exception_ptr(
            CudaError("cuInit", r, name ? name : "CUDA_ERROR_UNKNOWN", message ? message : "unknown error", ""));
        return out;
    }
    out.api.cuDriverGetVersion(&out.api.version);
    log::debug("CUDA driver {} loaded", out.api.version);
    return out;
}

const Loaded& loaded() {
    static const Loaded instance = load();  // thread-safe one-time initialization
    return instance;
}

}  // namespace

const Api& api() {
    const Loaded& l = loaded();
    if (l.error) std::rethrow_exception(l.error);
    return l.api;
}

const Api* try_api() noexcept {
    const Loaded& l = loaded();
    return l.error ? nullptr : &l.api;
}

void throw_error(const char* call, CUresult result, const char* file, int line) {
    const char* name = nullptr;
    const char* message = nullptr;
    const Api& a = loaded().api;
    if (a.cuGetErrorName) a.cuGetErrorName(result, &name);
    if (a.cuGetErrorString) a.cuGetErrorString(result, &message);
    const char* base = file;
    for (const char* p = file; *p; ++p)
        if (*p == '/') base = p + 1;
    throw CudaError(call, static_cast<int>(result), name ? name : "CUresult " + std::to_string(result),
                    message ? message : "unknown error", std::string(base) + ":" + std::to_string(line));
}

}  // namespace driver
}  // namespace fa_jit
