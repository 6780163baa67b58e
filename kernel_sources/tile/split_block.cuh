// Coordinates of a split-KV decode block: which packed query rows, which KV head and sequence, which run of key
// tiles, and where each row's output goes. Shared by the decode kernels (attention_decode.cu on mma.sync,
// attention_decode_wgmma.cu on Hopper).
//
//   grid (row_tiles * num_splits, heads_kv, batch), blockIdx.x = split * row_tiles + row tile,
//   row_tiles = ceil(seqlen_q * group / kBlockM).
//
// Packed GQA: row = token * group + head_in_group, so the query heads of one KV head share the block's K/V reads.
// Keys are visited in tiles of kTileKeys; split s of a (sequence, KV head) takes the s-th of num_splits equal runs of
// the tiles its rows see ([t_begin, t_end), possibly empty). A sliding window (kMods) narrows those tiles to the ones
// inside some row's window; RowKeys gives each row its keys, diagonal and ALiBi slope. kPaged: K / V in pages
// (tile/paged_kv.cuh); make() is then block-wide.
// Output: with one split the block writes O (T) and the LSE; otherwise its normalised fp32 O and LSE go to the
// workspace (p.partial_o, p.partial_lse; attention_split_combine merges them).
// Launch: on sm_90 the split kernels are programmatic dependents of the kernel before them (split_kv.cpp). Every block
// calls ptx::grid_dependency_wait before make(): nothing is read or written before that kernel has completed. Then
// ptx::launch_dependents releases the combine.
#pragma once

#include "attention_params.cuh"
#include "dtypes.cuh"
#include "ptx.cuh"
#include "tile/coords.cuh"
#include "tile/epilogue.cuh"
#include "tile/f16_types.cuh"
#include "tile/mask.cuh"

namespace fa_jit::tile {

struct PackedRow {
    int token;
    int head;
};
__device__ __forceinline__ PackedRow unpack_row(int row, int group, int head_kv) {
    const int token = row / group;
    return {token, head_kv * group + (row - token * group)};
}

// The keys [begin, end) packed row r sees, its diagonal (token + offset: ALiBi distances are diagonal - key) and its
// head's ALiBi slope in raw-score units.
struct RowKeys {
    int begin, end;
    int diagonal;
    float slope;
};

template <int kBlockM, int kTileKeys, bool kCausal, int kMods = 0, bool kVarlen = false, bool kPaged = false>
struct SplitBlock {
    static constexpr bool kWindow = (kMods & mods::kWindow) != 0;
    int group;       // query heads per KV head
    int rows_total;  // packed rows of the (sequence, KV head): seqlen_q * group (none past a packed sequence's end)
    int q0, k0;      // packed sequences (kVarlen): the sequence's first rows in q / o and k / v (0 when paged); else 0
    int split;
    int r0;  // first packed row of the tile
    int head_kv;
    int batch;
    int used;       // keys the sequence uses (seqused_k, clamped)
    int offset;     // causal offset against them
    int key_end;    // keys [0, key_end) are seen by some row of the tile
    int mask_from;  // keys >= mask_from are hidden from some row (the tiles that need a mask)
    int key_begin;  // with a window: keys below key_begin are hidden from every row of the tile
    int t_begin;    // this split's key tiles [t_begin, t_end)
    int t_end;

    __device__ __forceinline__ static SplitBlock make(const AttentionParams& p) {
        SplitBlock b;
        b.group = p.group_size;
        b.rows_total = p.seqlen_q * b.group;
        const int row_tiles = (b.rows_total + kBlockM - 1) / kBlockM;  // of the bound: the grid
        b.split = blockIdx.x / row_tiles;
        b.r0 = (blockIdx.x - b.split * row_tiles) * kBlockM;
        b.head_kv = blockIdx.y;
        b.batch = blockIdx.z;
        b.used = used_keys(p, b.batch);
        b.offset = causal_offset(p, b.used);
        b.q0 = b.k0 = 0;
        if constexpr (kVarlen || kPaged) {  // the sequence's rows (a block past them has none: the kernels exit) and
                                            // keys (paged: 0 for a malformed block table)
            const SeqRows seq = seq_rows<kVarlen, kPaged>(p, b.batch);
            b.q0 = seq.q0, b.k0 = seq.k0;
            b.rows_total = seq.seqlen_q * b.group;
            b.used = min(b.used, seq.seqlen_k);
            b.offset = b.used - seq.seqlen_q;
        }
        // The last token of the tile bounds the keys any row sees; the first bounds the keys every row sees.
        const int last_token = min(b.r0 + kBlockM - 1, b.rows_total - 1) / b.group;
        b.key_end = kCausal ? max(0, min(b.used, last_token + b.offset + 1)) : b.used;
        b.mask_from = kCausal ? max(0, min(b.used, b.r0 / b.group + b.offset + 1)) : b.used;
        int first_tile = 0;
        if constexpr (kWindow) {
            const int first_token = b.r0 / b.group;
            b.key_end = max(0, min(b.key_end, last_token + b.offset + p.window_right + 1));
            b.key_begin = min(b.key_end, max(0, first_token + b.offset - p.window_left));
            first_tile = b.key_begin / kTileKeys;
        }
        const int end_tile = (b.key_end + kTileKeys - 1) / kTileKeys;
        const int n_tiles = end_tile - first_tile;
        const int per_split = (n_tiles + p.num_splits - 1) / p.num_splits;
        b.t_begin = first_tile + min(n_tiles, b.split * per_split);
        b.t_end = min(end_tile, b.t_begin + per_split);
        return b;
    }

    // Row r's keys, diagonal and slope (kMods kernels; rows past the last one repeat it: they are never stored).
    __device__ __forceinline__ RowKeys row_keys(const AttentionParams& p, int r) const {
        const int row = min(r0 + r, rows_total - 1);
        const int token = row / group;
        const int diagonal = token + offset;
        int end = kCausal ? min(used, diagonal + 1) : used;
        int begin = 0;
        if constexpr (kWindow) {
            end = min(end, diagonal + p.window_right + 1);
            begin = max(0, diagonal - p.window_left);
        }
        return {begin, max(0, end), diagonal, ScoreMod<kMods>::slope_of(p, unpack_row(row, group, head_kv).head)};
    }

    // Keys [0, limit) that tile row r sees (rows past the last one repeat it: they are never stored).
    __device__ __forceinline__ int key_limit(int r) const {
        const int token = min(r0 + r, rows_total - 1) / group;
        return kCausal ? max(0, min(used, token + offset + 1)) : used;
    }
    __device__ __forceinline__ bool row_exists(int r) const { return r0 + r < rows_total; }

    // Whether the key tile at n0 reaches past mask_from: only those tiles need mask_scores.
    __device__ __forceinline__ bool needs_mask(int n0) const { return n0 + kTileKeys > mask_from; }
    // Hides the keys at or past limit[e / 2] from a warp's S fragment at key n0 (rows g and g + 8: limit[h] =
    // key_limit(warp_row0 + 8h + g)) where the tile needs it.
    template <int kNTiles>
    __device__ __forceinline__ void mask_scores(float (&acc_s)[kNTiles][4], int n0, int t, const int (&limit)[2],
                                                float neg_inf) const {
        if (needs_mask(n0)) hide_past_limits(acc_s, n0, t, limit, neg_inf);
    }
    // mask_scores on a tile known to need it.
    template <int kNTiles>
    __device__ __forceinline__ void hide_past_limits(float (&acc_s)[kNTiles][4], int n0, int t, const int (&limit)[2],
                                                     float neg_inf) const {
        static_assert(kNTiles * 8 == kTileKeys, "a fragment of the block's key tile");
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                if (frag_col(n0, nt, e, t) >= limit[e / 2]) acc_s[nt][e] = neg_inf;
    }
    // With score modifiers (kMods): every score of the fragment modified, or hidden outside its row's keys (rows g
    // and g + 8: row_keys[h] = row_keys(p, warp_row0 + 8h + g)).
    template <int kNTiles>
    __device__ __forceinline__ void modify_scores(float (&acc_s)[kNTiles][4], int n0, int t,
                                                  const RowKeys (&row_keys)[2], const ScoreMod<kMods>& mod,
                                                  float neg_inf) const {
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int col = frag_col(n0, nt, e, t);
                const RowKeys& rk = row_keys[e / 2];
                acc_s[nt][e] =
                    col >= rk.end || col < rk.begin ? neg_inf : mod.modify(acc_s[nt][e], rk.diagonal - col, rk.slope);
            }
    }

    // Q's rows of the tile into shared memory (cp.async, not committed) by threads 0..kNThreads - 1 (`thread`): 16-byte
    // chunk ch of row r to Layout::offset(r, ch), zeros past the last row and for the padding chunks at columns >=
    // kHeadDim.
    template <class Layout, int kNThreads, int kChunksRow, int kHeadDim>
    __device__ __forceinline__ void gather_q(unsigned sQ, const AttentionParams& p,
                                             int thread = static_cast<int>(threadIdx.x)) const {
        const unsigned short* q = static_cast<const unsigned short*>(p.q) + (kVarlen ? 0 : batch) * p.q_batch_stride +
                                  (kVarlen ? q0 * p.q_row_stride : 0);
        constexpr int kChunks = kBlockM * kChunksRow;
        for (int c = thread; c < kChunks; c += kNThreads) {
            const int r = c / kChunksRow;
            const int ch = c - r * kChunksRow;
            const PackedRow pr = unpack_row(r0 + r, group, head_kv);
            const bool ok = r0 + r < rows_total && ch * 8 < kHeadDim;
            const unsigned short* src = q + pr.head * p.q_head_stride + pr.token * p.q_row_stride + ch * 8;
            ptx::cp_async_16(sQ + Layout::offset(r, ch), ok ? src : q, ok ? 16 : 0);
        }
    }

    // Index of tile row r in LSE order [batch][heads_q][seqlen_q] (packed sequences: seqlen_q is the bound; the
    // partial results' order), and its (token, head).
    __device__ __forceinline__ long long out_row(const AttentionParams& p, const PackedRow& pr) const {
        return (static_cast<long long>(batch) * p.heads_q + pr.head) * p.seqlen_q + pr.token;
    }
    // Where the LSE of a row goes with one split: out_row, or [heads_q][total_q] for packed sequences.
    __device__ __forceinline__ long long lse_row(const AttentionParams& p, const PackedRow& pr) const {
        return kVarlen ? static_cast<long long>(pr.head) * p.total_q + q0 + pr.token : out_row(p, pr);
    }

    // Where tile row r's columns go: O (T) with one split, the split's fp32 part otherwise. Computed once per row: the
    // stores of a row then differ by constant offsets (bench/NOTES.md, "decode-ws: where a call's fixed cost goes").
    template <typename T>
    __device__ __forceinline__ T* o_row(const AttentionParams& p, const PackedRow& pr) const {
        return static_cast<T*>(p.o) + (kVarlen ? 0 : batch) * p.o_batch_stride + pr.head * p.o_head_stride +
               (kVarlen ? q0 + pr.token : pr.token) * p.o_row_stride;
    }
    __device__ __forceinline__ float* partial_o_row(const AttentionParams& p, const PackedRow& pr) const {
        return p.partial_o + partial_row(p, pr) * p.head_dim;
    }

    // Columns [c, c + N) of tile row r, already divided by the row sum (N = 2 or 4; c a multiple of N): O in T with
    // one split (one 4- or 8-byte store for fp16 / bf16), the split's fp32 part otherwise.
    template <typename T, int N>
    __device__ __forceinline__ void store_o(const AttentionParams& p, int r, int c, const float (&x)[N]) const {
        const PackedRow pr = unpack_row(r0 + r, group, head_kv);
        if (p.num_splits == 1)
            store_o_at<T, N>(o_row<T>(p, pr) + c, x);
        else
            store_o_at<float, N>(partial_o_row(p, pr) + c, x);
    }
    // N = 2 or 4 values at dst: packed to T pairs (fp16 / bf16 O), or as fp32 (a split's part).
    template <typename T, int N>
    __device__ __forceinline__ static void store_o_at(T* dst, const float (&x)[N]) {
        static_assert(N == 2 || N == 4, "2 or 4 columns");
        if constexpr (IsF16Type<T>::value) {
            constexpr bool kBf16 = IsBf16<T>::value;
            if constexpr (N == 4)
                ptx::st_global_v2(dst, pack2<kBf16>(x[0], x[1]), pack2<kBf16>(x[2], x[3]));
            else
                *reinterpret_cast<unsigned*>(dst) = pack2<kBf16>(x[0], x[1]);
        } else {
            static_assert(sizeof(T) == 4, "decode outputs are fp16 / bf16, their split parts fp32");
            if constexpr (N == 4) {
                const unsigned bits[4] = {float_as_bits(x[0]), float_as_bits(x[1]), float_as_bits(x[2]),
                                          float_as_bits(x[3])};
                ptx::st_global_v4(dst, bits);
            } else {
                ptx::st_global_v2(dst, float_as_bits(x[0]), float_as_bits(x[1]));
            }
        }
    }
    // The LSE of tile row r: to p.lse (if asked for) with one split, to the split's partial LSE otherwise.
    __device__ __forceinline__ void store_lse(const AttentionParams& p, int r, float lse) const {
        const PackedRow pr = unpack_row(r0 + r, group, head_kv);
        if (p.num_splits == 1) {
            if (p.lse != nullptr) p.lse[lse_row(p, pr)] = lse;
        } else {
            p.partial_lse[partial_row(p, pr)] = lse;
        }
    }

    // A warp's rows of the tile from its wgmma accumulators (acc_o[64-column block][n-tile][4]: rows warp_row0 + g
    // and + 8, columns 2t, 2t + 1 of each n-tile), O divided by the row sums, the first kHeadDim columns; the LSEs.
    // Every lane takes part (quad sums).
    template <typename T, int kHeadDim, int kBlocks>
    __device__ __forceinline__ void store_rows(const AttentionParams& p, const float (&acc_o)[kBlocks][8][4],
                                               const float (&m_i)[2], const float (&l_i)[2], int warp_row0, int g,
                                               int t, float neg_inf) const {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = warp_row0 + h * 8 + g;
            const RowTotals rt = row_totals(l_i[h]);
            if (!row_exists(r)) continue;
            const PackedRow pr = unpack_row(r0 + r, group, head_kv);
            if (p.num_splits == 1)
                store_row_columns<kHeadDim>(o_row<T>(p, pr) + 2 * t, acc_o, h, rt.inv_l);
            else
                store_row_columns<kHeadDim>(partial_o_row(p, pr) + 2 * t, acc_o, h, rt.inv_l);
            if (t == 0) store_lse(p, r, row_lse(m_i[h], rt, neg_inf));
        }
    }

private:
    // Row h's columns 2t, 2t + 1 of every n-tile below kHeadDim, times inv_l, at dst (the row's column 2t).
    template <int kHeadDim, typename Dst, int kBlocks>
    __device__ __forceinline__ static void store_row_columns(Dst* dst, const float (&acc_o)[kBlocks][8][4], int h,
                                                             float inv_l) {
#pragma unroll
        for (int dc = 0; dc < kBlocks; ++dc)
#pragma unroll
            for (int nt = 0; nt < 8; ++nt)
                if (dc * 64 + nt * 8 < kHeadDim) {
                    const float x[2] = {acc_o[dc][nt][2 * h] * inv_l, acc_o[dc][nt][2 * h + 1] * inv_l};
                    store_o_at<Dst, 2>(dst + dc * 64 + nt * 8, x);
                }
    }
    __device__ __forceinline__ long long partial_row(const AttentionParams& p, const PackedRow& pr) const {
        return static_cast<long long>(split) * p.batch * p.heads_q * p.seqlen_q + out_row(p, pr);
    }
};

}  // namespace fa_jit::tile
