// Compiling the planned kernels: a fixed pool of threads taking items in order (NVRTC is thread-safe, and the
// disk cache's per-key locks keep concurrent writers apart).
#include "common/progress.hpp"
#include "warmup.hpp"

#include "fa_jit/cache.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

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
    std::atomic<std::size_t> next{0};
    const auto worker = [&] {
        for (std::size_t i; (i = next.fetch_add(1)) < items.size();) {
            results[i] = compile_one(items[i]);
            progress.item_done(fmt::format("{} {} ({:.2f} s)", to_string(results[i].status), describe(items[i]),
                                           results[i].seconds));
        }
    };
    const unsigned threads = std::max(1u, std::min<unsigned>(jobs, static_cast<unsigned>(items.size())));
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();  // the calling thread works too
    for (auto& t : pool) t.join();
    progress.finish();
    return results;
}

}  // namespace fa_jit::tools
