// The on-disk kernel cache: where it is, what it holds, and how to maintain and warm it (what fa-jit-cache uses).
//
// get_kernel() and attention() keep every kernel they compile on disk, one file per kernel, so that a later process
// loads it instead of running NVRTC again.
//   Directory  FA_JIT_CACHE_DIR, else $XDG_CACHE_HOME/fa_jit, else ~/.cache/fa_jit; created with mode 0700. A
//              directory another user owns or that other users can write is never used: code from it could be
//              anyone's.
//   Entries    <dir>/<key>.fajit: a header (magic, format version, checksums), metadata (arch, kernel, family,
//              options, NVRTC's log) and the cubin or PTX. Written to a temporary file, fsync'ed, renamed: readers
//              never see half an entry. Every read verifies the checksums; a bad or stale entry is reported once,
//              removed and recompiled.
//   Locks      <dir>/<key>.lock (flock): processes that miss the same kernel at once compile it once.
//   Size       least-recently-used entries are evicted above FA_JIT_CACHE_MAX_BYTES (default 1 GiB); a hit makes
//              an entry recent.
// A cache that cannot be used (FA_JIT_CACHE=0, a directory that cannot be created, is not writable or not
// trusted, a failed write) only costs compile time: kernels are still compiled, with one warning.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fa_jit/export.hpp"
#include "fa_jit/jit.hpp"

namespace fa_jit::cache {

// "123", "64K", "500M", "2G", "1T": binary multiples, case-insensitive; "B" may follow ("123B", "2GB"), and
// "i" or "iB" a unit ("64KiB"). nullopt when malformed or above 2^64 - 1. FA_JIT_CACHE_MAX_BYTES and the tools'
// size options are read with it.
FA_JIT_API std::optional<std::uint64_t> parse_byte_size(std::string_view text);

struct FA_JIT_API DiskCacheConfig {
    std::filesystem::path dir;             // empty when none of the variables below names one
    bool enabled = true;                   // FA_JIT_CACHE=0 (or off, false, no) disables
    std::uint64_t max_bytes = 1ull << 30;  // FA_JIT_CACHE_MAX_BYTES

    // Reads FA_JIT_CACHE_DIR, XDG_CACHE_HOME (ignored unless absolute), HOME, FA_JIT_CACHE and
    // FA_JIT_CACHE_MAX_BYTES (malformed: one warning, and the default).
    static DiskCacheConfig from_env();
};

// One entry file and what its metadata says, for listing and verifying.
struct FA_JIT_API EntryInfo {
    std::filesystem::path file;
    std::uint64_t file_bytes = 0;
    std::filesystem::file_time_type last_used{};  // the file's mtime: a hit refreshes it
    std::string kernel;                           // source name + name expressions
    std::string family;                           // CompileRequest::family; empty when the request named none
    std::string arch;
    std::vector<std::string> options;
    std::string problem;  // empty when the entry verified; else why it is bad (and then the fields may be empty)
    std::string key() const { return file.stem().string(); }  // the entry's key: its file name less ".fajit"
};

// What an entry records about its kernel besides the binary. Shown by list(); not part of the key.
struct FA_JIT_API EntryLabel {
    std::string kernel;  // e.g. "attention_fp32.cu fa_jit::attention_fwd_fp32<64, 64, 128, 4, false>"
    std::vector<std::string> options;
    std::string family;
};

struct CacheKey;  // the library's key of an entry (a hash of the request, the arch and the compiler versions)

class FA_JIT_API DiskCache {
public:
    // Creates the directory if needed and checks it; an unusable cache is reported by one warning.
    explicit DiskCache(DiskCacheConfig config);

    // The process-wide cache configured from the environment (the one get_kernel() and attention() use).
    static DiskCache& instance();

    // False when disabled, or the directory could not be created, is not writable or not trusted, or a write
    // failed earlier in this process. An unusable cache misses every load and ignores every store.
    bool usable() const noexcept { return usable_; }
    const DiskCacheConfig& config() const noexcept { return config_; }
    // Why the cache is unusable ("" when it is usable), from the configuration and the directory as they are now.
    std::string why_unusable() const;

    // --- The compile path (keys come from the library) ---
    // Returns the entry if present and valid for `key` and `arch`. A bad entry (truncated, checksum mismatch,
    // stale format, wrong arch or key) is reported once, removed, and treated as a miss.
    std::optional<Compiled> load(const CacheKey& key, const std::string& arch);
    // Atomically writes the entry, then evicts least-recently-used entries above max_bytes.
    // Failures (full disk, permissions) warn once and disable the cache for this process; never throws.
    void store(const CacheKey& key, const EntryLabel& label, const Compiled& compiled);
    // load(), then on a miss create_after_miss(). `was_hit` reports whether `make` was skipped. Exceptions from
    // `make` propagate (nothing is stored).
    Compiled get_or_create(const CacheKey& key, const std::string& arch, const EntryLabel& label,
                           const std::function<Compiled()>& make, bool* was_hit = nullptr);
    // For a caller whose load() just missed: takes the key's lock (waiting while another process compiles it),
    // loads again (that process may just have written it), else calls `make`, stores its result and returns it.
    Compiled create_after_miss(const CacheKey& key, const std::string& arch, const EntryLabel& label,
                               const std::function<Compiled()>& make, bool* was_hit = nullptr);

    // --- Maintenance (they work on whatever files are there, even when the cache is unusable) ---
    // Every entry file with its metadata; with `verify`, payload checksums are checked too (slower: reads every
    // binary) and `problem` filled. Without it, only the header and metadata are read and checked.
    std::vector<EntryInfo> list(bool verify) const;
    // The bytes of all entry files.
    std::uint64_t total_bytes() const;
    // Removes least-recently-used entries until the total is at most `max_bytes`; returns how many were removed.
    std::size_t prune(std::uint64_t max_bytes);
    // Removes every entry (and stray temporary and lock files); returns how many entries were removed.
    std::size_t clear();
    // Removes the entries that fail verification; returns how many.
    std::size_t remove_bad();

private:
    DiskCacheConfig config_;
    // Atomic: a failing store() turns the cache off while other threads may be reading it.
    std::atomic<bool> usable_{false};
};

// Compiles `request` for its arch ("sm_80", "sm_90a", "compute_90": normalized, as parse_arch() returns) into the
// process-wide disk cache, unless it is there already; needs no GPU. Returns true when it was cached (NVRTC not
// run), false when it was compiled and stored. Throws CompileError when NVRTC rejects it or is missing.
FA_JIT_API bool compile_into_cache(const CompileRequest& request);

}  // namespace fa_jit::cache
