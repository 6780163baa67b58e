// The cache directory: creating it private, deciding whether to trust it, naming its files, and listing them.
//   <key hex>.fajit   an entry          <key hex>.lock   its lock file
//   .tmp.<pid>.<tid>.<random>           an entry being written (renamed to its .fajit name when complete)
// Any other file there is left alone.
#pragma once

#include "cache/cache_key.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace fa_jit::cache {

// Creates `dir` if needed (the leaf with mode 0700, whatever the umask) and checks it with why_untrusted().
// Returns why it cannot be used, or "" when it can.
std::string prepare_directory(const std::filesystem::path& dir);

// Why the existing directory `dir` must not be used ("" when it may): not a directory, owned by another user,
// writable by group or others (code from it could be anyone's), or not writable by us.
std::string why_untrusted(const std::filesystem::path& dir);

std::filesystem::path entry_path(const std::filesystem::path& dir, const CacheKey& key);
std::filesystem::path lock_path(const std::filesystem::path& dir, const CacheKey& key);
// A fresh temporary file name in `dir`: pid and thread id keep writers apart, the random part keeps one thread's
// successive attempts apart (O_EXCL catches the rest).
std::filesystem::path temp_path(const std::filesystem::path& dir);

enum class FileKind { entry, lock, temp, other };

struct DirFile {
    std::filesystem::path path;
    std::uint64_t bytes = 0;
    std::filesystem::file_time_type mtime{};
};

// The regular files of `kind` in `dir`. Files that vanish while we look (another process evicting) are skipped.
std::vector<DirFile> scan(const std::filesystem::path& dir, FileKind kind);
std::uint64_t sum_bytes(const std::vector<DirFile>& files);

// Removes a file; a file already gone counts as removed (another process got there first).
bool remove_file(const std::filesystem::path& path);

}  // namespace fa_jit::cache
