// launch_packed(): every check that can be made on the host runs before cuLaunchKernel, so a wrong launch is an
// InvalidArgument naming what is wrong instead of a fault on the GPU.
#include "driver/driver_api.hpp"
#include "launch/checks.hpp"
#include "fa_jit/jit.hpp"

#include <string>

namespace fa_jit {
namespace {

std::string dims(const Dim3& d) {
    return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

void check_config(const Kernel& kernel, const LaunchConfig& c) {
    const DeviceInfo& dev = kernel.device();  // read once when the kernel was loaded: no driver call here
    const unsigned grid[3] = {c.grid.x, c.grid.y, c.grid.z};
    const unsigned block[3] = {c.block.x, c.block.y, c.block.z};
    for (int i = 0; i < 3; ++i) {
        if (grid[i] == 0 || grid[i] > static_cast<unsigned>(dev.max_grid[i]))
            throw InvalidArgument("grid", "each dimension in [1, device limit " + std::to_string(dev.max_grid[i]) + "]",
                                  dims(c.grid));
        if (block[i] == 0 || block[i] > static_cast<unsigned>(dev.max_block[i]))
            throw InvalidArgument("block", "each dimension in [1, device limit " + std::to_string(dev.max_block[i]) + "]",
                                  dims(c.block));
    }
    const unsigned long long threads = 1ull * c.block.x * c.block.y * c.block.z;
    if (threads > static_cast<unsigned long long>(kernel.attributes().max_threads_per_block))
        throw InvalidArgument("block",
                              "at most " + std::to_string(kernel.attributes().max_threads_per_block) +
                                  " threads for kernel " + kernel.name(),
                              dims(c.block));
    const std::size_t shared = c.shared_bytes + static_cast<std::size_t>(kernel.attributes().static_shared_bytes);
    if (shared > static_cast<std::size_t>(dev.max_shared_per_block_optin))
        throw InvalidArgument("shared_bytes",
                              "at most " + std::to_string(dev.max_shared_per_block_optin) +
                                  " bytes of shared memory per block (static included)",
                              std::to_string(shared));
}

}  // namespace

void check_kernel_arguments(const std::vector<KernelParam>& expected, const KernelParam* given, std::size_t count,
                            const std::string& kernel_name) {
    if (count != expected.size())
        throw InvalidArgument("kernel arguments", std::to_string(expected.size()) + " for " + kernel_name,
                              std::to_string(count));
    // The parameter block does not start at a 64-byte boundary of the constant bank, so a parameter aligned beyond
    // 16 bytes (a CUtensorMap) may sit lower than a struct layout from offset 0 puts it: from the first such
    // parameter on, only the sizes can be compared.
    bool offsets_predictable = true;
    for (std::size_t i = 0; i < count; ++i) {
        if (given[i].alignment > 16) offsets_predictable = false;
        if (given[i].size != expected[i].size)
            throw InvalidArgument("kernel parameter " + std::to_string(i), std::to_string(expected[i].size) + " bytes",
                                  std::to_string(given[i].size) + " bytes");
        if (offsets_predictable && given[i].offset != expected[i].offset)
            throw InvalidArgument("kernel parameter " + std::to_string(i),
                                  "offset " + std::to_string(expected[i].offset),
                                  "offset " + std::to_string(given[i].offset));
    }
}

void launch_packed(const Kernel& kernel, const LaunchConfig& config, const KernelParam* given, void** args,
                   std::size_t count) {
    if (!kernel) throw InvalidArgument("kernel", "a loaded kernel", "an empty Kernel");
    if (kernel.params_known()) check_kernel_arguments(kernel.params(), given, count, kernel.name());
    check_config(kernel, config);
    const driver::Api& api = driver::api();
    if (config.programmatic_dependency && kernel.device().cc_major >= 9 && api.cuLaunchKernelEx) {
        CUlaunchAttribute attribute{};
        attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attribute.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig c{};
        c.gridDimX = config.grid.x, c.gridDimY = config.grid.y, c.gridDimZ = config.grid.z;
        c.blockDimX = config.block.x, c.blockDimY = config.block.y, c.blockDimZ = config.block.z;
        c.sharedMemBytes = static_cast<unsigned>(config.shared_bytes);
        c.hStream = config.stream;
        c.attrs = &attribute;
        c.numAttrs = 1;
        FA_JIT_CU(cuLaunchKernelEx, &c, kernel.get(), args, nullptr);
        return;
    }
    FA_JIT_CU(cuLaunchKernel, kernel.get(), config.grid.x, config.grid.y, config.grid.z, config.block.x,
              config.block.y, config.block.z, static_cast<unsigned>(config.shared_bytes), config.stream, args,
              nullptr);
}

}  // namespace fa_jit
