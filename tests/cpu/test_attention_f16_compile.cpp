// NVRTC compilation of the fp16/bf16 FlashAttention-2 kernel (kernel_sources/attention_f16.cu) for sm_80 and sm_90a,
// without a GPU: a representative set of variants compiles, and the recommended configurations do not spill.
#include "fa_jit/jit.hpp"
#include "../../kernel_sources/attention_f16_layout.cuh"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

using namespace fa_jit;

namespace {

struct F16Config {
    int block_m, block_n, head_dim, warps, stages;
    bool recommended;  // must compile with 0 spill bytes on sm_80 and sm_90a
};

// Two or three configurations per head dim: the tiles attention() chooses on sm_90 (measured fastest on an H100;
// compiled, not spill-checked: at 255 registers ptxas spills 8..40 bytes in some variants, which the measurements
// include) and spill-free alternatives with fewer accumulators per thread.
const F16Config kConfigs[] = {
    {128, 128, 64, 8, 2, true}, {128, 128, 64, 4, 2, false},                                // d 64
    {64, 64, 96, 4, 3, true},   {64, 32, 96, 4, 2, true},                                   // d 96
    {128, 64, 128, 8, 2, true}, {128, 32, 128, 4, 2, true},  {128, 64, 128, 4, 2, false},   // d 128
    {128, 32, 256, 8, 2, true}, {64, 32, 256, 4, 2, true},   {64, 64, 256, 4, 1, false},    // d 256
};

std::string name_expression(const char* dtype, const F16Config& c, bool causal, bool even) {
    return fmt::format("fa_jit::attention_fwd_f16<fa_jit::{}, {}, {}, {}, {}, {}, {}, {}>", dtype, c.block_m, c.block_n,
                       c.head_dim, c.warps, c.stages, causal ? "true" : "false", even ? "true" : "false");
}

// ptxas -v log -> spill-store bytes per mangled entry name.
std::map<std::string, int> spill_bytes(const std::string& log) {
    std::map<std::string, int> out;
    std::istringstream in(log);
    std::string line, current;
    const std::string props = "Function properties for ";
    while (std::getline(in, line)) {
        if (const auto p = line.find(props); p != std::string::npos) {
            current = line.substr(p + props.size());
            while (!current.empty() && (current.back() == '\r' || current.back() == ' ')) current.pop_back();
        } else if (const auto s = line.find(" bytes spill stores"); s != std::string::npos && !current.empty()) {
            std::size_t b = line.rfind(',', s);
            b = b == std::string::npos ? 0 : b + 1;
            out[current] = std::stoi(line.substr(b, s - b));
        }
    }
    return out;
}

}  // namespace

TEST_CASE("f16/bf16 attention variants compile for sm_80 and sm_90a without spills", "[.][sweep][compile][f16]") {
    struct Job {
        std::string arch;
        const char* dtype;
        int head_dim;
        std::vector<std::pair<std::string, bool>> names;  // name expression, recommended
    };
    std::vector<Job> jobs;
    for (const char* arch : {"sm_80", "sm_90a"})
        for (const char* dtype : {"half_t", "bf16_t"})
            for (int d : {64, 96, 128, 256}) {
                Job j{arch, dtype, d, {}};
                for (const F16Config& c : kConfigs) {
                    if (c.head_dim != d) continue;
                    REQUIRE(f16_layout::legal(c.block_m, c.block_n, c.warps, c.stages, c.head_dim));
                    for (bool causal : {false, true})
                        for (bool even : {false, true})
                            j.names.emplace_back(name_expression(dtype, c, causal, even), c.recommended);
                }
                jobs.push_back(std::move(j));
            }

    std::atomic<std::size_t> next{0};
    std::mutex mutex;
    std::vector<std::string> failures;
    std::vector<std::string> report;
    int variants = 0;
    double seconds = 0;
    auto worker = [&] {
        for (std::size_t i; (i = next++) < jobs.size();) {
            const Job& job = jobs[i];
            try {
                CompileRequest r;
                r.source = kernel_source("attention_f16.cu");
                for (const auto& n : job.names) r.name_expressions.push_back(n.first);
                r.options = {"-Xptxas=-v"};
                r.arch = job.arch;
                const auto t0 = std::chrono::steady_clock::now();
                const Compiled c = compile(r);
                const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                const auto spills = spill_bytes(c.log);
                std::lock_guard lock(mutex);
                variants += static_cast<int>(job.names.size());
                seconds += dt;
                report.push_back(fmt::format("{} {} d{}: {} variants in {:.1f} s", job.arch, job.dtype, job.head_dim,
                                             job.names.size(), dt));
                if (c.binary.empty()) failures.push_back(fmt::format("{} {} d{}: empty binary", job.arch, job.dtype, job.head_dim));
                for (const auto& [name, recommended] : job.names) {
                    const std::string& lowered = c.lowered_name(name);
                    const auto it = spills.find(lowered);
                    if (it == spills.end()) {
                        failures.push_back(name + " " + job.arch + ": no ptxas -v line");
                    } else if (recommended && it->second != 0) {
                        failures.push_back(fmt::format("{} {}: {} bytes spill stores", name, job.arch, it->second));
                    }
                }
            } catch (const std::exception& e) {
                std::lock_guard lock(mutex);
                failures.push_back(fmt::format("{} {} d{}: {}", job.arch, job.dtype, job.head_dim, e.what()));
            }
        }
    };
    std::vector<std::thread> threads(std::max(1u, std::thread::hardware_concurrency()));
    for (auto& t : threads) t = std::thread(worker);
    for (auto& t : threads) t.join();

    for (const auto& r : report) UNSCOPED_INFO(r);
    UNSCOPED_INFO(fmt::format("{} variants, {:.2f} s of NVRTC per variant (summed over threads)", variants,
                              variants ? seconds / variants : 0.0));
    for (const auto& f : failures) UNSCOPED_INFO(f);
    CHECK(variants == 160);  // 10 configurations x 2 dtypes x 2 archs x (causal, kEvenMN)
    CHECK(failures.empty());
}

TEST_CASE("f16 layout formula matches the documented sizes", "[attention][f16]") {
    CHECK(f16_layout::smem_bytes(128, 64, 128, 2) == 2 * 128 * (128 + 4 * 64));
    CHECK(f16_layout::smem_bytes(64, 64, 96, 3) == 2 * 128 * (64 + 6 * 64));  // rows padded to 128 elements
    CHECK(f16_layout::legal(128, 32, 8, 2, 256));
    CHECK_FALSE(f16_layout::legal(128, 64, 4, 2, 100));  // head_dim % 8 != 0
    CHECK_FALSE(f16_layout::legal(96, 64, 4, 2, 128));   // block_m % (16 * warps) != 0
    CHECK_FALSE(f16_layout::legal(128, 128, 8, 4, 256)); // 288 KB of shared memory
}
