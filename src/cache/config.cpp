// The cache's configuration from the environment, and the byte sizes it (and the tools) accept.
#include "fa_jit/cache.hpp"

#include "util/log.hpp"

#include <cctype>
#include <cstdlib>

namespace fa_jit::cache {
namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

bool disabled_by(std::string v) {
    for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return v == "0" || v == "off" || v == "false" || v == "no";
}

}  // namespace

std::optional<std::uint64_t> parse_byte_size(std::string_view s) {
    std::uint64_t value = 0;
    std::size_t i = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
        const unsigned digit = static_cast<unsigned>(s[i] - '0');
        if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
        value = value * 10 + digit;
    }
    if (i == 0) return std::nullopt;
    std::string_view suffix = s.substr(i);
    int shift = 0;
    if (!suffix.empty()) {
        switch (suffix[0]) {
            case 'k': case 'K': shift = 10; break;
            case 'm': case 'M': shift = 20; break;
            case 'g': case 'G': shift = 30; break;
            case 't': case 'T': shift = 40; break;
            default: break;
        }
        if (shift) suffix.remove_prefix(1);
        if (shift && (suffix == "i" || suffix == "iB")) suffix = {};
        if (suffix == "B" || suffix == "b") suffix = {};
    }
    if (!suffix.empty()) return std::nullopt;
    if (shift && value > (UINT64_MAX >> shift)) return std::nullopt;
    return value << shift;
}

DiskCacheConfig DiskCacheConfig::from_env() {
    DiskCacheConfig c;
    if (const auto dir = env("FA_JIT_CACHE_DIR"); !dir.empty())
        c.dir = dir;
    else if (const auto xdg = env("XDG_CACHE_HOME"); !xdg.empty() && fs::path(xdg).is_absolute())
        c.dir = fs::path(xdg) / "fa_jit";  // the XDG spec says to ignore a relative XDG_CACHE_HOME
    else if (const auto home = env("HOME"); !home.empty())
        c.dir = fs::path(home) / ".cache" / "fa_jit";

    c.enabled = !disabled_by(env("FA_JIT_CACHE"));

    if (const auto max = env("FA_JIT_CACHE_MAX_BYTES"); !max.empty()) {
        if (const auto bytes = parse_byte_size(max))
            c.max_bytes = *bytes;
        else
            log::warn_once("cache-max-bytes",
                           fmt::format("ignoring FA_JIT_CACHE_MAX_BYTES='{}': expected a byte count such as "
                                       "1073741824, 500M or 2G; using the default of {} bytes",
                                       max, c.max_bytes));
    }
    return c;
}

}  // namespace fa_jit::cache
