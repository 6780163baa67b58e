// Compiling the planned kernels on a fixed pool of threads (common/parallel.hpp).
#include <fmt/format.h>

#include <chrono>

#include "common/parallel.hpp"
#include "common/progress.hpp"
#include "fa_jit/cache.hpp"
#include "warmup.hpp"

namespace fa_jit::tools {
namespace {

WarmupResult compile_one(const WarmupItem& item) {
    WarmupResult result;
    const auto start = std::chrono::steady_clock::now();
    try {
        const CompileRequest request = attention_compile_request(item.spec, item.arch);
        result.status = cache::compile_into_cache(request) ? WarmupStatus::cached : WarmupStatus::compiled;
    } catch (const CompileError& e) {
        result.error = e.what();
        result.compile_log = e.log();
    } catch (const std::exception& e) {
        result.error = e.what();
    }
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

}  // namespace

std::vector<WarmupResult> run_warmup(const std::vector<WarmupItem>& items, unsigned jobs, bool progress_enabled) {
    std::vector<WarmupResult> results(items.size());
    Progress progress(items.size(), progress_enabled);
    parallel_for(items.size(), jobs, [&](std::size_t i) {
        results[i] = compile_one(items[i]);
        progress.item_done(
            fmt::format("{} {} ({:.2f} s)", to_string(results[i].status), describe(items[i]), results[i].seconds));
    });
    progress.finish();
    return results;
}

}  // namespace fa_jit::tools
