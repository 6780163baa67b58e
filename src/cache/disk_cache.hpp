// The on-disk kernel cache: one file per compiled kernel, written atomically, verified on every read.
//
// Directory: FA_JIT_CACHE_DIR, else $XDG_CACHE_HOME/fa_jit, else ~/.cache/fa_jit (created 0700).
// A directory that other users can write is never used: code from it could be anyone's.
// Entry file <dir>/<key hex>.fajit = header (magic, format version, payload checksum, metadata) + payload.
// Writes: temporary file in the same directory, fsync, rename. A per-key lock file (<key hex>.lock, flock)
// makes concurrent processes wait for one compile instead of compiling the same kernel N times.
// Least-recently-used eviction under FA_JIT_CACHE_MAX_BYTES (default 1 GiB); a hit refreshes the entry's mtime.
#pragma once

#include "cache/cache_key.hpp"
#include "fa_jit/jit.hpp"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fa_jit::cache {

struct DiskCacheConfig {
    std::filesystem::path dir;
    bool enabled = true;                     // FA_JIT_CACHE=0 disables
    std::uint64_t max_bytes = 1ull << 30;    // FA_JIT_CACHE_MAX_BYTES

    // Reads FA_JIT_CACHE_DIR, XDG_CACHE_HOME, HOME, FA_JIT_CACHE, FA_JIT_CACHE_MAX_BYTES.
    static DiskCacheConfig from_env();
};

// What an entry holds besides the binary: enough to verify it and to describe it in `fa-jit-cache list`.
struct EntryInfo {
    std::filesystem::path file;
    std::uint64_t file_bytes = 0;
    std::filesystem::file_time_type last_used{};
    std::string kernel;                 // source name + name expressions
    std::string arch;
    std::vector<std::string> options;
    std::string problem;                // empty when the entry verified; else why it is bad
};

class DiskCache {
public:
    explicit DiskCache(DiskCacheConfig config);

    // The process-wide cache configured from the environment.
    static DiskCache& instance();

    // False when disabled, or the directory could not be created, is not writable, or is not trusted
    // (each reported by one warning). An unusable cache misses every load and ignores every store.
    bool usable() const noexcept { return usable_; }
    const DiskCacheConfig& config() const noexcept { return config_; }

    // Returns the entry if present and valid for `key` and `arch`. A bad entry (truncated, checksum mismatch,
    // wrong magic/version/arch/key) is reported once, removed, and treated as a miss.
    std::optional<Compiled> load(const CacheKey& key, const std::string& arch);

    // Atomically writes the entry, then evicts least-recently-used entries above max_bytes.
    // Failures (full disk, permissions) warn once and disable the cache for this process; never throw.
    void store(const CacheKey& key, const std::string& kernel_description, const std::vector<std::string>& options,
               const Compiled& compiled);

    // load(); on a miss, takes the key's lock, loads again (another process may have just written it), else calls
    // `make`, stores its result and returns it. `was_hit` reports whether `make` was skipped. Exceptions from
    // `make` propagate (nothing is stored).
    Compiled get_or_create(const CacheKey& key, const std::string& arch, const std::string& kernel_description,
                           const std::vector<std::string>& options, const std::function<Compiled()>& make,
                           bool* was_hit = nullptr);

    // --- Maintenance (fa-jit-cache) ---
    // Every entry file with its metadata; with `verify`, payload checksums are checked and `problem` filled.
    std::vector<EntryInfo> list(bool verify) const;
    std::uint64_t total_bytes() const;
    // Removes least-recently-used entries until the total is at most `max_bytes`; returns how many were removed.
    std::size_t prune(std::uint64_t max_bytes);
    // Removes every entry (and stray temporary/lock files); returns how many entries were removed.
    std::size_t clear();
    // Removes the entries that fail verification; returns how many.
    std::size_t remove_bad();

private:
    DiskCacheConfig config_;
    // Atomic: a failing store() turns the cache off while other threads may be reading it.
    std::atomic<bool> usable_{false};
};

}  // namespace fa_jit::cache
