// compile() behind the disk cache. Used by get_kernel() (arch from the device) and by warmup (arch named).
#pragma once

#include "cache/cache_key.hpp"
#include "fa_jit/jit.hpp"

namespace fa_jit::cache {

// The NVRTC version that keys cache entries: the loadable NVRTC's, or, when none is installed (a deployment that
// only reads a warm cache), the CUDA version fa_jit was built against.
int cache_nvrtc_version() noexcept;

// The disk-cache key of `request`, whose arch is already resolved. PTX entries also depend on the driver version.
CacheKey key_for(const CompileRequest& request);

// Returns the cached binary for `request` (arch resolved), compiling and storing it on a miss.
// `was_hit` reports whether NVRTC was skipped.
Compiled compile_cached(const CompileRequest& request, bool* was_hit = nullptr);

}  // namespace fa_jit::cache
