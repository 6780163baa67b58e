// What the tools report about the disk cache beyond DiskCache's own interface.
#pragma once

#include "cache/disk_cache.hpp"

#include <cstdio>
#include <string>

namespace fa_jit::tools {

// Why `cache` is unusable ("" when it is usable). DiskCache itself only warns once on stderr; this re-derives a
// reason from the configuration and the directory as it is now.
std::string why_unusable(const cache::DiskCache& cache);

// One line to stderr when the cache is unusable (maintenance still works on whatever files are there).
void warn_if_unusable(const cache::DiskCache& cache);

// The entry's key: its file name without ".fajit".
std::string entry_key(const cache::EntryInfo& entry);

// "2026-11-22 14:03:07" (local time) and seconds since the Unix epoch.
std::string format_time(std::filesystem::file_time_type t);
long long unix_seconds(std::filesystem::file_time_type t);

}  // namespace fa_jit::tools
