#include "cache_status.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

namespace fa_jit::tools {

std::string why_unusable(const cache::DiskCache& cache) {
    if (cache.usable()) return "";
    const auto& config = cache.config();
    if (!config.enabled) return "disabled by FA_JIT_CACHE";
    const auto& dir = config.dir;
    if (dir.empty()) return "no cache directory: none of FA_JIT_CACHE_DIR, XDG_CACHE_HOME, HOME is set";
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return fmt::format("cannot access {}: {}", dir.string(), std::strerror(errno));
    if (!S_ISDIR(st.st_mode)) return fmt::format("{} is not a directory", dir.string());
    if (st.st_uid != ::geteuid())
        return fmt::format("{} is owned by uid {}, not by this user: not trusted", dir.string(), st.st_uid);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return fmt::format("{} is writable by other users (mode {:04o}): not trusted; fix with chmod 700",
                           dir.string(), st.st_mode & 07777);
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        return fmt::format("{} is not writable: {}", dir.string(), std::strerror(errno));
    return "a write failed earlier in this process";  // DiskCache turned itself off after a failed store
}

void warn_if_unusable(const cache::DiskCache& cache) {
    if (!cache.usable()) std::fprintf(stderr, "fa-jit-cache: warning: the disk cache is unusable: %s\n", why_unusable(cache).c_str());
}

std::string entry_key(const cache::EntryInfo& entry) { return entry.file.stem().string(); }

namespace {
std::chrono::system_clock::time_point to_system(std::filesystem::file_time_type t) {
    // C++17 has no clock_cast: shift by the two clocks' current difference (exact to well under a second).
    using namespace std::chrono;
    return time_point_cast<system_clock::duration>(t - std::filesystem::file_time_type::clock::now() +
                                                   system_clock::now());
}
}  // namespace

long long unix_seconds(std::filesystem::file_time_type t) {
    return std::chrono::duration_cast<std::chrono::seconds>(to_system(t).time_since_epoch()).count();
}

std::string format_time(std::filesystem::file_time_type t) {
    const std::time_t seconds = static_cast<std::time_t>(unix_seconds(t));
    std::tm local{};
    ::localtime_r(&seconds, &local);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
    return text;
}

}  // namespace fa_jit::tools
