#include "cache/compile_cached.hpp"

#include "cache/disk_cache.hpp"
#include "compile/nvrtc_api.hpp"

#include <cuda.h>

namespace fa_jit::cache {

int cache_nvrtc_version() noexcept {
    try {
        return nvrtc::api().version;
    } catch (const CompileError&) {
        return CUDA_VERSION;
    }
}

CacheKey key_for(const CompileRequest& request) {
    const bool ptx = request.arch.rfind("compute_", 0) == 0;
    return make_key(request, cache_nvrtc_version(), ptx ? driver_version() : 0);
}

Compiled compile_cached(const CompileRequest& request, bool* was_hit) {
    std::string description = request.source.name;
    for (const std::string& e : request.name_expressions) description += " " + e;
    return DiskCache::instance().get_or_create(
        key_for(request), request.arch, description, request.options, [&] { return compile(request); }, was_hit);
}

}  // namespace fa_jit::cache
