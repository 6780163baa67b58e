// Counters of the cache's two costly steps, hashing a request's source and looking an entry up on disk, so that
// tests can check what a miss or a hit costs (and debug logs can say it).
#pragma once

#include <cstdint>

namespace fa_jit::cache {

struct CacheStats {
    std::uint64_t source_hashes = 0;  // SourceHash constructions
    std::uint64_t disk_lookups = 0;   // DiskCache::load() calls that opened (or tried to open) an entry file
};

// This thread's counts since it started. Per thread: counting then costs no shared cache line on the hit path,
// and a test sees only its own calls (a get_kernel()/compile_cached() miss runs on the calling thread).
CacheStats thread_stats() noexcept;

void count_source_hash() noexcept;
void count_disk_lookup() noexcept;

}  // namespace fa_jit::cache
