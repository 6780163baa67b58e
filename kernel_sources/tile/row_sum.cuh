// The softmax's row sums on the tensor cores (the warp-specialized kernel, attention_f16_ws.cu, kRowSumOnTensorCores).
//
// l = sum_j P_ij is P times a column of ones: with P V's A fragments (P from registers) and a B of ones [16 keys][8],
// m64n8k16 puts every row's sum of 16 keys of P into all 8 columns of its accumulator, so a key tile costs kBlockN / 16
// small wgmmas in P V's commit group instead of one FADD per score (the softmax's l update then has no reader and
// drops out). The sums are of P as P V reads it (rounded to 16 bits), so O and l share one rounding, and they build up
// in the tensor core's accumulator as O does (issue_pv_into_o): rescaled by alpha with O, held until P V's wait.
//
//   acc_l[4]: the m16n8 accumulator layout; acc_l[2h] (= acc_l[2h + 1]) is row g + 8h's whole sum in every lane of the
//   quad: the epilogue takes it as is (row_totals<false>), without the quad's reduction.
#pragma once

#include "tile/f16_types.cuh"
#include "tile/wgmma_gemms.cuh"
#include "wgmma.cuh"

namespace fa_jit::tile {

// B: [8 n][16 k] ones, K-major without swizzle (wgmma::desc_interleave: core matrices of 8 rows x 16 bytes, k 0-7 then
// k 8-15 at +128). Every k step of every key tile reads the same 256 bytes.
constexpr unsigned kRowSumOnesBytes = 256;
// `threads` threads from `thread` on write them; the caller makes them visible to wgmma (fence.proxy.async, then a
// barrier).
template <bool kBf16>
__device__ __forceinline__ void write_row_sum_ones(unsigned s_ones, int thread, int threads) {
    const unsigned one = pack2<kBf16>(1.f, 1.f);
    for (int i = thread; i < static_cast<int>(kRowSumOnesBytes / 16); i += threads)
        asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};" ::"r"(s_ones + 16u * i), "r"(one) : "memory");
}
__device__ __forceinline__ unsigned long long row_sum_desc(unsigned s_ones) {
    return wgmma::desc_interleave(s_ones, 128, 256);
}

// acc_l += P 1 for the key tile's P (p_frag, as issue_pv_into_o reads it): one m64n8k16 per 16 keys. Issued inside
// P V's commit group (issue_pv_into_o's `extra`).
template <bool kBf16, int kBlockN>
__device__ __forceinline__ void issue_row_sum(float (&acc_l)[4], const unsigned (&p_frag)[kBlockN / 8][2],
                                              unsigned long long ones) {
#pragma unroll
    for (int kc = 0; kc < kBlockN / 16; ++kc) {
        unsigned a[4];
        pv_a_fragment(p_frag, kc, a);
        wgmma::mma_rs_n8<kBf16>(acc_l, a, ones, 1);
    }
}

}  // namespace fa_jit::tile
