// get_kernel(): in-process table -> disk cache -> NVRTC -> load, for the current device.
#include "cache/compile_cached.hpp"
#include "cache/disk_cache.hpp"
#include "cache/kernel_table.hpp"
#include "driver/driver_api.hpp"
#include "util/log.hpp"

#include <chrono>
#include <optional>

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
    // The device's own arch. Asking NVRTC whether it supports it would load NVRTC (~6 ms), which a warm cache must
    // not need; that question is asked only on a miss, where NVRTC is loaded anyway.
    const int cc = device.cc();
    CompileRequest native = request;
    native.arch = "sm_" + std::to_string(cc) + (arch_specific && cc >= 90 ? "a" : "");
    if (native.name_expressions.empty()) native.name_expressions.emplace_back(name_expression);
    const cache::CacheKey native_key = cache::key_for(native);
    cache::CacheKey key = native_key;
    key.hash[1] ^= std::hash<std::string_view>{}(name_expression);  // one table slot per function of the module

    CUcontext context = nullptr;
    FA_JIT_CU(cuCtxGetCurrent, &context);
    return table().get(TableKey{context, key}, [&] {
        const auto start = std::chrono::steady_clock::now();
        bool hit = true;
        std::optional<Compiled> compiled = cache::DiskCache::instance().load(native_key, native.arch);
        if (!compiled) {
            // A miss: the arch NVRTC can target for this device (PTX for the driver when the device is newer).
            CompileRequest resolved = std::move(native);
            resolved.arch = target_arch(device.cc_major, device.cc_minor, arch_specific);
            compiled = cache::compile_cached(resolved, &hit);
        }
        Kernel kernel(Module::load(*compiled), compiled->lowered_name(name_expression));
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        log::info("{} {} for {}: ready in {:.2f} ms ({} registers, {} local bytes)",
                  hit ? "cache hit" : "cache miss", std::string(name_expression), compiled->arch, ms,
                  kernel.attributes().registers, kernel.attributes().local_bytes);
        return kernel;
    });
}

}  // namespace fa_jit
