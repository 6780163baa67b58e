// Sample kernels: the smallest users of the JIT, used by its tests and its README example.
#include "sample_math.cuh"

namespace fa_jit::sample {

// y[i] = kMultiplier * x[i] + offset, for i < n. One thread per element; 64-bit index for large n.
template <int kMultiplier>
__global__ void scale_add(const float* x, float* y, float offset, long long n) {
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) y[i] = scaled<kMultiplier>(x[i]) + offset;
}

// Reverses n floats through dynamic shared memory (n * 4 bytes of it; more than 48 KB exercises the opt-in).
// One block; every thread copies a strided share in and out.
__global__ void reverse_in_shared(const float* x, float* y, int n) {
    extern __shared__ float buffer[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) buffer[i] = x[i];
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = buffer[n - 1 - i];
}

}  // namespace fa_jit::sample
