// Device metadata checks for FA_JIT_CHECK=1: the host cannot read lengths and tables that live on the device, so
// under the check mode one small kernel finds the first bad entry before the attention kernels run.
//
//   __global__ void first_out_of_range(const int* values, int count, int lo, int hi, int* first_bad);
//   __global__ void first_bad_prefix_sum(const int* cu, int count, int total, int max_step, int* first_bad);
//
// first_bad (initialised to INT_MAX by the host) receives the smallest bad index: for first_out_of_range, i with
// values[i] outside [lo, hi]; for first_bad_prefix_sum (cu_seqlens, count = batch + 1 entries), i with cu[i] outside
// [0, total] or, for i > 0, cu[i] - cu[i - 1] outside [0, max_step]. Launch: any grid covering count threads.
#pragma once

namespace fa_jit {

__global__ void first_out_of_range(const int* values, int count, int lo, int hi, int* first_bad) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const int v = values[i];
    if (v < lo || v > hi) atomicMin(first_bad, i);
}

__global__ void first_bad_prefix_sum(const int* cu, int count, int total, int max_step, int* first_bad) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const int v = cu[i];
    const long long step = i > 0 ? static_cast<long long>(v) - cu[i - 1] : 0;
    if (v < 0 || v > total || step < 0 || step > max_step) atomicMin(first_bad, i);
}

}  // namespace fa_jit
