// A header of the sample kernels: shows (and tests) that headers travel with their source and feed the cache key.
#pragma once

namespace fa_jit::sample {

template <int kMultiplier>
__device__ __forceinline__ float scaled(float x) {
    return x * static_cast<float>(kMultiplier);
}

}  // namespace fa_jit::sample
