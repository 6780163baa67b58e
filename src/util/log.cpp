#include "util/log.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

namespace fa_jit::log {

Level level() noexcept {
    static const Level parsed = [] {
        const char* v = std::getenv("FA_JIT_LOG");
        if (!v || !*v) return Level::warn;
        if (!std::strcmp(v, "debug")) return Level::debug;
        if (!std::strcmp(v, "info")) return Level::info;
        if (!std::strcmp(v, "off") || !std::strcmp(v, "0")) return Level::off;
        if (std::strcmp(v, "warn") != 0)  // once: this initializer runs once per process
            std::fprintf(stderr, "[fa_jit warning] FA_JIT_LOG=%s is not a level (off, warn, info, debug); using warn\n",
                         v);
        return Level::warn;
    }();
    return parsed;
}

void write(Level l, std::string_view message) noexcept {
    static const char* const names[] = {"", "warning", "info", "debug"};
    // One fprintf per line so that lines from several threads do not interleave.
    std::fprintf(stderr, "[fa_jit %s] %.*s\n", names[static_cast<int>(l)], static_cast<int>(message.size()),
                 message.data());
}

void warn_once(std::string_view key, std::string_view message) noexcept {
    if (!enabled(Level::warn)) return;
    static std::mutex mutex;
    static std::set<std::string, std::less<>> seen;
    try {
        std::lock_guard lock(mutex);
        if (!seen.emplace(key).second) return;
    } catch (...) {
        return;
    }
    write(Level::warn, message);
}

}  // namespace fa_jit::log
