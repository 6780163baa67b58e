// compile() behind the disk cache: one lookup, and on a miss the locked compile-once path keyed by the compiler
// that really compiles. Also compile_into_cache(), warmup's entry point.
#include "cache/compile_cached.hpp"

#include "cache/disk_cache.hpp"
#include "cache/nvrtc_memo.hpp"

#include <optional>

namespace fa_jit::cache {
namespace {

// Only PTX is JIT-compiled by the driver, so only PTX entries depend on the driver's version.
int driver_version_for(const std::string& arch) { return arch.rfind("compute_", 0) == 0 ? driver_version() : 0; }

}  // namespace

EntryLabel label_for(const CompileRequest& request) {
    EntryLabel label{request.source.name, request.options, request.family};
    for (const std::string& e : request.name_expressions) label.kernel += " " + e;
    return label;
}

Compiled compile_cached(DiskCache& disk, const SourceHash& source, const std::string& lookup_arch,
                        const std::function<CompileRequest()>& resolve, bool* was_hit) {
    const int lookup_nvrtc = lookup_nvrtc_version(disk);
    CacheKey key = source.key(lookup_arch, lookup_nvrtc, driver_version_for(lookup_arch));
    if (std::optional<Compiled> hit = disk.load(key, lookup_arch)) {
        if (was_hit) *was_hit = true;
        return std::move(*hit);
    }

    // A miss compiles, so NVRTC is loaded anyway: the entry is keyed with the version of the NVRTC that compiles
    // it and the arch it is compiled for -- almost always those just looked up, whose key is then reused.
    const CompileRequest request = resolve();
    const int nvrtc = compiling_nvrtc_version(disk);
    const EntryLabel label = label_for(request);
    const auto make = [&] { return compile(request); };
    if (request.arch == lookup_arch && nvrtc == lookup_nvrtc)
        return disk.create_after_miss(key, request.arch, label, make, was_hit);
    // Another key (PTX for a device newer than NVRTC, or a stale version memo), finished from the same source
    // hash; not looked up yet.
    key = source.key(request.arch, nvrtc, driver_version_for(request.arch));
    return disk.get_or_create(key, request.arch, label, make, was_hit);
}

bool compile_into_cache(const CompileRequest& request) {
    bool hit = false;
    compile_cached(DiskCache::instance(), SourceHash(request), request.arch, [&] { return request; }, &hit);
    return hit;
}

}  // namespace fa_jit::cache
