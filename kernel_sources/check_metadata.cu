// Device metadata checks for FA_JIT_CHECK=1: the host cannot read lengths and tables that live on the device, so
// under the check mode one small kernel finds the first bad entry before the attention kernels run.
//
//   __global__ void first_out_of_range(const int* values, int count, int lo, int hi, int* first_bad);
//   __global__ void first_bad_prefix_sum(const int* cu, int count, int total, int max_step, int* first_bad);
//   __global__ void first_bad_page(const int* table, int count, int pages_per_seq, int page_size,
//                                  const int* seqused_k, int seqlen_k, int num_pages, int* first_bad);
//
// first_bad (initialised to INT_MAX by the host) receives the smallest bad index: for first_out_of_range, i with
// values[i] outside [lo, hi]; for first_bad_prefix_sum (cu_seqlens, count = batch + 1 entries), i with cu[i] outside
// [0, total] or, for i > 0, cu[i] - cu[i - 1] outside [0, max_step]; for first_bad_page (a block table of count =
// batch * pages_per_seq entries), i = b * pages_per_seq + j with page j used by sequence b (j * page_size below its
// keys: seqused_k[b] clamped to [0, seqlen_k], or seqlen_k) and table[i] outside [0, num_pages). Entries past a
// sequence's keys are never read by the kernels and may hold anything. Launch: any grid covering count threads.
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

__global__ void first_bad_page(const int* table, int count, int pages_per_seq, int page_size, const int* seqused_k,
                               int seqlen_k, int num_pages, int* first_bad) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const int b = i / pages_per_seq;
    const int used = seqused_k == nullptr ? seqlen_k : min(max(seqused_k[b], 0), seqlen_k);
    if (static_cast<long long>(i - b * pages_per_seq) * page_size >= used) return;
    const int page = table[i];
    if (page < 0 || page >= num_pages) atomicMin(first_bad, i);
}

}  // namespace fa_jit
