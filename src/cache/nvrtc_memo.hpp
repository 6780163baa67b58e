// The NVRTC version that keys cache entries, known on a warm hit without loading NVRTC.
//
// Loading NVRTC takes about 6 ms, more than the rest of a warm first call, only to learn its version for the key.
// So the cache directory remembers (file "nvrtc-version"), per loader environment, which file NVRTC came from and
// its version; while that file is unchanged, the version is taken from the memo. A compile loads NVRTC anyway,
// refreshes the memo, and keys what it stores with the true version.
#pragma once

namespace fa_jit::cache {

class DiskCache;

// The version to key a lookup with: the loaded NVRTC's; else the one remembered in `disk`'s directory; else the
// true one (loading NVRTC); CUDA_VERSION (what fa_jit was built against) when no NVRTC can be loaded, as in a
// deployment that only reads a warm cache.
int lookup_nvrtc_version(const DiskCache& disk) noexcept;

// The version of the NVRTC that compiles on a miss: loads NVRTC and refreshes the memo. CUDA_VERSION when missing.
int compiling_nvrtc_version(const DiskCache& disk) noexcept;

}  // namespace fa_jit::cache
