// The unusable-cache warning and the time formats of fa-jit-cache's output.
#include "cache_status.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace fa_jit::tools {

void warn_if_unusable(const cache::DiskCache& cache) {
    if (!cache.usable())
        std::fprintf(stderr, "fa-jit-cache: warning: the disk cache is unusable: %s\n", cache.why_unusable().c_str());
}

namespace {
std::chrono::system_clock::time_point to_system(std::filesystem::file_time_type t) {
    // C++17 has no clock_cast: shift by the two clocks' current difference (exact to well under a second).
    using namespace std::chrono;
    return time_point_cast<system_clock::duration>(t - std::filesystem::file_time_type::clock::now() +
                                                   system_clock::now());
}
}  // namespace

long long unix_seconds(std::filesystem::file_time_type t) {
    return std::chrono::duration_cast<std::chrono::seconds>(to_system(t).time_since_epoch()).count();
}

std::string format_time(std::filesystem::file_time_type t) {
    const std::time_t seconds = static_cast<std::time_t>(unix_seconds(t));
    std::tm local{};
    ::localtime_r(&seconds, &local);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
    return text;
}

}  // namespace fa_jit::tools
