// Samples of the kernels' arithmetic on the device, for GPU tests that compare it bit for bit with the host's
// evaluation of the same headers (FA_JIT_HOST_DEVICE functions such as exp2_fma.cuh's).
#include "exp2_fma.cuh"

namespace fa_jit::sample {

// y[i] = exp2_fma<kDegree>(x[i]), for i < n. One thread per element.
template <int kDegree>
__global__ void exp2_fma_each(const float* x, float* y, long long n) {
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) y[i] = exp2_fma<kDegree>(x[i]);
}

}  // namespace fa_jit::sample
