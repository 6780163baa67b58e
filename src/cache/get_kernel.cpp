// get_kernel(): in-process table -> disk cache -> NVRTC -> load, for the current device.
#include "cache/compile_cached.hpp"
#include "cache/kernel_table.hpp"
#include "driver/driver_api.hpp"
#include "util/log.hpp"

#include <chrono>

namespace fa_jit {
namespace {

struct TableKey {
    CUcontext context;
    cache::CacheKey key;
    bool operator==(const TableKey& o) const noexcept { return context == o.context && key == o.key; }
};
struct TableKeyHash {
    std::size_t operator()(const TableKey& k) const noexcept {
        return static_cast<std::size_t>(k.key.hash[0] ^ reinterpret_cast<std::uintptr_t>(k.context));
    }
};

cache::KernelTable<TableKey, Kernel, TableKeyHash>& table() {
    static cache::KernelTable<TableKey, Kernel, TableKeyHash> t;
    return t;
}

}  // namespace

Kernel get_kernel(const CompileRequest& request, std::string_view name_expression, bool arch_specific) {
    const DeviceInfo& device = current_device();
    CompileRequest resolved = request;
    resolved.arch = target_arch(device.cc_major, device.cc_minor, arch_specific);
    if (resolved.name_expressions.empty()) resolved.name_expressions.emplace_back(name_expression);
    const cache::CacheKey disk_key = cache::key_for(resolved);
    cache::CacheKey key = disk_key;
    key.hash[1] ^= std::hash<std::string_view>{}(name_expression);  // one table slot per function of the module

    CUcontext context = nullptr;
    FA_JIT_CU(cuCtxGetCurrent, &context);
    return table().get(TableKey{context, key}, [&] {
        const auto start = std::chrono::steady_clock::now();
        bool hit = false;
        const Compiled compiled = cache::compile_cached(resolved, &hit);
        Kernel kernel(Module::load(compiled), compiled.lowered_name(name_expression));
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        log::info("{} {} for {}: ready in {:.2f} ms ({} registers, {} local bytes)",
                  hit ? "cache hit" : "cache miss", std::string(name_expression), resolved.arch, ms,
                  kernel.attributes().registers, kernel.attributes().local_bytes);
        return kernel;
    });
}

}  // namespace fa_jit
