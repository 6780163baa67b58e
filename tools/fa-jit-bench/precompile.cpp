#include "precompile.hpp"

#include <algorithm>
#include <atomic>
#include <exception>

#include "common/parallel.hpp"
#include "fa_jit/cache.hpp"
#include "fa_jit/errors.hpp"

namespace fa_jit::bench {

std::size_t precompile(const AttentionArgs& args, const std::vector<TileConfig>& tiles, const DeviceInfo& device,
                       unsigned jobs) {
    if (!cache::DiskCache::instance().usable()) return 0;
    // The binaries attention() loads on this device: the arch-specific variant from sm_90 on (attention_arch()).
    const std::string arch = attention_arch(target_arch(device.cc_major, device.cc_minor));
    std::vector<AttentionKernelSpec> specs;
    for (const TileConfig& tile : tiles) {
        try {
            const AttentionKernelSpec spec = attention_spec(args, tile);
            if (std::find(specs.begin(), specs.end(), spec) == specs.end()) specs.push_back(spec);
        } catch (const Error&) {
        }
    }
    std::atomic<std::size_t> compiled{0};
    tools::parallel_for(specs.size(), jobs, [&](std::size_t i) {
        try {
            if (!cache::compile_into_cache(attention_compile_request(specs[i], arch))) ++compiled;
        } catch (const std::exception&) {
        }
    });
    return compiled;
}

}  // namespace fa_jit::bench
