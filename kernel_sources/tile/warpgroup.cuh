// Register hand-over between warpgroups (setmaxnreg, sm_90a): a warp-specialized kernel launches with an even
// share of registers per thread, then its producer warpgroup gives most of them back and the consumer warpgroups
// take them. Every warp of the warpgroup executes the same instruction; N is a multiple of 8 in [24, 256].
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

}  // namespace fa_jit::tile::warpgroup
