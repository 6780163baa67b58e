#include "cache/cache_key.hpp"

#include <xxhash.h>  // header-only: XXH_INLINE_ALL is defined for the library's sources

#include <cstdio>
#include <string_view>

namespace fa_jit::cache {
namespace {

// Streams fields into an XXH3-128 state. Every variable-length field is preceded by its length, and every list by
// its element count, so ("ab", "c") and ("a", "bc") hash differently and no field can bleed into the next.
class KeyHasher {
public:
    KeyHasher() { XXH3_128bits_reset(&state_); }

    void integer(std::uint64_t v) {
        // Little-endian bytes: the key of an entry must not depend on the host's byte order.
        unsigned char bytes[8];
        for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(v >> (8 * i));
        XXH3_128bits_update(&state_, bytes, sizeof bytes);
    }
    void text(std::string_view s) {
        integer(s.size());
        XXH3_128bits_update(&state_, s.data(), s.size());
    }
    void texts(const std::vector<std::string>& list) {
        integer(list.size());
        for (const auto& s : list) text(s);
    }

    CacheKey digest() const {
        const XXH128_hash_t h = XXH3_128bits_digest(&state_);
        return CacheKey{{h.high64, h.low64}};
    }

private:
    XXH3_state_t state_;
};

}  // namespace

std::string CacheKey::hex() const {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hash[0]),
                  static_cast<unsigned long long>(hash[1]));
    return std::string(buf, 32);
}

CacheKey make_key(const CompileRequest& request, int nvrtc_version, int driver_version) {
    KeyHasher h;
    h.integer(kFormatVersion);
    h.text(request.source.name);
    h.text(request.source.text);
    h.integer(request.source.headers.size());
    for (const auto& header : request.source.headers) {
        h.text(header.name);
        h.text(header.text);
    }
    h.texts(request.name_expressions);
    h.texts(request.options);
    h.text(request.arch);
    // Signed versions widened through int64 so that a negative "unknown" value cannot alias a real one.
    h.integer(static_cast<std::uint64_t>(static_cast<std::int64_t>(nvrtc_version)));
    h.integer(static_cast<std::uint64_t>(static_cast<std::int64_t>(driver_version)));
    return h.digest();
}

}  // namespace fa_jit::cache
