// get_kernel(): in-process table -> disk cache -> NVRTC -> load, for the current device.
#include "cache/cache_key.hpp"
#include "cache/compile_cached.hpp"
#include "cache/disk_cache.hpp"
#include "cache/kernel_table.hpp"
#include "driver/driver_api.hpp"
#include "util/log.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>

namespace fa_jit {
namespace {

struct TableKey {
    CUcontext context;
    cache::CacheKey id;  // the request for the device's arch, and the function looked up in it
    bool operator==(const TableKey& o) const noexcept { return context == o.context && id == o.id; }
};
struct TableKeyHash {
    std::size_t operator()(const TableKey& k) const noexcept {
        return static_cast<std::size_t>(k.id.hash[0] ^ reinterpret_cast<std::uintptr_t>(k.context));
    }
};

cache::KernelTable<TableKey, Kernel, TableKeyHash>& table() {
    static cache::KernelTable<TableKey, Kernel, TableKeyHash> t;
    return t;
}

// The request's source part, hashed: the one hash of the source per call (a miss finishes its disk keys from it).
cache::SourceHash hash_request(const CompileRequest& request, std::string_view name_expression) {
    if (request.name_expressions.empty())
        return cache::SourceHash(request.source, name_expression, request.options);
    return cache::SourceHash(request);
}

}  // namespace

const Kernel& get_kernel(const CompileRequest& request, std::string_view name_expression, bool arch_specific) {
    const DeviceInfo& device = current_device();
    // The device's own arch, in a stack buffer (a hit allocates nothing). Asking NVRTC whether it supports it would
    // load NVRTC (~6 ms), which a warm cache must not need; that question is asked only on a miss.
    const int cc = device.cc();
    char arch_text[16];
    const int arch_length = std::snprintf(arch_text, sizeof arch_text, "sm_%d%s", cc, arch_specific && cc >= 90 ? "a" : "");
    const std::string_view native_arch(arch_text, static_cast<std::size_t>(arch_length));

    const cache::SourceHash source = hash_request(request, name_expression);
    // In-process identity only: NVRTC's version does not change within a process, so it is left out (finding it
    // could mean reading the version memo).
    cache::CacheKey id = source.key(native_arch, 0, 0);
    id.hash[1] ^= std::hash<std::string_view>{}(name_expression);  // one table slot per function of the module

    CUcontext context = nullptr;
    FA_JIT_CU(cuCtxGetCurrent, &context);
    return table().get(TableKey{context, id}, [&] {
        const auto start = std::chrono::steady_clock::now();
        bool hit = false;
        const Compiled compiled = cache::compile_cached(
            cache::DiskCache::instance(), source, std::string(native_arch),
            [&] {
                // A miss: the arch NVRTC can target for this device (PTX for the driver when the device is newer).
                CompileRequest resolved = request;
                resolved.arch = target_arch(device.cc_major, device.cc_minor, arch_specific);
                if (resolved.name_expressions.empty()) resolved.name_expressions.emplace_back(name_expression);
                return resolved;
            },
            &hit);
        Kernel kernel(Module::load(compiled), compiled.lowered_name(name_expression));
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        log::info("{} {} for {}: ready in {:.2f} ms ({} registers, {} local bytes)",
                  hit ? "cache hit" : "cache miss", std::string(name_expression), compiled.arch, ms,
                  kernel.attributes().registers, kernel.attributes().local_bytes);
        return kernel;
    });
}

}  // namespace fa_jit
