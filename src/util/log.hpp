// Diagnostics to stderr, filtered by FA_JIT_LOG=warn|info|debug (default: warn).
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace fa_jit::log {

enum class Level { off = 0, warn = 1, info = 2, debug = 3 };

// The level read once from FA_JIT_LOG.
Level level() noexcept;
inline bool enabled(Level l) noexcept { return static_cast<int>(l) <= static_cast<int>(level()); }

void write(Level l, std::string_view message) noexcept;

template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
    if (enabled(Level::warn)) write(Level::warn, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
    if (enabled(Level::info)) write(Level::info, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
    if (enabled(Level::debug)) write(Level::debug, fmt::format(f, std::forward<Args>(args)...));
}

// Emits a warning only the first time `key` is seen in this process (e.g. "cache-dir-unwritable").
void warn_once(std::string_view key, std::string_view message) noexcept;

}  // namespace fa_jit::log
