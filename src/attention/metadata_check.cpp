#include "attention/metadata_check.hpp"

#include <fmt/format.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "driver/driver_api.hpp"
#include "fa_jit/jit.hpp"
#include "util/log.hpp"

namespace fa_jit {
namespace {

constexpr unsigned kThreads = 256;

// The first bad index found by check_metadata.cu's `kernel_name` over count entries (its arguments: `args`, then
// the result), or -1. Synchronizes `stream`.
template <typename... Args>
int first_bad(const char* kernel_name, int count, CUstream stream, Args... args) {
    static std::mutex mutex;  // one result word per context, used by one check at a time
    static auto* results = new std::unordered_map<CUcontext, DeviceBuffer>();  // never freed: exit returns it
    std::lock_guard lock(mutex);
    CUcontext context = nullptr;
    FA_JIT_CU(cuCtxGetCurrent, &context);
    auto it = results->find(context);
    if (it == results->end()) it = results->emplace(context, DeviceBuffer(sizeof(int))).first;
    const DeviceBuffer& result = it->second;
    CompileRequest request;
    request.source = kernel_source("check_metadata.cu");
    request.name_expressions = {"fa_jit::first_out_of_range", "fa_jit::first_bad_prefix_sum", "fa_jit::first_bad_page"};
    request.family = "check";
    const Kernel& kernel = get_kernel(request, std::string("fa_jit::") + kernel_name);
    int* found_at = reinterpret_cast<int*>(result.get());
    FA_JIT_CU(cuMemsetD32Async, result.address(), static_cast<unsigned>(INT_MAX), 1, stream);
    launch(kernel, {{(static_cast<unsigned>(count) + kThreads - 1) / kThreads}, {kThreads}, 0, stream}, args...,
           found_at);
    int found = INT_MAX;
    FA_JIT_CU(cuMemcpyDtoHAsync, &found, result.address(), sizeof found, stream);
    FA_JIT_CU(cuStreamSynchronize, stream);
    return found == INT_MAX ? -1 : found;
}

int read_entry(const int* values, int index, CUstream stream) {
    int v = 0;
    FA_JIT_CU(cuMemcpyDtoHAsync, &v, reinterpret_cast<CUdeviceptr>(values + index), sizeof v, stream);
    FA_JIT_CU(cuStreamSynchronize, stream);
    return v;
}

std::atomic<int>& checks_override() {  // -1: FA_JIT_CHECK decides
    static std::atomic<int> value{-1};
    return value;
}

}  // namespace

void set_metadata_checks(bool enabled) {
    checks_override().store(enabled ? 1 : 0, std::memory_order_relaxed);
}

bool metadata_checks_enabled() {
    if (const int forced = checks_override().load(std::memory_order_relaxed); forced >= 0) return forced == 1;
    static const bool enabled = [] {
        const char* v = std::getenv("FA_JIT_CHECK");
        if (!v || !*v || std::strcmp(v, "0") == 0) return false;
        if (std::strcmp(v, "1") != 0)
            log::warn_once("check-env", fmt::format("FA_JIT_CHECK={}: expected 0 or 1; checking", v));
        return true;
    }();
    return enabled;
}

void check_device_metadata(const AttentionArgs& a, CUstream stream) {
    // Packed sequences: batch + 1 non-decreasing entries in [0, total], steps (lengths) at most the bound.
    const struct {
        const char* name;
        const int* cu;
        int total, bound;
        const char *total_name, *bound_name;
    } prefix_sums[] = {{"cu_seqlens_q", a.cu_seqlens_q, a.total_q, a.seqlen_q, "total_q", "seqlen_q"},
                       {"cu_seqlens_k", a.cu_seqlens_k, a.total_k, a.seqlen_k, "total_k", "seqlen_k"}};
    for (const auto& p : prefix_sums) {
        if (!p.cu) continue;
        const int bad = first_bad("first_bad_prefix_sum", a.batch + 1, stream, p.cu, a.batch + 1, p.total, p.bound);
        if (bad < 0) continue;
        const int value = read_entry(p.cu, bad, stream);
        const std::string given =
            bad > 0 ? fmt::format("{} after {}", value, read_entry(p.cu, bad - 1, stream)) : std::to_string(value);
        throw InvalidArgument(fmt::format("{}[{}]", p.name, bad),
                              fmt::format("non-decreasing entries in [0, {} = {}], each at most {} = {} above the "
                                          "one before (FA_JIT_CHECK=1)",
                                          p.total_name, p.total, p.bound_name, p.bound),
                              given);
    }
    if (a.seqused_k && a.batch > 0) {
        const int bad = first_bad("first_out_of_range", a.batch, stream, a.seqused_k, a.batch, 0, a.seqlen_k);
        if (bad >= 0)
            throw InvalidArgument(fmt::format("seqused_k[{}]", bad),
                                  fmt::format("in [0, seqlen_k = {}] (FA_JIT_CHECK=1)", a.seqlen_k),
                                  std::to_string(read_entry(a.seqused_k, bad, stream)));
    }
    // A paged cache: the entries of the pages each sequence's keys use name pages in [0, num_pages).
    if (a.block_table && a.batch > 0) {
        const int count = a.batch * a.pages_per_seq;  // below 2^31 (validate_problem)
        const int bad = first_bad("first_bad_page", count, stream, a.block_table, count, a.pages_per_seq, a.page_size,
                                  a.seqused_k, a.seqlen_k, a.num_pages);
        if (bad >= 0)
            throw InvalidArgument(fmt::format("block_table[{}][{}]", bad / a.pages_per_seq, bad % a.pages_per_seq),
                                  fmt::format("a page in [0, num_pages = {}) (FA_JIT_CHECK=1)", a.num_pages),
                                  std::to_string(read_entry(a.block_table, bad, stream)));
    }
}

}  // namespace fa_jit
