// Cache keys: XXH3-128 over length-prefixed fields, the source part hashed once and the target added per key.
#include "cache/cache_key.hpp"

#include "cache/stats.hpp"

#include <xxhash.h>  // header-only: XXH_INLINE_ALL is defined for the library's sources

#include <cstdio>
#include <cstring>
#include <new>

namespace fa_jit::cache {
namespace {

static_assert(sizeof(XXH3_state_t) <= 576 && alignof(XXH3_state_t) <= 64,
              "SourceHash::state_ must be able to hold an XXH3_state_t");

// Streams fields into an XXH3-128 state. Every variable-length field is preceded by its length, and every list by
// its element count, so ("ab", "c") and ("a", "bc") hash differently and no field can bleed into the next.
class Fields {
public:
    explicit Fields(XXH3_state_t& state) : state_(state) {}

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
    // Signed versions widened through int64 so that a negative "unknown" value cannot alias a real one.
    void version(int v) { integer(static_cast<std::uint64_t>(static_cast<std::int64_t>(v))); }

private:
    XXH3_state_t& state_;
};

XXH3_state_t& state_in(unsigned char* storage) { return *std::launder(reinterpret_cast<XXH3_state_t*>(storage)); }

// The fields before the name expressions, shared by both constructors.
Fields begin(unsigned char* storage, const Source& source) {
    XXH3_state_t& state = *new (storage) XXH3_state_t;
    XXH3_128bits_reset(&state);
    Fields f(state);
    f.integer(kKeyVersion);
    f.text(source.name);
    f.text(source.text);
    f.integer(source.headers.size());
    for (const auto& header : source.headers) {
        f.text(header.name);
        f.text(header.text);
    }
    count_source_hash();
    return f;
}

}  // namespace

std::string CacheKey::hex() const {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hash[0]),
                  static_cast<unsigned long long>(hash[1]));
    return std::string(buf, 32);
}

SourceHash::SourceHash(const Source& source, const std::vector<std::string>& name_expressions,
                       const std::vector<std::string>& options) {
    Fields f = begin(state_, source);
    f.texts(name_expressions);
    f.texts(options);
}

SourceHash::SourceHash(const Source& source, std::string_view name_expression, const std::vector<std::string>& options) {
    Fields f = begin(state_, source);
    f.integer(1);  // hashed exactly as the list {name_expression}
    f.text(name_expression);
    f.texts(options);
}

CacheKey SourceHash::key(std::string_view arch, int nvrtc_version, int driver_version) const {
    // A copy of the state (memcpy is what XXH3_copyState does), so this SourceHash can key other targets too.
    alignas(64) unsigned char copy[sizeof state_];
    std::memcpy(copy, state_, sizeof state_);
    XXH3_state_t& state = state_in(copy);
    Fields f(state);
    f.text(arch);
    f.version(nvrtc_version);
    f.version(driver_version);
    const XXH128_hash_t h = XXH3_128bits_digest(&state);
    return CacheKey{{h.high64, h.low64}};
}

CacheKey make_key(const CompileRequest& request, int nvrtc_version, int driver_version) {
    return SourceHash(request).key(request.arch, nvrtc_version, driver_version);
}

}  // namespace fa_jit::cache
