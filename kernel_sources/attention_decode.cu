// Split-KV decode attention for fp16 / bf16 (mma.sync m16n8k16, cp.async; sm_80 and newer), and the combine kernel
// that merges the splits.
//
//   template <typename T, int kBlockM, int kBlockN, int kHeadDim, int kNWarps, int kStages, bool kCausal,
//             int kMods = 0, bool kVarlen = false, bool kPaged = false>
//   __global__ void attention_decode_split(const __grid_constant__ AttentionParams p);
//   template <typename T, int kHeadDim>
//   __global__ void attention_split_combine(const __grid_constant__ AttentionParams p);  (attention_split_combine.cuh)
//
// Packed GQA: the rows of a tile are (query token i, query head of the KV head's group hg), row = i * group + hg, so
// the group's K/V are read once per KV head whatever the group size. Decode has few rows per KV head (seqlen_q *
// group: 1..128 for common models), so a tile is 16..128 rows.
//
// Launch: grid (row_tiles * num_splits, heads_kv, batch), block kNWarps * 32, dynamic shared memory
// decode_layout::smem_bytes() (tile/split_block.cuh: the block's rows, split and keys, in kWarpN-key tiles).
// Inside the block the warps split the keys first (decode_layout.cuh): key warp w takes tiles w, w + kKeyWarps, ...
// of the run, each through its own kStages-deep cp.async ring, so no key warp waits for another until the end, where
// their (m, l, O) are merged through shared memory; that keeps kKeyWarps * (kStages - 1) loads in flight per block,
// which is what a memory-bound kernel needs. A warp holds 16 rows; more rows go to row warps that share their key
// warp's ring (and compute on the same K/V tile), meeting at a block barrier every step.
//
// Output: num_splits == 1: O (T) and LSE directly. Otherwise each split writes its normalised O (fp32) and LSE to the
// workspace and attention_split_combine merges them. A split that sees no key writes O_s = 0 and LSE_s = -inf.
//
// Per-sequence lengths: p.seqused_k (clamped, tile::used_keys); the causal mask is bottom-right aligned to them.
// Score modifiers (kMods, tile/mask.cuh): each packed row has its own keys, diagonal and ALiBi slope
// (tile::RowKeys); a sliding window narrows the key tiles the splits share.
// Preconditions (host-validated): q, k, v, o 16-byte aligned, strides multiples of 8 elements, scale > 0.
#pragma once

#include "attention_decode_layout.cuh"
#include "attention_params.cuh"
#include "attention_split_combine.cuh"
#include "dtypes.cuh"
#include "ptx.cuh"
#include "tile/coords.cuh"
#include "tile/copy.cuh"
#include "tile/f16_types.cuh"
#include "tile/mask.cuh"
#include "tile/mma16816_gemms.cuh"
#include "tile/softmax.cuh"
#include "tile/split_block.cuh"
#include "tile/swizzle.cuh"

namespace fa_jit {

template <typename T, int kBlockM_, int kBlockN_, int kHeadDim_, int kNWarps_, int kStages_>
struct AttentionDecodeTraits {
    static constexpr int kBlockM = kBlockM_;
    static constexpr int kHeadDim = kHeadDim_;
    static constexpr int kNWarps = kNWarps_;
    static constexpr int kStages = kStages_;
    static constexpr int kNThreads = kNWarps * 32;
    static constexpr int kWarpRows = decode_layout::warp_rows(kBlockM, kHeadDim);  // rows of O a warp holds
    static constexpr int kRowWarps = decode_layout::row_warps(kBlockM, kHeadDim);
    static constexpr int kKeyWarps = kNWarps / kRowWarps;
    static constexpr int kWarpN = decode_layout::warp_keys(kBlockM, kBlockN_, kNWarps, kHeadDim);  // keys per step
    static constexpr int kGroupThreads = 32 * kRowWarps;  // the warps sharing one ring
    static constexpr bool kBf16 = tile::IsBf16<T>::value;

    static constexpr int kMTiles = kWarpRows / 16;
    static constexpr int kNTilesS = kWarpN / 8;
    static constexpr int kDMma = decode_layout::head_dim_mma(kHeadDim);
    static constexpr int kDSmem = decode_layout::head_dim_smem(kHeadDim);
    static constexpr int kKSteps = kDMma / 16;
    static constexpr int kNTilesO = kDMma / 8;
    static constexpr int kChunksRow = kDMma / 8;  // 16-byte chunks loaded per row (padding chunks zero-filled)

    static constexpr unsigned kQBytes = decode_layout::q_bytes(kBlockM, kHeadDim);
    static constexpr unsigned kStageBytes = decode_layout::stage_bytes(kBlockM, kBlockN_, kNWarps, kHeadDim);
    static constexpr unsigned kKVBytes = kStageBytes / 2;  // K, then V, in one stage
    static constexpr int kMergeRow = decode_layout::merge_row_floats(kHeadDim);

    static_assert(tile::IsF16Type<T>::value, "T must be fa_jit::half_t or fa_jit::bf16_t");
    static_assert(decode_layout::legal(kBlockM, kBlockN_, kNWarps, kStages, kHeadDim), "illegal decode tile");
};

namespace decode_detail {

using namespace ptx;
using tile::ldmatrix_x4;
using tile::ldmatrix_x4_trans;
using tile::mma_16816;
using tile::pack2;
using tile::swz_pair;

}  // namespace decode_detail

// A paged cache's kernels declare one block per SM as enough (kPaged ? 1 : 0, where 0 leaves the bound unset): ptxas
// then keeps a deep ring's page pointers in registers (16 x 128 keys in 3 stages: 255 registers, no spill, against
// 168 and a 4-byte spill without; bench/NOTES.md, "Paged decode in 3 stages").
template <typename T, int kBlockM, int kBlockN, int kHeadDim, int kNWarps, int kStages, bool kCausal, int kMods = 0,
          bool kVarlen = false, bool kPaged = false>
__global__ void __launch_bounds__(kNWarps * 32, kPaged ? 1 : 0)
    attention_decode_split(const __grid_constant__ AttentionParams p) {
    using namespace decode_detail;
    using Tr = AttentionDecodeTraits<T, kBlockM, kBlockN, kHeadDim, kNWarps, kStages>;
    using Layout = tile::SwizzleRows64<Tr::kDSmem>;
    constexpr bool kBf16 = Tr::kBf16;
    constexpr int kMTiles = Tr::kMTiles;
    constexpr int kNTilesS = Tr::kNTilesS;
    constexpr int kNTilesO = Tr::kNTilesO;
    constexpr int kWarpN = Tr::kWarpN;
    constexpr int kDS = Tr::kDSmem;
    const float kNegInf = neg_inf_f32();

    extern __shared__ float4 smem_raw[];
    const unsigned sQ = smem_address(smem_raw);
    const unsigned sRing = sQ + Tr::kQBytes;

    // ---- which rows, split and keys ------------------------------------------------------------------------------
    grid_dependency_wait();  // launched as a programmatic dependent: nothing read or written before
    const auto blk = tile::SplitBlock<kBlockM, kWarpN, kCausal, kMods, kVarlen, kPaged>::make(p);
    if (kVarlen && blk.r0 >= blk.rows_total) return;  // past a packed sequence's rows
    launch_dependents();  // the combine kernel may be scheduled (it waits for this grid before reading)
    const int rows_total = blk.rows_total;
    const int r0 = blk.r0;
    const int head_kv = blk.head_kv;
    const int batch = blk.batch;
    const int key_end = blk.key_end;
    const int t_begin = blk.t_begin;
    const int t_end = blk.t_end;

    constexpr int kKeyWarps = Tr::kKeyWarps;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int g = lane / 4;
    const int t = lane % 4;
    const int key_warp = warp % kKeyWarps;  // which ring, and which keys of each step
    const int row_warp = warp / kKeyWarps;  // which rows
    const int warp_row0 = row_warp * Tr::kWarpRows;
    const int group_tid = row_warp * 32 + lane;  // index among the warps of this ring
    const int my_tiles = max(0, (t_end - t_begin - key_warp + kKeyWarps - 1) / kKeyWarps);

    const unsigned short* k = static_cast<const unsigned short*>(p.k) + (kVarlen ? 0 : batch) * p.k_batch_stride +
                              head_kv * p.k_head_stride + (kVarlen ? blk.k0 * p.k_row_stride : 0);
    const unsigned short* v = static_cast<const unsigned short*>(p.v) + (kVarlen ? 0 : batch) * p.v_batch_stride +
                              head_kv * p.v_head_stride + (kVarlen ? blk.k0 * p.v_row_stride : 0);

    using Paged = tile::PagedKv<unsigned short>;  // a paged cache (kPaged): K / V through the block table
    const Paged k_pages = kPaged ? Paged::keys(p, head_kv, batch) : Paged{};
    const Paged v_pages = kPaged ? Paged::values(p, head_kv, batch) : Paged{};

    // ---- Q: the tile's packed rows, gathered from their heads (zeros past the last row) ----------------------------
    blk.template gather_q<Layout, Tr::kNThreads, Tr::kChunksRow, kHeadDim>(sQ, p);
    cp_async_commit();

    // ---- this key warp's K/V ring, filled by its row warps together ------------------------------------------------
    const unsigned ring = sRing + key_warp * kStages * Tr::kStageBytes;
    const auto load_tile = [&](int stage, int it) {  // the key warp's it-th tile into `stage`
        const int n0 = (t_begin + key_warp + it * kKeyWarps) * kWarpN;
        const unsigned sK = ring + stage * Tr::kStageBytes;
        constexpr int kThreads = Tr::kGroupThreads;
        if constexpr (kPaged) {
            tile::cp_async_tile_paged<Layout, kThreads, kWarpN, Tr::kChunksRow, kHeadDim>(sK, k_pages, n0, key_end,
                                                                                          group_tid);
            tile::cp_async_tile_paged<Layout, kThreads, kWarpN, Tr::kChunksRow, kHeadDim>(sK + Tr::kKVBytes, v_pages,
                                                                                          n0, key_end, group_tid);
        } else {
            tile::cp_async_tile<Layout, kThreads, kWarpN, Tr::kChunksRow, kHeadDim, false>(sK, k, p.k_row_stride, n0,
                                                                                           key_end, group_tid);
            tile::cp_async_tile<Layout, kThreads, kWarpN, Tr::kChunksRow, kHeadDim, false>(
                sK + Tr::kKVBytes, v, p.v_row_stride, n0, key_end, group_tid);
        }
    };
    // The warps of one ring meet here: the warp alone when it has the ring to itself; with row warps the whole block
    // (every warp then runs the same number of steps, `steps` below), a plain barrier that compute-sanitizer's
    // racecheck follows.
    const auto sync_ring = [&] {
        if (Tr::kRowWarps == 1)
            __syncwarp();
        else
            __syncthreads();
    };
    const int steps = Tr::kRowWarps == 1 ? my_tiles : (t_end - t_begin + kKeyWarps - 1) / kKeyWarps;
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
        if (s < my_tiles) load_tile(s, s);
        cp_async_commit();
    }

    // Per thread rows g and g + 8 of each m-tile: the keys they see ([0, limit)).
    int limit[kMTiles][2];
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) limit[mt][h] = blk.key_limit(warp_row0 + mt * 16 + h * 8 + g);
    // With score modifiers: each row's keys, diagonal and slope instead.
    const tile::ScoreMod<kMods> mod = tile::ScoreMod<kMods>::make(p, 0);
    tile::RowKeys row_keys[kMods != 0 ? kMTiles : 1][2];
    if constexpr (kMods != 0) {
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
            for (int h = 0; h < 2; ++h) row_keys[mt][h] = blk.row_keys(p, warp_row0 + mt * 16 + h * 8 + g);
    }

    float acc_o[kMTiles][kNTilesO][4];
    float m_i[kMTiles][2], l_i[kMTiles][2];
    tile::clear_o_state(acc_o, m_i, l_i, kNegInf);

    // ldmatrix lane roles (as attention_f16.cu): matrix lane / 8, row lane % 8.
    const int lm_row = lane % 8;
    const int lm_mat = lane / 8;
    const unsigned q_lane = sQ + (warp_row0 + lm_row + (lm_mat % 2) * 8) * (kDS * 2);
    const unsigned q_lane_x = (lm_mat / 2) ^ lm_row;
    const unsigned k_lane_row = (lm_row + (lm_mat / 2) * 8) * (kDS * 2);
    const unsigned k_lane_x = (lm_mat % 2) ^ lm_row;
    const unsigned v_lane_row = (lm_row + (lm_mat % 2) * 8) * (kDS * 2);
    const unsigned v_lane_x = (lm_mat / 2) ^ lm_row;

    cp_async_wait<kStages - 2>();  // Q and this ring's first tile
    __syncthreads();               // every thread's part of Q and of the first tiles

    // A warp of one m-tile keeps its Q fragments in registers up to d 128 (32 registers): with many row warps per
    // tile, re-reading Q from shared memory every key tile would cost as much as reading K.
    constexpr bool kQInRegs = kMTiles == 1 && Tr::kKSteps <= 8;
    unsigned q_frag[kMTiles][kQInRegs ? Tr::kKSteps : 1][4];
    if (kQInRegs) {
#pragma unroll
        for (int ks = 0; ks < (kQInRegs ? Tr::kKSteps : 1); ++ks)
            tile::load_q_fragment<kDS>(q_frag[0][ks], q_lane, q_lane_x, 0, ks);
    }

    int stage = 0;
    for (int it = 0; it < steps; ++it) {
        if (it > 0) {
            cp_async_wait<kStages - 2>();
            sync_ring();  // the tile landed for every thread of the ring; all are done with the stage refilled below
        }
        {
            const int next = it + kStages - 1;
            int ns = stage + kStages - 1;
            if (ns >= kStages) ns -= kStages;
            if (next < my_tiles) load_tile(ns, next);
            cp_async_commit();
        }
        const unsigned sK = ring + stage * Tr::kStageBytes;
        const unsigned sV = sK + Tr::kKVBytes;
        if (++stage == kStages) stage = 0;
        if (it >= my_tiles) continue;  // a key warp past its last tile, still meeting the others' barriers
        const int n0 = (t_begin + key_warp + it * kKeyWarps) * kWarpN;

        // S = Q K^T
        float acc_s[kMTiles][kNTilesS][4];
        tile::clear_accumulator(acc_s);
        tile::gemm_qk_16816<kBf16, kQInRegs, Tr::kKSteps, kDS>(acc_s, q_frag, q_lane, q_lane_x, sK, k_lane_row,
                                                               k_lane_x);

        // Mask: only tiles reaching past the keys every row sees. With score modifiers, every score is modified and
        // checked against its row's keys.
        if constexpr (kMods == 0) {
            if (n0 + kWarpN > blk.mask_from) {
#pragma unroll
                for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
                    for (int nt = 0; nt < kNTilesS; ++nt)
#pragma unroll
                        for (int e = 0; e < 4; ++e)
                            if (tile::frag_col(n0, nt, e, t) >= limit[mt][e / 2]) acc_s[mt][nt][e] = kNegInf;
            }
        } else {
#pragma unroll
            for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
                for (int nt = 0; nt < kNTilesS; ++nt)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int col = tile::frag_col(n0, nt, e, t);
                        const tile::RowKeys& rk = row_keys[mt][e / 2];
                        acc_s[mt][nt][e] = col >= rk.end || col < rk.begin
                                               ? kNegInf
                                               : mod.modify(acc_s[mt][nt][e], rk.diagonal - col, rk.slope);
                    }
        }

        // Online softmax, then O = O * alpha + P V into a fresh accumulator per 16 columns (tile/softmax.cuh).
        unsigned p_frag[kMTiles][kNTilesS][2];
        float alpha[kMTiles][2];
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt)
            tile::online_softmax(acc_s[mt], m_i[mt], l_i[mt], alpha[mt], p.scale_log2, kNegInf,
                                 [&](int nt, int h, float p0, float p1) { p_frag[mt][nt][h] = pack2<kBf16>(p0, p1); });
#pragma unroll
        for (int dc = 0; dc < kNTilesO / 2; ++dc) {
            float pv[kMTiles][2][4];
#pragma unroll
            for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
                for (int j = 0; j < 2; ++j) pv[mt][j][0] = pv[mt][j][1] = pv[mt][j][2] = pv[mt][j][3] = 0.f;
#pragma unroll
            for (int kc = 0; kc < kWarpN / 16; ++kc) {
                unsigned b[4];
                ldmatrix_x4_trans(b, sV + v_lane_row + kc * 16 * (kDS * 2) + swz_pair(v_lane_x, dc));
#pragma unroll
                for (int mt = 0; mt < kMTiles; ++mt) {
                    const unsigned a[4] = {p_frag[mt][2 * kc][0], p_frag[mt][2 * kc][1], p_frag[mt][2 * kc + 1][0],
                                           p_frag[mt][2 * kc + 1][1]};
                    mma_16816<kBf16>(pv[mt][0], a, b[0], b[1]);
                    mma_16816<kBf16>(pv[mt][1], a, b[2], b[3]);
                }
            }
#pragma unroll
            for (int mt = 0; mt < kMTiles; ++mt) tile::rescale_add(acc_o[mt], 2 * dc, alpha[mt], pv[mt]);
        }
    }
    cp_async_wait<0>();
    __syncthreads();  // every warp is done with its ring: the merge reuses it

    // ---- merge the key warps: each writes its unnormalised O, row max (log2 units) and row sum ---------------------
    float* const merge = reinterpret_cast<float*>(reinterpret_cast<char*>(smem_raw) + Tr::kQBytes);
    float* const merge_m = merge + kKeyWarps * kBlockM * Tr::kMergeRow;  // [key warp][row]
    float* const merge_l = merge_m + kKeyWarps * kBlockM;
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = warp_row0 + mt * 16 + h * 8 + g;
            float* o_row = merge + (key_warp * kBlockM + row) * Tr::kMergeRow;
#pragma unroll
            for (int nt = 0; nt < kNTilesO; ++nt) {
                o_row[nt * 8 + 2 * t] = acc_o[mt][nt][2 * h];
                o_row[nt * 8 + 2 * t + 1] = acc_o[mt][nt][2 * h + 1];
            }
            const float l = quad_sum(l_i[mt][h]);
            if (t == 0) {
                merge_m[key_warp * kBlockM + row] = m_i[mt][h];
                merge_l[key_warp * kBlockM + row] = l;
            }
        }
    __syncthreads();

    // Thread i takes 4 columns of one row: the key warps' parts weighed by exp2(m_w - m), then O / l and the LSE.
    constexpr int kVecs = kHeadDim / 4;
    for (int idx = threadIdx.x; idx < kBlockM * kVecs; idx += Tr::kNThreads) {
        const int r = idx / kVecs;
        const int c = (idx - r * kVecs) * 4;
        if (r0 + r >= rows_total) break;  // rows ascend with idx
        float m = kNegInf;
#pragma unroll
        for (int w = 0; w < kKeyWarps; ++w) m = fmaxf(m, merge_m[w * kBlockM + r]);
        float l = 0.f, o[4] = {0.f, 0.f, 0.f, 0.f};
        if (m != kNegInf) {
#pragma unroll
            for (int w = 0; w < kKeyWarps; ++w) {
                const float scale = exp2_approx(merge_m[w * kBlockM + r] - m);
                l += scale * merge_l[w * kBlockM + r];
                const float* part = merge + (w * kBlockM + r) * Tr::kMergeRow + c;
#pragma unroll
                for (int j = 0; j < 4; ++j) o[j] += scale * part[j];
            }
        }
        const float inv_l = l > 0.f ? 1.f / l : 0.f;
        const float out[4] = {o[0] * inv_l, o[1] * inv_l, o[2] * inv_l, o[3] * inv_l};
        blk.template store_o<T, 4>(p, r, c, out);
        if (c == 0) blk.store_lse(p, r, l > 0.f ? (m + log2_approx(l)) * 0.69314718055994531f : kNegInf);
    }
}

}  // namespace fa_jit
