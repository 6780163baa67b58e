// A fixed pool of threads for independent work items, such as the tools' NVRTC compiles (NVRTC is thread-safe, and
// the disk cache's per-key locks keep concurrent writers apart).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace fa_jit::tools {

// Calls work(i) for every i in [0, n) on min(jobs, n) threads, the calling one included (at least one); each thread
// takes the next index in order. `work` must not throw.
template <class Work>
void parallel_for(std::size_t n, unsigned jobs, const Work& work) {
    std::atomic<std::size_t> next{0};
    const auto worker = [&] {
        for (std::size_t i; (i = next.fetch_add(1)) < n;) work(i);
    };
    const std::size_t threads = std::max<std::size_t>(1, std::min<std::size_t>(jobs, n));
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (std::thread& t : pool) t.join();
}

}  // namespace fa_jit::tools
