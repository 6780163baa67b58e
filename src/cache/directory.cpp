// The cache directory: private creation, the trust check, file names and scanning.
#include "cache/directory.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <string_view>
#include <system_error>

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace fa_jit::cache {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kEntrySuffix = ".fajit";
constexpr std::string_view kLockSuffix = ".lock";
constexpr std::string_view kTempPrefix = ".tmp.";

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

FileKind classify(std::string_view name) {
    if (starts_with(name, kTempPrefix)) return FileKind::temp;
    if (name.size() == 32 + kEntrySuffix.size() && ends_with(name, kEntrySuffix)) return FileKind::entry;
    if (name.size() == 32 + kLockSuffix.size() && ends_with(name, kLockSuffix)) return FileKind::lock;
    return FileKind::other;
}

}  // namespace

std::string prepare_directory(const fs::path& dir) {
    if (dir.empty())
        return "no cache directory: none of FA_JIT_CACHE_DIR, XDG_CACHE_HOME, HOME is set. Set FA_JIT_CACHE_DIR "
               "to a directory you own";
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
        if (errno != ENOENT) return fmt::format("cannot access {}: {}", dir.string(), std::strerror(errno));
        std::error_code ec;
        if (dir.has_parent_path()) fs::create_directories(dir.parent_path(), ec);
        if (ec)
            return fmt::format("cannot create {}: {}. Set FA_JIT_CACHE_DIR to a writable directory",
                               dir.parent_path().string(), ec.message());
        // The leaf is created private; chmod because the umask may have removed bits we need (never added any).
        if (::mkdir(dir.c_str(), 0700) == 0)
            ::chmod(dir.c_str(), 0700);
        else if (errno != EEXIST)
            return fmt::format("cannot create {}: {}. Set FA_JIT_CACHE_DIR to a writable directory", dir.string(),
                               std::strerror(errno));
    }
    return why_untrusted(dir);
}

std::string why_untrusted(const fs::path& dir) {
    if (dir.empty())
        return "no cache directory: none of FA_JIT_CACHE_DIR, XDG_CACHE_HOME, HOME is set. Set FA_JIT_CACHE_DIR "
               "to a directory you own";
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return fmt::format("cannot access {}: {}", dir.string(), std::strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return fmt::format("{} is not a directory. Set FA_JIT_CACHE_DIR to a directory", dir.string());
    if (st.st_uid != ::geteuid())
        return fmt::format(
            "{} is owned by uid {}, not by this user (uid {}); code from it could be anyone's, so it is not "
            "trusted. Set FA_JIT_CACHE_DIR to a directory you own",
            dir.string(), st.st_uid, ::geteuid());
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return fmt::format(
            "{} is writable by other users (mode {:04o}: group- or world-writable); code from it could be "
            "anyone's, so it is not trusted. "
            "Fix with: chmod 700 {}",
            dir.string(), st.st_mode & 07777, dir.string());
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        return fmt::format("{} is not writable: {}. Fix its permissions, or set FA_JIT_CACHE_DIR to a writable "
                           "directory (FA_JIT_CACHE=0 turns the disk cache off)",
                           dir.string(), std::strerror(errno));
    return "";
}

fs::path entry_path(const fs::path& dir, const CacheKey& key) { return dir / (key.hex() + std::string(kEntrySuffix)); }
fs::path lock_path(const fs::path& dir, const CacheKey& key) { return dir / (key.hex() + std::string(kLockSuffix)); }

fs::path temp_path(const fs::path& dir) {
    thread_local std::mt19937_64 rng(std::random_device{}() ^
                                     std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()));
    return dir / fmt::format("{}{}.{}.{:016x}", kTempPrefix, ::getpid(), static_cast<long>(::syscall(SYS_gettid)),
                             rng());
}

std::vector<DirFile> scan(const fs::path& dir, FileKind kind) {
    std::vector<DirFile> files;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (classify(it->path().filename().native()) != kind) continue;
        std::error_code e1, e2, e3;
        if (!it->is_regular_file(e1) || e1) continue;
        DirFile f{it->path(), it->file_size(e2), it->last_write_time(e3)};
        if (!e2 && !e3) files.push_back(std::move(f));
    }
    return files;
}

std::uint64_t sum_bytes(const std::vector<DirFile>& files) {
    std::uint64_t total = 0;
    for (const auto& f : files) total += f.bytes;
    return total;
}

bool remove_file(const fs::path& path) { return ::unlink(path.c_str()) == 0 || errno == ENOENT; }

}  // namespace fa_jit::cache
