// Host-side launch checks, separate from the launch so they can be tested without a GPU.
#pragma once

#include "fa_jit/jit.hpp"

#include <string>
#include <vector>

namespace fa_jit {

// Throws InvalidArgument naming the parameter index when `given` (count, sizes, offsets) differs from `expected`,
// the layout the driver reports for the kernel.
void check_kernel_arguments(const std::vector<KernelParam>& expected, const KernelParam* given, std::size_t count,
                            const std::string& kernel_name);

}  // namespace fa_jit
