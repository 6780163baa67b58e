// `warmup` options and summary. See warmup_plan.cpp (what) and warmup_run.cpp (how).
#include "cache_status.hpp"
#include "commands.hpp"
#include "warmup.hpp"

#include "fa_jit/cache.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

namespace fa_jit::tools {
namespace {

struct Counts {
    std::size_t compiled = 0, cached = 0, failed = 0;
};

Counts count(const std::vector<WarmupResult>& results) {
    Counts c;
    for (const auto& r : results)
        (r.status == WarmupStatus::compiled ? c.compiled : r.status == WarmupStatus::cached ? c.cached : c.failed)++;
    return c;
}

void print_json(const WarmupOptions& options, const std::vector<std::string>& archs,
                const std::vector<WarmupItem>& items, const std::vector<WarmupResult>& results, double wall) {
    using Json = nlohmann::ordered_json;
    const Counts c = count(results);
    Json out;
    out["cache_dir"] = cache::DiskCache::instance().config().dir.string();
    out["archs"] = archs;
    out["jobs"] = options.jobs;
    out["compiled"] = c.compiled;
    out["cached"] = c.cached;
    out["failed"] = c.failed;
    out["wall_seconds"] = wall;
    out["items"] = Json::array();
    for (std::size_t i = 0; i < items.size(); ++i) {
        const WarmupItem& it = items[i];
        const WarmupResult& r = results[i];
        Json j;
        j["arch"] = it.arch;
        j["dtype"] = fa_jit::to_string(it.spec.dtype);
        j["head_dim"] = it.spec.head_dim;
        j["causal"] = it.spec.causal;
        j["config"] = it.spec.tile.to_string();
        j["family"] = it.spec.family();
        j["features"] = it.spec.mods.to_string() + (it.spec.varlen ? "+varlen" : "") + (it.spec.paged ? "+paged" : "");
        if (kernel_family_has_even_variant(it.spec.family())) j["even_mn"] = it.spec.even_mn;
        if (it.spec.paged) j["table_map"] = it.spec.table_map;  // the kernel for pages of whole half key tiles
        j["settled_max"] = it.spec.settled_max;
        j["default"] = it.is_default;
        j["status"] = to_string(r.status);
        j["seconds"] = r.seconds;
        j["error"] = r.error.empty() ? Json() : Json(r.error);
        out["items"].push_back(j);
    }
    fmt::print("{}\n", out.dump(2));
}

void print_summary(const std::vector<std::string>& archs, const std::vector<WarmupResult>& results, unsigned jobs,
                   double wall) {
    const Counts c = count(results);
    std::string arch_list;
    for (const auto& a : archs) arch_list += (arch_list.empty() ? "" : ",") + a;
    fmt::print("warmup {}: {} kernels: {} compiled, {} already cached, {} failed in {:.2f} s (-j {})\n", arch_list,
               results.size(), c.compiled, c.cached, c.failed, wall, jobs);
    fmt::print("cache: {}\n", cache::DiskCache::instance().config().dir.string());
}

// The first failure in full: its message and NVRTC log are what a kernel engineer needs to fix it.
void print_first_failure(const std::vector<WarmupItem>& items, const std::vector<WarmupResult>& results) {
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (results[i].status != WarmupStatus::failed) continue;
        std::fprintf(stderr, "fa-jit-cache: warmup of %s failed: %s\n", describe(items[i]).c_str(),
                     results[i].error.c_str());
        if (!results[i].compile_log.empty() && results[i].error.find(results[i].compile_log) == std::string::npos)
            std::fprintf(stderr, "NVRTC log:\n%s\n", results[i].compile_log.c_str());
        return;
    }
}

int run_warmup_command(const WarmupOptions& options) {
    cache::DiskCache& c = cache::DiskCache::instance();
    if (!c.usable())
        throw UsageError(fmt::format(
            "the disk cache is unusable ({}), so warmup would compile kernels only to throw them away. {}",
            c.why_unusable(),
            c.config().enabled ? "Point FA_JIT_CACHE_DIR at a private writable directory"
                               : "Unset FA_JIT_CACHE (or set it to 1) to enable the cache"));
    const std::vector<std::string> archs = warmup_archs(options.archs);
    const std::vector<WarmupItem> items = plan_warmup(options, archs);

    const auto start = std::chrono::steady_clock::now();
    const std::vector<WarmupResult> results = run_warmup(items, options.jobs, !options.quiet);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    if (options.json)
        print_json(options, archs, items, results, wall);
    else
        print_summary(archs, results, options.jobs, wall);

    const Counts counts = count(results);
    if (counts.failed) {
        print_first_failure(items, results);
        return kExitFailed;
    }
    if (!c.usable()) {
        std::fprintf(stderr, "fa-jit-cache: the disk cache turned itself off during warmup (a write failed: %s); the "
                             "kernels compiled were not all stored\n", c.why_unusable().c_str());
        return kExitFailed;
    }
    return kExitOk;
}

}  // namespace

Command add_warmup(CLI::App& app) {
    CLI::App* sub = app.add_subcommand("warmup", "Compile attention kernels into the cache ahead of time (no GPU needed)");
    set_help_details(
        sub,
        "Compiles attention kernels into the disk cache so that attention() never waits for NVRTC. Needs no\n"
        "GPU when --arch is given (e.g. at container-image build time). For each arch x dtype x head dim x\n"
        "causal it compiles the tile config attention() picks by default for sequences of each --seqlen, or every\n"
        "legal config with --all-configs; kernels already cached are skipped. fp16/bf16 kernels come in two\n"
        "variants, with row bounds checks and without (sequence lengths that are multiples of the tile):\n"
        "both are compiled. A progress line goes to stderr;\n"
        "the summary (compiled, already cached, failed, wall time) to stdout.\n"
        "Exit code 1 if any compile failed (the first failure's NVRTC log is printed), 2 if the disk cache is\n"
        "unusable or an option is wrong.\n"
        "Example: fa-jit-cache warmup --arch sm_80,sm_90a --head-dim 64,128 -j 8");
    auto o = std::make_shared<WarmupOptions>();
    o->jobs = std::max(1u, std::thread::hardware_concurrency());
    sub->add_option("--arch", o->archs,
                    "comma-separated archs to compile for, e.g. sm_80,sm_90a (default: the arch of each GPU present)");
    sub->add_option("--dtype", o->dtypes, "comma-separated element types: fp32, fp16, bf16")->capture_default_str();
    sub->add_option("--head-dim", o->head_dims, "comma-separated head dimensions")->capture_default_str();
    sub->add_option("--causal", o->causal, "which masks: both, yes or no")->capture_default_str();
    sub->add_option("--seqlen", o->seqlens,
                    "comma-separated sequence lengths (512,2k,...) the default configs are chosen for: the default "
                    "tile, and on sm_90 the kernel, depends on the length class, so name each the deployment serves")
        ->capture_default_str();
    sub->add_option("--features", o->features,
                    "what the deployment's models use, one set per occurrence: comma-separated window, softcap, alibi "
                    "(score modifiers), varlen (packed sequences) and paged (a paged KV cache with per-sequence "
                    "lengths), or none (e.g. --features none --features window,softcap,varlen,paged); default none")
        ->capture_default_str();
    sub->add_flag("--all-configs", o->all_configs,
                  "compile every legal tile config (what fa-jit-bench --sweep tries), not just the default one");
    sub->add_option("-j,--jobs", o->jobs, "parallel compiles (default: the number of hardware threads)")
        ->check(CLI::PositiveNumber);
    sub->add_flag("--json", o->json, "print the summary and every item as one JSON object");
    sub->add_flag("-q,--quiet", o->quiet, "no progress lines on stderr");
    return {sub, [o] { return run_warmup_command(*o); }};
}

}  // namespace fa_jit::tools
