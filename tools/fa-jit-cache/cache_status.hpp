// What the subcommands print about the disk cache besides its entries: a warning when it is unusable, and times.
#pragma once

#include "fa_jit/cache.hpp"

#include <filesystem>
#include <string>

namespace fa_jit::tools {

// One line to stderr when `cache` is unusable, with why (maintenance still works on whatever files are there).
void warn_if_unusable(const cache::DiskCache& cache);

// "2026-11-22 14:03:07" (local time) and seconds since the Unix epoch.
std::string format_time(std::filesystem::file_time_type t);
long long unix_seconds(std::filesystem::file_time_type t);

}  // namespace fa_jit::tools
