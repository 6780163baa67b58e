// The two GEMMs of one key tile on Hopper warpgroup MMA (sm_90a), shared by the wgmma kernels (attention_f16_wgmma.cu,
// attention_decode_wgmma.cu). Q, K and V tiles are head_dim / 64 column blocks of [rows][64] with the 128-byte swizzle
// (tile/swizzle.cuh, Swizzle128B); the accumulators are in the mma.sync m16n8 layout, per warp of the warpgroup.
#pragma once

#include "tile/softmax.cuh"
#include "wgmma.cuh"

namespace fa_jit::tile {

// S = Q K^T for the warpgroup's 64 rows (starting at row wg_row0 of the kBlockM-row Q tile) against the kBlockN keys
// of the K tile at sK, issued and waited for: k step ks reads 16 columns (32 bytes) inside column block ks / 4.
template <bool kBf16, int kBlockM, int kBlockN, int kHeadDim>
__device__ __forceinline__ void wgmma_qk(float (&acc_s)[kBlockN / 8][4], unsigned sQ, int wg_row0, unsigned sK) {
    wgmma::fence();
#pragma unroll
    for (int ks = 0; ks < kHeadDim / 16; ++ks) {
        const unsigned long long a =
            wgmma::desc_sw128(sQ + (ks / 4) * (kBlockM * 128u) + wg_row0 * 128u + (ks % 4) * 32u, 16, 1024);
#pragma unroll
        for (int nc = 0; nc < kBlockN / 64; ++nc) {
            const unsigned long long b =
                wgmma::desc_sw128(sK + (ks / 4) * (kBlockN * 128u) + nc * (64 * 128u) + (ks % 4) * 32u, 16, 1024);
            wgmma::mma_ss<kBf16>(acc_s + 8 * nc, a, b, ks > 0);
        }
    }
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::hold(acc_s);
}

// O = O * alpha + P V for the V tile at sV, 64 output columns at a time: chunk dc computes while chunk dc - 1 is
// added to O. P is the register A operand (p_frag[nt][h]: columns 2t, 2t + 1 of row g + 8h as a T pair); V is
// MN-major, transposed by the tensor core. Each chunk goes into a fresh accumulator and is added to the rescaled O
// with an ordinary FFMA, so the tensor core's truncating accumulation does not bias long rows.
template <bool kBf16, int kBlockN, int kHeadDim>
__device__ __forceinline__ void wgmma_pv(float (&acc_o)[kHeadDim / 64][8][4], const unsigned (&p_frag)[kBlockN / 8][2],
                                         const float (&alpha)[2], unsigned sV) {
    constexpr int kDBlocks = kHeadDim / 64;
    float pv[2][8][4];
#pragma unroll
    for (int dc = 0; dc < kDBlocks; ++dc) {
        wgmma::fence();
#pragma unroll
        for (int kc = 0; kc < kBlockN / 16; ++kc) {
            // A fragment of P for keys 16kc..16kc+15: n-tiles 2kc (a0, a1) and 2kc + 1 (a2, a3). V rows 16kc..: two
            // 8-row groups of 1024 bytes inside column block dc.
            const unsigned a[4] = {p_frag[2 * kc][0], p_frag[2 * kc][1], p_frag[2 * kc + 1][0], p_frag[2 * kc + 1][1]};
            const unsigned long long b =
                wgmma::desc_sw128(sV + dc * (kBlockN * 128u) + kc * (16 * 128u), kBlockN * 128u, 1024);
            wgmma::mma_rs_bt<kBf16>(pv[dc % 2], a, b, kc > 0);
        }
        wgmma::commit();
        if (dc > 0) {
            wgmma::wait<1>();
            wgmma::hold(pv[(dc - 1) % 2]);
            rescale_add(acc_o[dc - 1], 0, alpha, pv[(dc - 1) % 2]);
        }
    }
    wgmma::wait<0>();
    wgmma::hold(pv[(kDBlocks - 1) % 2]);
    rescale_add(acc_o[kDBlocks - 1], 0, alpha, pv[(kDBlocks - 1) % 2]);
}

}  // namespace fa_jit::tile
