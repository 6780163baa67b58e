// --sweep compiles every config's kernels into the disk cache on all cores before measuring the configs one by one:
// compiled as each is measured, one at a time, NVRTC took most of a sweep (one decode row's sweep did not finish in
// ten minutes on an H200 machine).
#pragma once

#include <cstddef>
#include <vector>

#include "fa_jit/attention.hpp"
#include "fa_jit/jit.hpp"
#include "fa_jit/tuning.hpp"

namespace fa_jit::bench {

// Compiles the specializations attention(args, stream, tile) runs for each of `tiles` on `device` into the disk cache
// on `jobs` threads. Returns how many were compiled (not found in the cache). A tile the library rejects, or whose
// kernels fail to compile, is passed over: its measurement reports why. Does nothing when the disk cache is unusable
// (FA_JIT_CACHE=0, an unwritable directory), where the binaries would be thrown away.
std::size_t precompile(const AttentionArgs& args, const std::vector<TileConfig>& tiles, const DeviceInfo& device,
                       unsigned jobs);

}  // namespace fa_jit::bench
