// Per-thread counters of source hashes and disk lookups (see stats.hpp).
#include "cache/stats.hpp"

namespace fa_jit::cache {
namespace {
thread_local CacheStats counts;
}  // namespace

CacheStats thread_stats() noexcept { return counts; }
void count_source_hash() noexcept { ++counts.source_hashes; }
void count_disk_lookup() noexcept { ++counts.disk_lookups; }

}  // namespace fa_jit::cache
