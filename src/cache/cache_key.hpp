// The disk-cache key: a 128-bit hash over everything that changes the compiled binary.
#pragma once

#include "fa_jit/jit.hpp"

#include <array>
#include <cstdint>
#include <string>

namespace fa_jit::cache {

// Bumped whenever the entry format or the meaning of a key input changes.
inline constexpr std::uint32_t kFormatVersion = 1;

struct CacheKey {
    std::array<std::uint64_t, 2> hash{};
    std::string hex() const;  // 32 lowercase hex digits, used as the entry's file name
    bool operator==(const CacheKey& o) const noexcept { return hash == o.hash; }
};

// Hashes: kFormatVersion, the source name and text, every header's name and text, the name expressions, the
// options, the arch, `nvrtc_version`, and `driver_version` (pass 0 for cubins: only PTX is JIT-compiled by the
// driver, so only PTX entries depend on it). Fields are length-prefixed so that no two inputs collide by concatenation.
CacheKey make_key(const CompileRequest& request, int nvrtc_version, int driver_version);

}  // namespace fa_jit::cache
