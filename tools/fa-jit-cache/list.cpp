// `list`: one row per cache entry, most recently used first.
#include "cache_status.hpp"
#include "commands.hpp"
#include "common/table.hpp"
#include "common/text.hpp"

#include "fa_jit/cache.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>

namespace fa_jit::tools {
namespace {

struct ListOptions {
    bool json = false;
    bool csv = false;
};

// The kernel column: the description, or why the entry cannot even be described.
std::string describe(const cache::EntryInfo& e) { return e.problem.empty() ? e.kernel : "(bad entry: " + e.problem + ")"; }

int run_list(const ListOptions& options) {
    cache::DiskCache& c = cache::DiskCache::instance();
    warn_if_unusable(c);
    // Headers only (no payload checksums): listing should be fast; `verify` reads everything.
    std::vector<cache::EntryInfo> entries = c.list(/*verify=*/false);
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.last_used > b.last_used; });

    if (options.json) {
        nlohmann::ordered_json out = nlohmann::ordered_json::array();
        for (const auto& e : entries) {
            nlohmann::ordered_json j;
            j["key"] = e.key();
            j["file"] = e.file.string();
            j["bytes"] = e.file_bytes;
            j["last_used"] = format_time(e.last_used);
            j["last_used_unix"] = unix_seconds(e.last_used);
            j["arch"] = e.arch;
            j["family"] = e.family;  // "" for kernels that name none
            j["kernel"] = e.kernel;
            j["options"] = e.options;
            j["problem"] = e.problem.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(e.problem);
            out.push_back(j);
        }
        fmt::print("{}\n", out.dump(2));
        return kExitOk;
    }

    Table table({{"key"}, {"bytes", Table::Align::right}, {"last used"}, {"arch"}, {"family"}, {"kernel"}});
    for (const auto& e : entries)
        table.add_row(
            {e.key(), std::to_string(e.file_bytes), format_time(e.last_used), e.arch, e.family, describe(e)});
    if (options.csv) {
        fmt::print("{}", table.csv());
        return kExitOk;
    }
    std::uint64_t total = 0;
    for (const auto& e : entries) total += e.file_bytes;
    if (!table.empty()) fmt::print("{}", table.text());
    fmt::print("{} entries, {} in {}\n", entries.size(), human_bytes(total), c.config().dir.string());
    return kExitOk;
}

}  // namespace

Command add_list(CLI::App& app) {
    CLI::App* sub = app.add_subcommand(
        "list", "List the cache entries: key, size, last use, arch, kernel family, kernel");
    set_help_details(sub,
                     "One row per entry, most recently used first: the key (the entry's file name), its size in\n"
                     "bytes, when it was last used (a hit refreshes it; eviction removes the oldest first), the\n"
                     "arch it was compiled for, the kernel family (fp32, f16-mma, ...; empty for other kernels)\n"
                     "and the kernel (source file and name expression). Only headers are read; `verify` checks\n"
                     "the binaries.");
    auto options = std::make_shared<ListOptions>();
    auto* json = sub->add_flag("--json", options->json, "print a JSON array instead of a table");
    sub->add_flag("--csv", options->csv, "print CSV (with a header line) instead of a table")->excludes(json);
    return {sub, [options] { return run_list(*options); }};
}

}  // namespace fa_jit::tools
