// Device metadata checks for FA_JIT_CHECK=1: the host cannot read lengths and tables that live on the device, so
// under the check mode one small kernel finds the first bad entry before the attention kernels run.
//
//   __global__ void first_out_of_range(const int* values, int count, int lo, int hi, int* first_bad);
//
// first_bad (initialised to INT_MAX by the host) receives the smallest index i with values[i] outside [lo, hi].
// Launch: any grid covering count threads.
#pragma once

namespace fa_jit {

__global__ void first_out_of_range(const int* values, int count, int lo, int hi, int* first_bad) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const int v = values[i];
    if (v < lo || v > hi) atomicMin(first_bad, i);
}

}  // namespace fa_jit
