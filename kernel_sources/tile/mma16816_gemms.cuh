// S = Q K^T of one key tile on mma.sync m16n8k16 and the accumulators' start, shared by the kernels that run them per
// warp (attention_f16.cu, attention_decode.cu). Q and K are rows of kDS 16-bit elements in shared memory, swizzled as
// tile::SwizzleRows64; the lane addresses (ldmatrix roles: matrix lane / 8, row lane % 8) come from the caller: for Q
// see load_q_fragment, for K k_lane_row = (lane % 8 + (lane / 16) * 8) * kDS * 2 and k_lane_x = ((lane / 8) % 2) ^
// (lane % 8). Accumulators in the m16n8 layout of tile/mask.cuh, kMT 16-row m-tiles per warp. P V stays in each
// kernel: the same loop as a shared function compiled to other SASS (bench/NOTES.md, "The mma.sync GEMMs shared").
#pragma once

#include "tile/mma16816.cuh"
#include "tile/softmax.cuh"

namespace fa_jit::tile {

// Q's A fragment of m-tile mt and k step ks from the Q tile: ldmatrix.x4 of the matrices (rows 0-7, k 0-7), (rows
// 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15) gives a0..a3. q_lane: the Q tile's address of the lane's row
// (warp_row0 + lane % 8 + ((lane / 8) % 2) * 8), q_lane_x = (lane / 16) ^ (lane % 8).
template <int kDS>
__device__ __forceinline__ void load_q_fragment(unsigned (&a)[4], unsigned q_lane, unsigned q_lane_x, int mt, int ks) {
    ldmatrix_x4(a, q_lane + mt * 16 * (kDS * 2) + swz_pair(q_lane_x, ks));
}

// acc_s += Q K^T for the kNT 8-column n-tiles of the warp's key tile at sK, over kKSteps k steps of 16. Q's fragments:
// q_regs[mt][ks] (kQInRegs: loaded once per block), or loaded into q_regs[mt][0] at each k step from the Q tile. K is
// [n][k] row-major = B col-major: one ldmatrix.x4 gives the matrices (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k
// 0-7), (n 8-15, k 8-15): b0, b1 of n-tile nt and of nt + 1.
template <bool kBf16, bool kQInRegs, int kKSteps, int kDS, int kMT, int kNT, int kKR>
__device__ __forceinline__ void gemm_qk_16816(float (&acc_s)[kMT][kNT][4], unsigned (&q_regs)[kMT][kKR][4],
                                              unsigned q_lane, unsigned q_lane_x, unsigned sK, unsigned k_lane_row,
                                              unsigned k_lane_x) {
    static_assert(kNT % 2 == 0, "n-tiles in pairs");
    static_assert(!kQInRegs || kKR == kKSteps, "Q in registers: every k step's fragments");
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
        if (!kQInRegs) {
#pragma unroll
            for (int mt = 0; mt < kMT; ++mt) load_q_fragment<kDS>(q_regs[mt][0], q_lane, q_lane_x, mt, ks);
        }
#pragma unroll
        for (int nt = 0; nt < kNT; nt += 2) {
            unsigned b[4];
            ldmatrix_x4(b, sK + k_lane_row + nt * 8 * (kDS * 2) + swz_pair(k_lane_x, ks));
#pragma unroll
            for (int mt = 0; mt < kMT; ++mt) {
                mma_16816<kBf16>(acc_s[mt][nt], q_regs[mt][kQInRegs ? ks : 0], b[0], b[1]);
                mma_16816<kBf16>(acc_s[mt][nt + 1], q_regs[mt][kQInRegs ? ks : 0], b[2], b[3]);
            }
        }
    }
}

// A warp's O and running statistics before its first key tile: O = 0, m = -inf, l = 0.
template <int kMT, int kNTO>
__device__ __forceinline__ void clear_o_state(float (&acc_o)[kMT][kNTO][4], float (&m)[kMT][2], float (&l)[kMT][2],
                                              float neg_inf) {
    clear_accumulator(acc_o);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
        m[mt][0] = m[mt][1] = neg_inf;
        l[mt][0] = l[mt][1] = 0.f;
    }
}

}  // namespace fa_jit::tile
