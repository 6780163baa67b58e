// Keeping the cache directory in bounds: least-recently-used eviction under a byte cap, and removal of temporary
// files that writers left behind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace fa_jit::cache {

// Removes least-recently-used entries (oldest mtime first: a hit refreshes it) until their total is at most
// `max_bytes`, never `keep` (may be null). Concurrent evictors may remove the same files; each file gone counts
// toward the total either way. Returns how many this call removed.
std::size_t evict_lru(const std::filesystem::path& dir, std::uint64_t max_bytes, const std::filesystem::path* keep);

// Removes temporary files: all of them, or with `only_stale` those old enough that their writer must have died
// (younger ones may still be in flight). Returns how many.
std::size_t remove_temps(const std::filesystem::path& dir, bool only_stale);

}  // namespace fa_jit::cache
