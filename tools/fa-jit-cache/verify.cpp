// `verify`: reads every entry in full (header, metadata and payload checksums) and reports the bad ones.
#include "cache_status.hpp"
#include "commands.hpp"

#include "fa_jit/cache.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <memory>
#include <unistd.h>

namespace fa_jit::tools {
namespace {

struct VerifyOptions {
    bool fix = false;
    bool json = false;
};

int run_verify(const VerifyOptions& options) {
    cache::DiskCache& c = cache::DiskCache::instance();
    warn_if_unusable(c);
    const std::vector<cache::EntryInfo> entries = c.list(/*verify=*/true);

    std::vector<const cache::EntryInfo*> bad;
    for (const auto& e : entries)
        if (!e.problem.empty()) bad.push_back(&e);

    // Remove exactly the entries reported, so the report and the removal agree.
    std::size_t removed = 0;
    if (options.fix)
        for (const auto* e : bad)
            if (::unlink(e->file.c_str()) == 0 || errno == ENOENT) ++removed;
    const bool clean = bad.empty() || (options.fix && removed == bad.size());

    if (options.json) {
        nlohmann::ordered_json out;
        out["checked"] = entries.size();
        out["bad"] = nlohmann::ordered_json::array();
        for (const auto* e : bad)
            out["bad"].push_back({{"key", e->key()}, {"file", e->file.string()}, {"problem", e->problem}});
        out["removed"] = removed;
        out["ok"] = clean;
        fmt::print("{}\n", out.dump(2));
    } else {
        for (const auto* e : bad) fmt::print("BAD  {}  {}\n", e->key(), e->problem);
        fmt::print("{} entries checked, {} bad", entries.size(), bad.size());
        if (options.fix) fmt::print(", {} removed", removed);
        fmt::print("\n");
        if (!bad.empty() && !options.fix) fmt::print("run `fa-jit-cache verify --fix` to remove them\n");
    }
    return clean ? kExitOk : kExitFailed;
}

}  // namespace

Command add_verify(CLI::App& app) {
    CLI::App* sub = app.add_subcommand(
        "verify", "Check every entry's checksums; report (and with --fix remove) the bad ones");
    set_help_details(sub,
                     "Reads every entry in full: header, metadata and payload checksums, and the key stored inside\n"
                     "against the file name. Prints each bad entry with the reason. Exit code 1 if any is bad.\n"
                     "With --fix the bad entries are removed (attention() would recompile them on next use anyway)\n"
                     "and the exit code is 0 once all of them are gone.");
    auto options = std::make_shared<VerifyOptions>();
    sub->add_flag("--fix", options->fix, "remove the bad entries");
    sub->add_flag("--json", options->json, "print one JSON object instead of text");
    return {sub, [options] { return run_verify(*options); }};
}

}  // namespace fa_jit::tools
