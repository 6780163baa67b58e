// FlashAttention forward for fp16 / bf16 on Hopper, warp-specialized (sm_90a only); family "f16-ws"
// (src/attention/families/f16_ws.cpp).
//
//   template <typename T, int kBlockN, int kHeadDim, int kStages, bool kCausal>
//   __global__ void attention_fwd_f16_ws(const __grid_constant__ AttentionParams p,
//                                        const __grid_constant__ TensorMap q_map, const __grid_constant__ TensorMap k_map,
//                                        const __grid_constant__ TensorMap v_map);
//
// Launch: grid (ceil(seqlen_q / 128), heads_q, batch), block 384 threads, dynamic shared memory
// ws_layout::smem_bytes(kBlockN, kHeadDim, kStages).
// Maps (src/launch/tensor_map.hpp, encoded per call by the family): each tensor as 4-d (d, sequence, heads,
// batch), innermost first, with its strides; boxes of 64 columns x 128 rows (Q) or kBlockN rows (K, V) with the
// 128-byte swizzle, so that one box is one [rows][64] column block of the wgmma layout (tile/swizzle.cuh,
// Swizzle128B). Rows past a sequence's end arrive as zeros.
//
// Warpgroup 0 produces: one thread loads Q once and K / V tile by tile into a kStages ring, each stage guarded by
// three mbarriers: K full and V full (transaction bytes: the tile landed) and empty (all 8 consumer warps are done
// with it). The warpgroup then keeps 24 registers and gives the rest to the consumers (240 each). Warpgroups 1 and 2 each
// compute 64 of the 128 query rows as the wgmma kernel does (tile/wgmma_gemms.cuh: S = Q K^T from shared memory,
// online softmax in registers, O += P V with P in registers), waiting only on the barriers: no block barrier in the
// main loop. The two consumers take turns at the tensor cores (ping-pong): one's softmax overlaps the other's GEMMs.
#pragma once

#include "attention_params.cuh"
#include "attention_ws_layout.cuh"
#include "dtypes.cuh"
#include "ptx.cuh"
#include "tile/coords.cuh"
#include "tile/epilogue.cuh"
#include "tile/f16_types.cuh"
#include "tile/mask.cuh"
#include "tile/mbarrier.cuh"
#include "tile/softmax.cuh"
#include "tile/swizzle.cuh"
#include "tile/tma.cuh"
#include "tile/warpgroup.cuh"
#include "tile/wgmma_gemms.cuh"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "attention_f16_ws.cu needs -arch=sm_90a: TMA, mbarrier transactions, wgmma and setmaxnreg"
#endif

namespace fa_jit {

template <typename T, int kBlockN, int kHeadDim, int kStages, bool kCausal>
__global__ void __launch_bounds__(ws_layout::kThreads, 1)
    attention_fwd_f16_ws(const __grid_constant__ AttentionParams p, const __grid_constant__ TensorMap q_map,
                         const __grid_constant__ TensorMap k_map, const __grid_constant__ TensorMap v_map) {
    using namespace tile;
    constexpr int kBlockM = ws_layout::kBlockM;
    constexpr bool kBf16 = IsBf16<T>::value;
    constexpr int kNTilesS = kBlockN / 8;
    constexpr int kDBlocks = kHeadDim / 64;
    constexpr unsigned kQBytes = 2u * kBlockM * kHeadDim;
    constexpr unsigned kKVBytes = 2u * kBlockN * kHeadDim;
    constexpr int kConsumerWarps = 8;
    static_assert(IsF16Type<T>::value, "T must be fa_jit::half_t or fa_jit::bf16_t");
    static_assert(ws_layout::legal(kBlockN, kHeadDim, kStages), "illegal tile (ws_layout::legal)");

    extern __shared__ float4 smem_raw[];
    const unsigned sQ = (ptx::smem_address(smem_raw) + 1023u) & ~1023u;  // swizzle atoms need 1024-byte alignment
    const unsigned sK = sQ + kQBytes;                                    // stage s at sK + s * kKVBytes
    const unsigned sV = sK + kStages * kKVBytes;
    const unsigned q_full = sV + kStages * kKVBytes;
    const auto k_full = [&](int s) { return q_full + 8u * (1 + s); };
    const auto v_full = [&](int s) { return q_full + 8u * (1 + kStages + s); };
    const auto kv_empty = [&](int s) { return q_full + 8u * (1 + 2 * kStages + s); };

    const BlockIndex bi = block_index<kBlockM, kCausal>(p);
    const int m0 = bi.m0;
    const int n_block_max = key_tiles<kBlockM, kBlockN, kCausal>(p, m0);  // visited last tile first
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;

    if (threadIdx.x == 0) {
        mbarrier::init(q_full, 1);
        for (int s = 0; s < kStages; ++s) {
            mbarrier::init(k_full(s), 1);
            mbarrier::init(v_full(s), 1);
            mbarrier::init(kv_empty(s), kConsumerWarps);
        }
        mbarrier::fence_init();
    }
    __syncthreads();

    // ---- producer ---------------------------------------------------------------------------------------------------
    if (warp < 4) {
        warpgroup::release_registers<24>();
        if (threadIdx.x == 0 && n_block_max > 0) {
            tma::prefetch_map(k_map);
            tma::prefetch_map(v_map);
            mbarrier::arrive_expect_tx(q_full, kQBytes);
#pragma unroll
            for (int dc = 0; dc < kDBlocks; ++dc)
                tma::load_4d(sQ + dc * (kBlockM * 128u), q_map, dc * 64, m0, bi.head, bi.batch, q_full);
            for (int it = 0; it < n_block_max; ++it) {
                const int s = it % kStages;
                const unsigned phase = (it / kStages) & 1u;
                const int n0 = (n_block_max - 1 - it) * kBlockN;
                mbarrier::wait(kv_empty(s), phase ^ 1u);  // the first trip finds every stage empty
                mbarrier::arrive_expect_tx(k_full(s), kKVBytes);
#pragma unroll
                for (int dc = 0; dc < kDBlocks; ++dc)
                    tma::load_4d(sK + s * kKVBytes + dc * (kBlockN * 128u), k_map, dc * 64, n0, bi.head_kv, bi.batch,
                                 k_full(s));
                mbarrier::arrive_expect_tx(v_full(s), kKVBytes);
#pragma unroll
                for (int dc = 0; dc < kDBlocks; ++dc)
                    tma::load_4d(sV + s * kKVBytes + dc * (kBlockN * 128u), v_map, dc * 64, n0, bi.head_kv, bi.batch,
                                 v_full(s));
            }
        }
        return;
    }

    // ---- consumers ----------------------------------------------------------------------------------------------------
    warpgroup::claim_registers<240>();
    const float kNegInf = neg_inf_f32();
    const int cw = warp - 4;               // consumer warp 0..7
    const int warp_row0 = cw * 16;         // its 16 rows of the block's 128
    const int wg_row0 = (cw / 4) * 64;     // its warpgroup's 64 rows (the A operand of S)
    const int g = lane / 4;
    const int t = lane % 4;

    float acc_o[kDBlocks][8][4];
    clear_accumulator(acc_o);
    float m_i[2] = {kNegInf, kNegInf};
    float l_i[2] = {0.f, 0.f};

    // Ping-pong: a warpgroup issues its GEMMs only in its turn (named barrier 1 + wg) and hands the turn over as soon
    // as they are issued, so the tensor cores run one warpgroup's GEMMs while the other computes its softmax. A turn
    // holds P V of the previous tile and S of the next one, back to back.
    const int wg = cw / 4;
    const auto take_turn = [&] { warpgroup::sync(1 + wg, 256); };
    const auto pass_turn = [&] { warpgroup::arrive(2 - wg, 256); };
    const auto softmax = [&](float (&acc_s)[kNTilesS][4], int n0, unsigned (&p_frag)[kNTilesS][2], float (&alpha)[2]) {
        if (tile_needs_mask<kBlockN, false, kCausal>(n0, m0, p.seqlen_k, p.causal_offset))
            mask_fragment<false, kCausal>(acc_s, m0 + warp_row0, n0, g, t, p.seqlen_k, p.causal_offset, kNegInf);
        online_softmax(acc_s, m_i, l_i, alpha, p.scale_log2, kNegInf,
                       [&](int nt, int h, float p0, float p1) { p_frag[nt][h] = pack2<kBf16>(p0, p1); });
    };
    constexpr int kQkN = kBlockN % 128 == 0 ? 128 : 64;  // keys per S instruction
    constexpr int kPvN = 64;  // output columns per P V chunk: 128 measured no faster at d 128, spills at d 256
    constexpr bool kPvPipelined = kHeadDim < 256;  // at d 256, O's 128 registers leave no room for two chunks

    if (n_block_max > 0) {
        if (wg == 1) pass_turn();  // warpgroup 0 goes first
        unsigned p_frag[kNTilesS][2];  // P as T pairs: [nt][h] = columns (2t, 2t + 1) of row g + 8h
        float alpha[2];
        mbarrier::wait(q_full, 0);
        mbarrier::wait(k_full(0), 0);
        {
            float acc_s[kNTilesS][4];
            take_turn();
            issue_qk<kBf16, kBlockM, kBlockN, kHeadDim, kQkN>(acc_s, sQ, wg_row0, sK);
            pass_turn();
            wgmma::wait<0>();
            wgmma::hold(acc_s);
            softmax(acc_s, (n_block_max - 1) * kBlockN, p_frag, alpha);
        }
        for (int it = 1; it < n_block_max; ++it) {
            // P V of tile it - 1 (stage sp), then S of tile it (stage s). Every wgmma is issued on every trip (no
            // wgmma under a condition: ptxas would serialize them all).
            const int sp = (it - 1) % kStages;
            const int s = it % kStages;
            mbarrier::wait(v_full(sp), ((it - 1) / kStages) & 1u);
            mbarrier::wait(k_full(s), (it / kStages) & 1u);
            take_turn();
            wgmma_pv<kBf16, kBlockN, kHeadDim, kPvN, kPvPipelined>(acc_o, p_frag, alpha, sV + sp * kKVBytes);
            __syncwarp();  // the warp's wgmmas on stage sp completed (wgmma_pv waits for them)
            if (lane == 0) mbarrier::arrive(kv_empty(sp));
            float acc_s[kNTilesS][4];
            issue_qk<kBf16, kBlockM, kBlockN, kHeadDim, kQkN>(acc_s, sQ, wg_row0, sK + s * kKVBytes);
            pass_turn();
            wgmma::wait<0>();
            wgmma::hold(acc_s);
            softmax(acc_s, (n_block_max - 1 - it) * kBlockN, p_frag, alpha);
        }
        // P V of the last tile.
        const int sp = (n_block_max - 1) % kStages;
        mbarrier::wait(v_full(sp), ((n_block_max - 1) / kStages) & 1u);
        take_turn();
        wgmma_pv<kBf16, kBlockN, kHeadDim, kPvN, kPvPipelined>(acc_o, p_frag, alpha, sV + sp * kKVBytes);
        __syncwarp();
        if (lane == 0) mbarrier::arrive(kv_empty(sp));
        if (wg == 0) pass_turn();  // warpgroup 1's would be an arrival nobody waits for
    }

    // ---- epilogue (as attention_f16_wgmma.cu): O staged in this warp's own Q rows, which only its warpgroup's
    // completed wgmmas read, then 16-byte stores; rows past seqlen_q are not stored -------------------------------------
    const TensorBases<unsigned short> bc = tensor_bases<unsigned short>(p, bi);
    __syncwarp();
    const unsigned o_stage = sQ + (warp_row0 + g) * 128u + 4u * t;  // row & 7 == g: chunk nt lives at nt ^ g
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const RowTotals rt = row_totals(l_i[h]);
        const int row = m0 + warp_row0 + h * 8 + g;
        stage_o_row_sw128<kBf16, kBlockM>(o_stage, h, g, acc_o, rt.inv_l);
        if (bc.lse != nullptr && t == 0 && row < p.seqlen_q) bc.lse[row] = row_lse(m_i[h], rt, kNegInf);
    }
    __syncwarp();
    store_rows_16b<Swizzle128B<kBlockM>, 16, kHeadDim, false>(sQ, warp_row0, bc.o, p.o_row_stride, m0 + warp_row0,
                                                             p.seqlen_q, lane);
}

}  // namespace fa_jit
