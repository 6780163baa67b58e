// Split-KV decode attention on Hopper warpgroup MMA (sm_90a only), for the tiles whose packed query rows make decode
// compute-bound on mma.sync: MQA or large GQA groups with several query tokens (e.g. 4 tokens x 32 query heads = 128
// rows per KV head read 128 FLOP per K/V byte, more than mma.sync delivers at the HBM rate).
//
//   template <typename T, int kBlockM, int kBlockN, int kHeadDim, int kStages, bool kCausal,
//             int kMods = 0, bool kVarlen = false, bool kPaged = false>
//   __global__ void attention_decode_wgmma(const __grid_constant__ AttentionParams p);
//   template <typename T, int kHeadDim>
//   __global__ void attention_split_combine(const __grid_constant__ AttentionParams p);  (attention_split_combine.cuh)
//
//   kBlockM  packed query rows per block, 64 or 128: one warpgroup per 64 rows.
//   kBlockN  keys per step, 64 or 128; kHeadDim 64, 128, 192 or 256; kStages 2..4 (wgmma_layout.cuh).
//
// Launch: grid (row_tiles * num_splits, heads_kv, batch), block 2 * kBlockM threads, dynamic shared memory
// wgmma_layout::smem_bytes(); the block's rows, split and keys as in attention_decode.cu (tile/split_block.cuh),
// in kBlockN-key tiles. Output as there: O and LSE with one split, the split's fp32 part and LSE otherwise.
//
// Per key tile, as attention_f16_wgmma.cu: the warpgroups share one cp.async K/V ring (a block barrier per tile);
// S = Q K^T with both operands in shared memory, the per-row mask of packed rows (row r is query token r / group),
// online softmax in registers, and P V with P as the register A operand and V transposed by the tensor core (the two
// GEMMs from tile/wgmma_gemms.cuh; attention_f16_wgmma.cu still spells them out: moving it onto the helpers changes
// its SASS schedule, which wants a GPU A/B first).
// Preconditions (host-validated): q, k, v, o 16-byte aligned, strides multiples of 8 elements, scale > 0.
#pragma once

#include "attention_params.cuh"
#include "attention_split_combine.cuh"
#include "attention_wgmma_layout.cuh"
#include "dtypes.cuh"
#include "ptx.cuh"
#include "tile/copy.cuh"
#include "tile/epilogue.cuh"
#include "tile/f16_types.cuh"
#include "tile/kv_ring.cuh"
#include "tile/mask.cuh"
#include "tile/softmax.cuh"
#include "tile/split_block.cuh"
#include "tile/swizzle.cuh"
#include "tile/warpgroup.cuh"
#include "tile/wgmma_gemms.cuh"
#include "wgmma.cuh"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "attention_decode_wgmma.cu needs -arch=sm_90a: wgmma exists only on the arch-specific Hopper target"
#endif

namespace fa_jit {

template <typename T, int kBlockM, int kBlockN, int kHeadDim, int kStages, bool kCausal, int kMods = 0,
          bool kVarlen = false, bool kPaged = false>
__global__ void __launch_bounds__(kBlockM * 2, 1) attention_decode_wgmma(const __grid_constant__ AttentionParams p) {
    using namespace tile;
    constexpr int kNThreads = kBlockM * 2;
    constexpr bool kBf16 = IsBf16<T>::value;
    constexpr int kNTilesS = kBlockN / 8;
    constexpr int kDBlocks = kHeadDim / 64;
    constexpr unsigned kQBytes = 2u * kBlockM * kHeadDim;
    constexpr unsigned kKVBytes = 2u * kBlockN * kHeadDim;
    static_assert(IsF16Type<T>::value, "T must be fa_jit::half_t or fa_jit::bf16_t");
    static_assert(wgmma_layout::legal(kBlockM, kBlockN, kBlockM / 16, kStages, kHeadDim) && kBlockM <= 128,
                  "illegal tile (wgmma_layout::legal)");
    const float kNegInf = neg_inf_f32();

    extern __shared__ float4 smem_raw[];
    const unsigned sQ = (ptx::smem_address(smem_raw) + 1023u) & ~1023u;  // swizzle atoms need 1024-byte alignment

    ptx::grid_dependency_wait();  // launched as a programmatic dependent: nothing read or written before
    const auto blk = SplitBlock<kBlockM, kBlockN, kCausal, kMods, kVarlen, kPaged>::make(p);
    if (kVarlen && blk.r0 >= blk.rows_total) return;  // past a packed sequence's rows
    ptx::launch_dependents();  // the combine kernel may be scheduled (it waits for this grid before reading)
    const int n_tiles = blk.t_end - blk.t_begin;  // this split's key tiles, visited last first
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int g = lane / 4;
    const int t = lane % 4;
    const int warp_row0 = warp * 16;      // this warp's 16 accumulator rows
    const int wg_row0 = warpgroup::index() * 64;  // its warpgroup's 64 rows (the A operand of S)

    const unsigned short* k = static_cast<const unsigned short*>(p.k) + (kVarlen ? 0 : blk.batch) * p.k_batch_stride +
                              blk.head_kv * p.k_head_stride + (kVarlen ? blk.k0 * p.k_row_stride : 0);
    const unsigned short* v = static_cast<const unsigned short*>(p.v) + (kVarlen ? 0 : blk.batch) * p.v_batch_stride +
                              blk.head_kv * p.v_head_stride + (kVarlen ? blk.k0 * p.v_row_stride : 0);
    const int key0 = blk.t_begin * kBlockN;
    // A paged cache (kPaged): K / V through the block table.
    const PagedKv<unsigned short> k_pages =
        kPaged ? PagedKv<unsigned short>::keys(p, blk.head_kv, blk.batch) : PagedKv<unsigned short>{};
    const PagedKv<unsigned short> v_pages =
        kPaged ? PagedKv<unsigned short>::values(p, blk.head_kv, blk.batch) : PagedKv<unsigned short>{};
    auto load_k = [&](unsigned smem, int row0) {
        if constexpr (kPaged)
            cp_async_tile_paged<Swizzle128B<kBlockN>, kNThreads, kBlockN, kHeadDim / 8, kHeadDim, false>(
                smem, k_pages, key0 + row0, blk.key_end);
        else
            cp_async_tile<Swizzle128B<kBlockN>, kNThreads, kBlockN, kHeadDim / 8, kHeadDim, false>(
                smem, k, p.k_row_stride, key0 + row0, blk.key_end);
    };
    auto load_v = [&](unsigned smem, int row0) {
        if constexpr (kPaged)
            cp_async_tile_paged<Swizzle128B<kBlockN>, kNThreads, kBlockN, kHeadDim / 8, kHeadDim, false>(
                smem, v_pages, key0 + row0, blk.key_end);
        else
            cp_async_tile<Swizzle128B<kBlockN>, kNThreads, kBlockN, kHeadDim / 8, kHeadDim, false>(
                smem, v, p.v_row_stride, key0 + row0, blk.key_end);
    };
    KVRing<kStages, kBlockN, kKVBytes> ring{sQ + kQBytes, 0};
    if (n_tiles > 0) {  // Q with the first key tile in group 0, then kStages - 2 more tiles
        blk.template gather_q<Swizzle128B<kBlockM>, kNThreads, kHeadDim / 8, kHeadDim>(sQ, p);
        ring.prologue(n_tiles, load_k, load_v);
    }

    // Keys [0, limit) that this thread's rows g and g + 8 see.
    const int limit[2] = {blk.key_limit(warp_row0 + g), blk.key_limit(warp_row0 + 8 + g)};
    // With score modifiers: each row's keys, diagonal and slope instead (tile/split_block.cuh).
    const ScoreMod<kMods> mod = ScoreMod<kMods>::make(p, 0);
    RowKeys row_keys[2];
    if constexpr (kMods != 0)
        row_keys[0] = blk.row_keys(p, warp_row0 + g), row_keys[1] = blk.row_keys(p, warp_row0 + 8 + g);
    float acc_o[kDBlocks][8][4];
    clear_accumulator(acc_o);
    float m_i[2] = {kNegInf, kNegInf};
    float l_i[2] = {0.f, 0.f};

    for (int it = 0; it < n_tiles; ++it) {
        const int n_block = n_tiles - 1 - it;
        const int n0 = key0 + n_block * kBlockN;
        ring.wait_current();
        wgmma::fence_proxy_async();
        __syncthreads();  // tile `it` landed and is visible to wgmma; every warpgroup is done with the buffer refilled
        ring.refill(n_block, n_block * kBlockN, load_k, load_v);
        const unsigned sK = ring.advance();
        const unsigned sV = sK + kKVBytes;

        // ---- S = Q K^T ------------------------------------------------------------------------------------------------
        float acc_s[kNTilesS][4];
        wgmma_qk<kBf16, kBlockM, kBlockN, kHeadDim>(acc_s, sQ, wg_row0, sK);

        // ---- mask (tiles reaching past the keys every row sees), online softmax --------------------------------------
        if constexpr (kMods == 0) {
            blk.mask_scores(acc_s, n0, t, limit, kNegInf);
        } else {  // every score modified and checked against its row's keys
            blk.modify_scores(acc_s, n0, t, row_keys, mod, kNegInf);
        }
        unsigned p_frag[kNTilesS][2];  // P as T pairs: [nt][h] = columns (2t, 2t+1) of row g + 8h
        float alpha[2];
        online_softmax(acc_s, m_i, l_i, alpha, p.scale_log2, kNegInf,
                       [&](int nt, int h, float p0, float p1) { p_frag[nt][h] = pack2<kBf16>(p0, p1); });

        // ---- O = O * alpha + P V_j ------------------------------------------------------------------------------------
        wgmma_pv<kBf16, kBlockN, kHeadDim>(acc_o, p_frag, alpha, sV);
    }
    ptx::cp_async_wait<0>();  // nothing left in flight at exit (empty groups only)

    // ---- epilogue: each thread's two columns per n-tile of rows g and g + 8, straight from registers (decode's O is
    // small next to the K/V it reads) ------------------------------------------------------------------------------
    blk.template store_rows<T, kHeadDim>(p, acc_o, m_i, l_i, warp_row0, g, t, kNegInf);
}

}  // namespace fa_jit
