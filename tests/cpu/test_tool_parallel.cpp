// The tools' pool of compile threads (tools/common/parallel.hpp): fa-jit-cache warmup and fa-jit-bench --sweep.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "common/parallel.hpp"

TEST_CASE("parallel_for runs every item once, on up to `jobs` threads", "[tools]") {
    for (std::size_t n : {0, 1, 5, 64})
        for (unsigned jobs : {0u, 1u, 3u, 16u}) {
            INFO(n << " items, " << jobs << " jobs");
            std::vector<std::atomic<int>> runs(n);
            std::mutex mutex;
            std::set<std::thread::id> threads;
            fa_jit::tools::parallel_for(n, jobs, [&](std::size_t i) {
                runs[i].fetch_add(1);
                std::this_thread::sleep_for(std::chrono::milliseconds(2));  // long enough for every thread to take some
                std::lock_guard lock(mutex);
                threads.insert(std::this_thread::get_id());
            });
            for (std::size_t i = 0; i < n; ++i) CHECK(runs[i].load() == 1);
            CHECK(threads.size() <= std::max<std::size_t>(1, std::min<std::size_t>(jobs, n)));
            if (n > 0) CHECK(threads.count(std::this_thread::get_id()) == 1);  // the calling thread works too
            if (n == 64 && jobs == 16) CHECK(threads.size() > 1);
        }
}
