// The disk-cache key: a 128-bit hash over everything that changes the compiled binary, computed in two steps so
// that the source (the costly part) is hashed once per request however many targets it is keyed for.
#pragma once

#include "fa_jit/jit.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fa_jit::cache {

// Bumped when the meaning of a key input changes: every key then changes and old entries are never looked up
// again (eviction removes them). A change of the entry layout bumps kFormatVersion (entry_format.hpp) instead,
// which keeps the keys, so an old entry is found, reported once as stale and recompiled.
inline constexpr std::uint32_t kKeyVersion = 1;

struct CacheKey {
    std::array<std::uint64_t, 2> hash{};
    std::string hex() const;  // 32 lowercase hex digits, used as the entry's file name
    bool operator==(const CacheKey& o) const noexcept { return hash == o.hash; }
};

// The source part of a key: kKeyVersion, the source name and text, every header's name and text, the name
// expressions and the options, hashed by the constructor. key() adds the target: a few dozen bytes to hash, so a
// miss that re-keys (the true NVRTC version, PTX for a device newer than NVRTC) does not hash the source again.
// Fields are length-prefixed so that no two inputs collide by concatenation. Allocates nothing.
class SourceHash {
public:
    SourceHash(const Source& source, const std::vector<std::string>& name_expressions,
               const std::vector<std::string>& options);
    // With the single name expression `name_expression` (get_kernel() when the request lists none).
    SourceHash(const Source& source, std::string_view name_expression, const std::vector<std::string>& options);
    explicit SourceHash(const CompileRequest& request)
        : SourceHash(request.source, request.name_expressions, request.options) {}

    // The key for `arch`, `nvrtc_version`, and `driver_version` (0 for cubins: only PTX is JIT-compiled by the
    // driver, so only PTX entries depend on it).
    CacheKey key(std::string_view arch, int nvrtc_version, int driver_version) const;

private:
    // An XXH3-128 streaming state, copied by key(); opaque here so that xxhash.h (inlined, with renamed symbols
    // in the library) stays out of this header. cache_key.cpp checks the size and alignment.
    alignas(64) unsigned char state_[576];
};

// SourceHash(request).key(request.arch, nvrtc_version, driver_version).
CacheKey make_key(const CompileRequest& request, int nvrtc_version, int driver_version);

}  // namespace fa_jit::cache
