// DiskCache, the façade over the entry format, the directory, file I/O and eviction: load, store, and the locked
// compile-once path. Maintenance (list, prune, clear) is in maintenance.cpp.
#include "cache/disk_cache.hpp"

#include "cache/directory.hpp"
#include "cache/entry_format.hpp"
#include "cache/eviction.hpp"
#include "cache/file_io.hpp"
#include "cache/stats.hpp"
#include "util/log.hpp"

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fa_jit::cache {
namespace fs = std::filesystem;

namespace {

// A bad entry is reported once and removed -- unless the file at `path` is no longer the one we read (another
// process replaced it with a fresh entry meanwhile): removing that one would throw away good work.
void reject_entry(const fs::path& path, const struct stat& read_st, const std::string& why) {
    log::warn_once("cache-bad-entry:" + path.string(),
                   fmt::format("removing bad cache entry {}: {}; the kernel will be recompiled", path.string(), why));
    struct stat now {};
    if (::lstat(path.c_str(), &now) == 0 && now.st_ino == read_st.st_ino && now.st_dev == read_st.st_dev)
        ::unlink(path.c_str());
}

}  // namespace

DiskCache::DiskCache(DiskCacheConfig config) : config_(std::move(config)) {
    if (!config_.enabled) {
        log::debug("disk cache disabled (FA_JIT_CACHE=0)");
        return;
    }
    const std::string problem = prepare_directory(config_.dir);
    if (!problem.empty()) {
        log::warn_once("cache-dir:" + config_.dir.string(),
                       fmt::format("disk cache off: {}. Kernels are still compiled, just not cached", problem));
        return;
    }
    usable_ = true;
    log::debug("disk cache at {} (max {} bytes)", config_.dir.string(), config_.max_bytes);
}

DiskCache& DiskCache::instance() {
    static DiskCache cache(DiskCacheConfig::from_env());
    return cache;
}

std::string DiskCache::why_unusable() const {
    if (usable()) return "";
    if (!config_.enabled) return "disabled by FA_JIT_CACHE";
    if (std::string problem = why_untrusted(config_.dir); !problem.empty()) return problem;
    return "a write failed earlier in this process";  // store() turned the cache off
}

std::optional<Compiled> DiskCache::load(const CacheKey& key, const std::string& arch) {
    if (!usable()) return std::nullopt;
    count_disk_lookup();
    const fs::path path = entry_path(config_.dir, key);
    Fd fd(open_retry(path, O_RDONLY | O_NOFOLLOW));
    if (!fd) {
        if (errno == ENOENT)
            log::debug("cache miss {}", key.hex());
        else
            log::warn_once("cache-open:" + path.string(),
                           fmt::format("cannot open cache entry {}: {}", path.string(), std::strerror(errno)));
        return std::nullopt;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        reject_entry(path, st, "not a regular file");
        return std::nullopt;
    }

    Entry entry;
    std::string problem = read_entry(fd.get(), static_cast<std::uint64_t>(st.st_size), true, entry);
    if (problem.empty() && entry.meta.key_hex != key.hex())
        problem =
            fmt::format("it holds the entry of key {} (renamed or copied from another file?)", entry.meta.key_hex);
    if (problem.empty() && entry.meta.arch != arch)
        problem = fmt::format("it was compiled for {}, {} was requested", entry.meta.arch, arch);
    if (!problem.empty()) {
        reject_entry(path, st, problem);
        return std::nullopt;
    }

    // A hit makes the entry the most recently used one for eviction. Failure only skews the LRU order.
    ::futimens(fd.get(), nullptr);
    log::debug("cache hit {} ({}, {})", key.hex(), entry.meta.kernel, arch);
    return to_compiled(std::move(entry));
}

void DiskCache::store(const CacheKey& key, const EntryLabel& label, const Compiled& compiled) {
    if (!usable()) return;
    try {
        const fs::path path = entry_path(config_.dir, key);
        const EntryMetadata meta{key.hex(),     compiled.arch,          label.kernel, label.family,
                                 label.options, compiled.lowered_names, compiled.log};
        const std::string bytes = encode_entry(meta, compiled);
        const WriteError err = write_atomically(path, bytes, temp_path);
        if (!err.step.empty()) {
            if (err.step == "rename" && err.error == ENOENT) {
                // Our temporary file was removed by a concurrent clear(): nothing is wrong with the directory.
                log::debug("cache store of {} lost to a concurrent clear", path.string());
                return;
            }
            usable_ = false;
            log::warn_once("cache-store:" + config_.dir.string(),
                           fmt::format("disk cache off for this process: cannot {} in {}: {}. Kernels are still "
                                       "compiled, just not cached; free space or fix the permissions, or set "
                                       "FA_JIT_CACHE_DIR elsewhere",
                                       err.step, config_.dir.string(), std::strerror(err.error)));
            return;
        }
        log::info("cached {} for {} ({} bytes) as {}", label.kernel, compiled.arch, bytes.size(), path.string());

        // Evict down to the cap, keeping the entry just written even if it alone exceeds it.
        evict_lru(config_.dir, config_.max_bytes, &path);
        remove_temps(config_.dir, /*only_stale=*/true);
    } catch (const std::exception& e) {
        // bad_alloc or a filesystem error while evicting: the entry is only a cache, never worth an exception.
        log::warn_once("cache-store-exception:" + config_.dir.string(),
                       fmt::format("disk cache store in {} failed: {}", config_.dir.string(), e.what()));
    }
}

Compiled DiskCache::get_or_create(const CacheKey& key, const std::string& arch, const EntryLabel& label,
                                  const std::function<Compiled()>& make, bool* was_hit) {
    if (auto hit = load(key, arch)) {
        if (was_hit) *was_hit = true;
        return std::move(*hit);
    }
    return create_after_miss(key, arch, label, make, was_hit);
}

Compiled DiskCache::create_after_miss(const CacheKey& key, const std::string& arch, const EntryLabel& label,
                                      const std::function<Compiled()>& make, bool* was_hit) {
    if (was_hit) *was_hit = false;
    // Another thread or process may be compiling this kernel right now: wait for it, then look again. This second
    // look is what makes N processes that miss at once compile the kernel once.
    const FileLock lock = usable() ? FileLock::acquire(lock_path(config_.dir, key)) : FileLock{};
    if (lock) {
        if (auto hit = load(key, arch)) {
            if (was_hit) *was_hit = true;
            return std::move(*hit);
        }
    }
    Compiled compiled = make();
    store(key, label, compiled);
    return compiled;
}

}  // namespace fa_jit::cache
