// The JIT's own costs, measured on a GPU:
//   fa-jit-latency            compile time (sample and one attention specialization), cache-hit load time, the
//                             first attention() in a fresh process with a warm disk cache, and the host cost of a
//                             hot attention() against a bare cuLaunchKernel of the same kernel.
//   fa-jit-latency --first    (internal) the fresh process: prints the first call's latency after context creation.
// FA_JIT_CACHE_DIR should point to an empty directory for the cold figures to be cold.
#include "attention_params.cuh"
#include "cache/compile_cached.hpp"
#include "compile/nvrtc_api.hpp"
#include "cache/disk_cache.hpp"
#include "driver/driver_api.hpp"
#include "fa_jit/tuning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace fa_jit;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct Problem {
    AttentionArgs args;
    std::vector<DeviceBuffer> buffers;
};

// A small problem, so that the host cost of a call dominates: B=1, H=4, N=128, d=64.
Problem small_problem() {
    Problem p;
    AttentionArgs& a = p.args;
    a.batch = 1, a.heads_q = a.heads_kv = 4, a.seqlen_q = a.seqlen_k = 128, a.head_dim = 64;
    a.layout_bshd();
    const std::size_t n = 4ull * 128 * 64;
    std::vector<float> host(n);
    for (std::size_t i = 0; i < n; ++i) host[i] = std::sin(0.37 * i);
    for (int i = 0; i < 4; ++i) {
        p.buffers.emplace_back(n * 4);
        p.buffers.back().upload(host.data(), n * 4);
    }
    a.q = p.buffers[0].get(), a.k = p.buffers[1].get(), a.v = p.buffers[2].get(), a.o = p.buffers[3].get();
    return p;
}

// The fresh process: context creation, then the first attention() split into getting the kernel (disk-cache
// hit, module load, first use of the function) and the launch itself (run and synchronize).
int first_call() {
    const auto t0 = Clock::now();
    const DeviceInfo& device = current_device();
    const double context_ms = ms_since(t0);
    Problem p = small_problem();
    const auto t1 = Clock::now();
    attention_kernel({DType::f32, 64, false, choose_tile_config(device, {DType::f32, 64, false, 128, 128})});
    const double kernel_ms = ms_since(t1);
    attention(p.args, nullptr);
    synchronize();
    std::printf("context_ms=%.2f first_call_ms=%.3f kernel_ms=%.3f nvrtc_loaded=%d\n", context_ms, ms_since(t1),
                kernel_ms, nvrtc::loaded() ? 1 : 0);
    return 0;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    try {
        if (argc > 1 && !std::strcmp(argv[1], "--first")) return first_call();
        if (argc > 1 && !std::strcmp(argv[1], "--nvrtc")) {
            const auto t0 = Clock::now();
            nvrtc_version();
            std::printf("nvrtc_load_ms=%.3f\n", ms_since(t0));
            return 0;
        }
        const DeviceInfo& device = current_device();
        std::printf("device: %s (sm_%d%d), driver %d, NVRTC %d, cache %s\n", device.name.c_str(), device.cc_major,
                    device.cc_minor, driver_version(), nvrtc_version(),
                    cache::DiskCache::instance().config().dir.c_str());

        // 1. NVRTC compile times (no cache involved).
        CompileRequest sample;
        sample.source = kernel_source("sample.cu");
        sample.name_expressions = {"fa_jit::sample::scale_add<3>"};
        sample.arch = target_arch(device.cc_major, device.cc_minor);
        auto t = Clock::now();
        compile(sample);
        const double sample_compile_ms = ms_since(t);
        const ProblemClass problem{DType::f32, 64, false, 128, 128};
        const AttentionKernelSpec spec{DType::f32, 64, false, choose_tile_config(device, problem)};
        t = Clock::now();
        compile(attention_compile_request(spec, sample.arch));
        const double attention_compile_ms = ms_since(t);

        // 2. Cold first call in this process (disk cache empty): compile + store + load + launch.
        Problem p = small_problem();
        t = Clock::now();
        attention(p.args, nullptr);
        synchronize();
        const double cold_first_call_ms = ms_since(t);

        // 3. A fresh process with the disk cache now warm.
        std::vector<double> fresh, contexts, kernels;
        int nvrtc_loads = 0;
        for (int i = 0; i < 5; ++i) {
            FILE* pipe = popen((std::string(argv[0]) + " --first").c_str(), "r");
            double context_ms = 0, first_ms = 0, kernel_ms = 0;
            int loaded = 0;
            if (!pipe || std::fscanf(pipe, "context_ms=%lf first_call_ms=%lf kernel_ms=%lf nvrtc_loaded=%d",
                                     &context_ms, &first_ms, &kernel_ms, &loaded) != 4)
                throw Error("the --first child failed");
            pclose(pipe);
            fresh.push_back(first_ms), contexts.push_back(context_ms), kernels.push_back(kernel_ms);
            nvrtc_loads += loaded;
        }
        // NVRTC load time alone, in a process that has not loaded it: the child of --nvrtc.
        FILE* pipe = popen((std::string(argv[0]) + " --nvrtc").c_str(), "r");
        double nvrtc_load_ms = -1;
        if (!pipe || std::fscanf(pipe, "nvrtc_load_ms=%lf", &nvrtc_load_ms) != 1) throw Error("the --nvrtc child failed");
        pclose(pipe);

        // 4. Hot path: host time per call, attention() against cuLaunchKernel of the same function and params.
        const Kernel kernel = attention_kernel(spec);
        AttentionParams params{};
        params.q = p.args.q, params.k = p.args.k, params.v = p.args.v, params.o = p.args.o;
        params.q_batch_stride = p.args.q_strides.batch, params.q_head_stride = p.args.q_strides.head;
        params.q_row_stride = p.args.q_strides.row;
        params.k_batch_stride = params.v_batch_stride = params.o_batch_stride = params.q_batch_stride;
        params.k_head_stride = params.v_head_stride = params.o_head_stride = params.q_head_stride;
        params.k_row_stride = params.v_row_stride = params.o_row_stride = params.q_row_stride;
        params.batch = 1, params.heads_q = params.heads_kv = 4, params.group_size = 1;
        params.seqlen_q = params.seqlen_k = 128, params.head_dim = 64;
        params.scale = 0.125f, params.scale_log2 = 0.125f * 1.4426950408889634f;
        void* args[] = {&params};
        const unsigned grid_x = (128 + spec.tile.block_m - 1) / spec.tile.block_m;
        Stream stream;
        // Each call timed alone on an idle stream, so that neither waits for the GPU to drain a full queue.
        std::vector<double> bare, ours;
        for (int i = 0; i < 3000; ++i) {
            stream.synchronize();
            t = Clock::now();
            FA_JIT_CU(cuLaunchKernel, kernel.get(), grid_x, 4, 1, spec.threads(), 1, 1,
                      static_cast<unsigned>(spec.shared_bytes()), stream.get(), args, nullptr);
            bare.push_back(ms_since(t) * 1000.0);
            stream.synchronize();
            t = Clock::now();
            attention(p.args, stream.get());
            ours.push_back(ms_since(t) * 1000.0);
        }
        stream.synchronize();

        std::printf("\n%-58s %10s\n", "JIT cost", "value");
        std::printf("%-58s %8.1f ms\n", "NVRTC compile, sample kernel", sample_compile_ms);
        std::printf("%-58s %8.1f ms\n", fmt::format("NVRTC compile, {}", spec.tile.to_string() + " d64").c_str(),
                    attention_compile_ms);
        std::printf("%-58s %8.1f ms\n", "first attention(), empty cache (compile+store+load+run)", cold_first_call_ms);
        std::printf("%-58s %8.1f ms\n", "context creation, fresh process (median of 5)", median(contexts));
        std::printf("%-58s %8.3f ms\n", "first attention(), fresh process, warm cache (median of 5)", median(fresh));
        std::printf("%-58s %8.3f ms\n", "  of which getting the kernel (disk hit, module load)", median(kernels));
        std::printf("%-58s %8d\n", "  fresh processes that loaded NVRTC (of 5)", nvrtc_loads);
        std::printf("%-58s %8.3f ms\n", "NVRTC load alone (avoided by the version memo)", nvrtc_load_ms);
        std::printf("%-58s %8.2f us\n", "bare cuLaunchKernel, host time per call (median)", median(bare));
        std::printf("%-58s %8.2f us\n", "hot attention(), host time per call (median)", median(ours));
        std::printf("%-58s %8.2f x\n", "hot attention() / bare cuLaunchKernel", median(ours) / median(bare));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fa-jit-latency: %s\n", e.what());
        return 1;
    }
}
