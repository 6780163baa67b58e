// Register hand-over between warpgroups (setmaxnreg, sm_90a): a warp-specialized kernel launches with an even
// share of registers per thread, then its producer warpgroup gives most of them back and the consumer warpgroups
// take them. Every warp of the warpgroup executes the same instruction; N is a multiple of 8 in [24, 256]. Named
// barriers order warpgroups against each other.
#pragma once

namespace fa_jit::tile::warpgroup {

template <int N>
__device__ __forceinline__ void release_registers() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void claim_registers() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

// The warpgroup of this thread (threadIdx.x / 128), through a shuffle from lane 0, which ptxas knows to be the same
// in every lane: values derived from it (the wgmma descriptors of a warpgroup's rows) then live in uniform registers,
// where wgmma reads them, instead of being moved there (R2UR) before each wgmma.
__device__ __forceinline__ int index() {
    return __shfl_sync(~0u, static_cast<int>(threadIdx.x) / 128, 0);
}

// Named block barriers (ids 1..15; 0 is __syncthreads): `threads` (a multiple of 32) arrivals complete one. sync()
// waits for completion, arrive() only counts: one warpgroup syncing on an id the other arrives at hands it a turn.
__device__ __forceinline__ void sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void arrive(int id, int threads) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
// sync() that also returns whether `pred` holds in any of the `threads` threads.
__device__ __forceinline__ bool any(int id, int threads, bool pred) {
    unsigned result;
    asm volatile(
        "{\n .reg .pred p, q;\n setp.ne.u32 p, %1, 0;\n bar.red.or.pred q, %2, %3, p;\n selp.u32 %0, 1, 0, q;\n}"
        : "=r"(result)
        : "r"(static_cast<unsigned>(pred)), "r"(id), "r"(threads)
        : "memory");
    return result != 0;
}

}  // namespace fa_jit::tile::warpgroup
