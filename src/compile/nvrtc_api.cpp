#include "compile/nvrtc_api.hpp"

#include "fa_jit/errors.hpp"
#include "util/log.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace fa_jit {
namespace nvrtc {
namespace {

// Where NVRTC may be: an explicit path, the loader's search path, then the toolkit fa_jit was built against.
std::vector<std::string> candidates() {
    std::vector<std::string> c;
    if (const char* p = std::getenv("FA_JIT_NVRTC_LIBRARY"); p && *p) c.emplace_back(p);
    for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12"}) c.emplace_back(name);
    for (const char* dir : {FA_JIT_CUDA_LIB_DIR, "/usr/local/cuda/lib64"}) {
        c.push_back(std::string(dir) + "/libnvrtc.so.13");
        c.push_back(std::string(dir) + "/libnvrtc.so.12");
    }
    return c;
}

struct Loaded {
    Api api;
    std::exception_ptr error;
};

std::atomic<bool> is_loaded{false};

Loaded load() {
    Loaded out;
    void* lib = nullptr;
    std::string tried;
    for (const std::string& path : candidates()) {
        if ((lib = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL))) {
            log::debug("NVRTC loaded from {}", path);
            break;
        }
        tried += (tried.empty() ? "" : ", ") + path;
    }
    if (!lib) {
        out.error = std::make_exception_ptr(CompileError(
            "", {}, "", "NVRTC not found (tried " + tried + "); set FA_JIT_NVRTC_LIBRARY or warm the kernel cache"));
        return out;
    }
    std::string missing;
#define FA_JIT_RESOLVE(name)                                                                                          \
    out.api.name = reinterpret_cast<decltype(out.api.name)>(dlsym(lib, #name));                                       \
    if (!out.api.name) missing += (missing.empty() ? "" : ", ") + std::string(#name);
    FA_JIT_NVRTC_FUNCTIONS(FA_JIT_RESOLVE)
#undef FA_JIT_RESOLVE
    if (!missing.empty()) {
        out.error = std::make_exception_ptr(CompileError("", {}, "", "NVRTC is too old; missing: " + missing));
        return out;
    }
    int major = 0, minor = 0;
    out.api.nvrtcVersion(&major, &minor);
    out.api.version = major * 1000 + minor * 10;
    is_loaded.store(true, std::memory_order_release);
    return out;
}

}  // namespace

const Api& api() {
    static const Loaded loaded = load();
    if (loaded.error) std::rethrow_exception(loaded.error);
    return loaded.api;
}

bool loaded() noexcept { return is_loaded.load(std::memory_order_acquire); }

std::string library_path() {
    if (!loaded()) return "";
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(api().nvrtcVersion), &info) || !info.dli_fname) return "";
    return info.dli_fname;
}

}  // namespace nvrtc
}  // namespace fa_jit
