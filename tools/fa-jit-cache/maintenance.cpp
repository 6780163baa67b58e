// `prune` and `clear`: remove entries, least recently used first or all of them.
#include "cache_status.hpp"
#include "commands.hpp"
#include "common/text.hpp"

#include "fa_jit/cache.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>

namespace fa_jit::tools {
namespace {

struct PruneOptions {
    std::string max_bytes;  // empty: the configured cap
    bool json = false;
};

void print_result(bool json, const char* verb, std::size_t removed, const cache::DiskCache& c) {
    const std::uint64_t bytes = c.total_bytes();
    const std::size_t left = c.list(/*verify=*/false).size();
    if (json) {
        nlohmann::ordered_json out;
        out["removed"] = removed;
        out["entries"] = left;
        out["bytes"] = bytes;
        fmt::print("{}\n", out.dump(2));
    } else {
        fmt::print("{} {} entries; {} left ({})\n", verb, removed, left, human_bytes(bytes));
    }
}

int run_prune(const PruneOptions& options) {
    cache::DiskCache& c = cache::DiskCache::instance();
    std::uint64_t cap = c.config().max_bytes;
    if (!options.max_bytes.empty()) {
        const auto parsed = cache::parse_byte_size(options.max_bytes);
        if (!parsed)
            throw UsageError(fmt::format("--max-bytes '{}': expected a byte count such as 1000000, 500M or 2G",
                                         options.max_bytes));
        cap = *parsed;
    }
    warn_if_unusable(c);
    print_result(options.json, "removed", c.prune(cap), c);
    return kExitOk;
}

}  // namespace

Command add_prune(CLI::App& app) {
    CLI::App* sub = app.add_subcommand(
        "prune", "Evict least-recently-used entries down to --max-bytes");
    set_help_details(sub,
                     "Removes entries, least recently used first, until the cache holds at most --max-bytes\n"
                     "(e.g. 500M, 2G; 0 empties it), and prints how many were removed. Without --max-bytes the cap\n"
                     "is FA_JIT_CACHE_MAX_BYTES (default 1 GiB), the one attention() enforces after each store.");
    auto options = std::make_shared<PruneOptions>();
    sub->add_option("--max-bytes", options->max_bytes, "size to prune to: bytes, or with a K/M/G/T suffix (binary)");
    sub->add_flag("--json", options->json, "print one JSON object instead of text");
    return {sub, [options] { return run_prune(*options); }};
}

Command add_clear(CLI::App& app) {
    CLI::App* sub = app.add_subcommand(
        "clear", "Remove every entry");
    set_help_details(sub,
                     "Removes every cache entry (and stray lock and temporary files) and prints how many entries\n"
                     "were removed. The tuning file written by `fa-jit-bench --save` is kept.");
    auto json = std::make_shared<bool>(false);
    sub->add_flag("--json", *json, "print one JSON object instead of text");
    return {sub, [json] {
                cache::DiskCache& c = cache::DiskCache::instance();
                warn_if_unusable(c);
                print_result(*json, "removed", c.clear(), c);
                return kExitOk;
            }};
}

}  // namespace fa_jit::tools
