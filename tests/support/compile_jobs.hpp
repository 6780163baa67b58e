// NVRTC compiles for the CPU tests: many requests in parallel, each with ptxas's resource usage per kernel.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fa_jit/jit.hpp"

namespace fa_jit::testing {

// Threads a test may use: FA_JIT_TEST_THREADS, else every core. The compile tests run as ctest tests that reserve
// every core (PROCESSORS), so that `ctest -j` does not run them beside other work and oversubscribe the machine.
inline unsigned test_threads() {
    if (const char* v = std::getenv("FA_JIT_TEST_THREADS"); v && std::atoi(v) > 0) return std::atoi(v);
    return std::max(1u, std::thread::hardware_concurrency());
}

struct PtxasUsage {
    int registers = -1;
    int spill_stores = 0;  // bytes
    int spill_loads = 0;   // bytes
};

// ptxas -v log -> usage per mangled entry name.
inline std::map<std::string, PtxasUsage> ptxas_usage(const std::string& log) {
    std::map<std::string, PtxasUsage> out;
    std::istringstream in(log);
    std::string line, current;
    const std::string props = "Function properties for ", compiling = "Compiling entry function '";
    const auto number_before = [](const std::string& text, std::size_t end) {
        std::size_t b = text.find_last_of(", :", end - 1);
        b = b == std::string::npos ? 0 : b + 1;
        return std::atoi(text.substr(b, end - b).c_str());
    };
    while (std::getline(in, line)) {
        if (const auto p = line.find(props); p != std::string::npos) {
            current = line.substr(p + props.size());
            while (!current.empty() && (current.back() == '\r' || current.back() == ' ')) current.pop_back();
        } else if (const auto c = line.find(compiling); c != std::string::npos) {
            current = line.substr(c + compiling.size());
            current = current.substr(0, current.find('\''));
        } else if (current.empty()) {
            continue;
        }
        if (const auto s = line.find(" bytes spill stores"); s != std::string::npos)
            out[current].spill_stores = number_before(line, s);
        if (const auto s = line.find(" bytes spill loads"); s != std::string::npos)
            out[current].spill_loads = number_before(line, s);
        if (const auto r = line.find(" registers"); r != std::string::npos && line.find("Used ") != std::string::npos)
            out[current].registers = number_before(line, r);
    }
    return out;
}

struct CompileOutcome {
    std::string error;  // empty when it compiled
    Compiled compiled;
    std::map<std::string, PtxasUsage> usage;  // by lowered name (requests get -Xptxas=-v added)
    double seconds = 0;
};

// Compiles every request (with -Xptxas=-v) on test_threads() threads; outcomes in the order of `requests`.
inline std::vector<CompileOutcome> compile_parallel(std::vector<CompileRequest> requests) {
    std::vector<CompileOutcome> out(requests.size());
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
        for (std::size_t i; (i = next++) < requests.size();) {
            requests[i].options.push_back("-Xptxas=-v");
            const auto t0 = std::chrono::steady_clock::now();
            try {
                out[i].compiled = compile(requests[i]);
                out[i].usage = ptxas_usage(out[i].compiled.log);
            } catch (const std::exception& e) {
                out[i].error = e.what();
            }
            out[i].seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
    };
    std::vector<std::thread> threads(std::min<std::size_t>(test_threads(), std::max<std::size_t>(1, requests.size())));
    for (auto& t : threads) t = std::thread(worker);
    for (auto& t : threads) t.join();
    return out;
}

}  // namespace fa_jit::testing
