// DiskCache's maintenance, for fa-jit-cache: listing and verifying entries, pruning, clearing.
#include "cache/directory.hpp"
#include "cache/disk_cache.hpp"
#include "cache/entry_format.hpp"
#include "cache/eviction.hpp"
#include "cache/file_io.hpp"
#include "util/log.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>

namespace fa_jit::cache {

std::vector<EntryInfo> DiskCache::list(bool verify) const {
    std::vector<EntryInfo> infos;
    for (const auto& f : scan(config_.dir, FileKind::entry)) {
        EntryInfo info;
        info.file = f.path;
        info.file_bytes = f.bytes;
        info.last_used = f.mtime;
        Fd fd(open_retry(f.path, O_RDONLY | O_NOFOLLOW));
        struct stat st {};
        if (!fd || ::fstat(fd.get(), &st) != 0) {
            if (errno == ENOENT) continue;  // evicted since the scan
            info.problem = fmt::format("cannot open: {}", std::strerror(errno));
            infos.push_back(std::move(info));
            continue;
        }
        Entry entry;
        info.problem = read_entry(fd.get(), static_cast<std::uint64_t>(st.st_size), verify, entry);
        if (info.problem.empty() && entry.meta.key_hex != info.key())
            info.problem = fmt::format("it holds the entry of key {} (renamed?)", entry.meta.key_hex);
        info.kernel = std::move(entry.meta.kernel);
        info.family = std::move(entry.meta.family);
        info.arch = std::move(entry.meta.arch);
        info.options = std::move(entry.meta.options);
        infos.push_back(std::move(info));
    }
    return infos;
}

std::uint64_t DiskCache::total_bytes() const { return sum_bytes(scan(config_.dir, FileKind::entry)); }

std::size_t DiskCache::prune(std::uint64_t max_bytes) {
    remove_temps(config_.dir, /*only_stale=*/true);
    return evict_lru(config_.dir, max_bytes, nullptr);
}

std::size_t DiskCache::clear() {
    std::size_t removed = 0;
    for (const auto& e : scan(config_.dir, FileKind::entry))
        if (remove_file(e.path)) ++removed;
    // Lock files are recreated on demand; a process holding one keeps its lock on the unlinked inode, so at worst
    // a kernel being compiled right now gets compiled twice.
    for (const auto& l : scan(config_.dir, FileKind::lock)) remove_file(l.path);
    // Also in-flight temporaries: their writers then lose that one store (rename fails with ENOENT), nothing else.
    remove_temps(config_.dir, /*only_stale=*/false);
    return removed;
}

std::size_t DiskCache::remove_bad() {
    std::size_t removed = 0;
    for (const auto& info : list(/*verify=*/true))
        if (!info.problem.empty() && remove_file(info.file)) {
            log::info("removed bad cache entry {}: {}", info.file.string(), info.problem);
            ++removed;
        }
    return removed;
}

}  // namespace fa_jit::cache
