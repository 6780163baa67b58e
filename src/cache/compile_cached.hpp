// compile() behind the disk cache, for get_kernel() (arch from the device) and compile_into_cache() (arch named).
//
// Cost of a miss: the source is hashed once (by the caller's SourceHash), the disk is looked at once before the
// key's lock and once under it (another process may have just stored the kernel). Cost of a hit: one hash, one
// lookup, and no NVRTC load (nvrtc_memo.hpp).
#pragma once

#include "cache/cache_key.hpp"
#include "fa_jit/cache.hpp"
#include "fa_jit/jit.hpp"

#include <functional>
#include <string>

namespace fa_jit::cache {

// What a cache entry of `request` records about it: source name and name expressions, options, family.
EntryLabel label_for(const CompileRequest& request);

// Looks up the kernel keyed by `source` (the hashed request) and `lookup_arch` in `disk`. On a miss, calls
// `resolve()` for the request to compile -- it may load NVRTC, which a hit never does, and may name another arch
// than `lookup_arch` (get_kernel(): PTX for a device newer than NVRTC) -- then compiles it under the key's lock
// and stores it. `was_hit` reports whether NVRTC was skipped. Throws CompileError.
Compiled compile_cached(DiskCache& disk, const SourceHash& source, const std::string& lookup_arch,
                        const std::function<CompileRequest()>& resolve, bool* was_hit = nullptr);

}  // namespace fa_jit::cache
