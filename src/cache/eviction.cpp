// LRU eviction and cleanup of abandoned temporary files.
#include "cache/eviction.hpp"

#include "cache/directory.hpp"
#include "util/log.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace fa_jit::cache {
namespace fs = std::filesystem;

namespace {
// A temporary file this old belongs to a writer that died; younger ones may still be in flight.
constexpr auto kStaleTempAge = std::chrono::minutes(10);
}  // namespace

std::size_t evict_lru(const fs::path& dir, std::uint64_t max_bytes, const fs::path* keep) {
    std::vector<DirFile> entries = scan(dir, FileKind::entry);
    std::uint64_t total = sum_bytes(entries);
    if (total <= max_bytes) return 0;
    std::sort(entries.begin(), entries.end(), [](const DirFile& a, const DirFile& b) {
        return a.mtime != b.mtime ? a.mtime < b.mtime : a.path < b.path;
    });
    std::size_t removed = 0;
    for (const auto& e : entries) {
        if (total <= max_bytes) break;
        if (keep && e.path == *keep) continue;
        if (remove_file(e.path)) {
            total -= e.bytes;
            ++removed;
            log::info("evicted {} ({} bytes) from the disk cache", e.path.string(), e.bytes);
        }
    }
    return removed;
}

std::size_t remove_temps(const fs::path& dir, bool only_stale) {
    const auto cutoff = fs::file_time_type::clock::now() - kStaleTempAge;
    std::size_t n = 0;
    for (const auto& f : scan(dir, FileKind::temp))
        if ((!only_stale || f.mtime < cutoff) && remove_file(f.path)) ++n;
    return n;
}

}  // namespace fa_jit::cache
