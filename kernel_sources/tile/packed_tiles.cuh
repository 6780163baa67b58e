// Packed sequences in blocks that loop over query tiles (f16-ws's tile-loop variant with cu_seqlens): which tiles a
// block takes, without empty tiles and without a tile counter.
//
// One warp of each block reads every sequence's rows once (tile::seq_rows: clamped, no keys for malformed entries)
// into a Table in shared memory and ranks the sequences by query tiles, most first. Under the causal mask a tile's
// keys grow with its index, so a position is a pair of one head's tiles, j and its tiles - 1 - j (the middle one
// alone), of about equal cost within a sequence: the longest sequences first, a head's pairs in turn, so that the
// blocks running at once read few heads' K / V, as the fixed-length looping kernel's do. Block i of G takes positions
// i, 2G - 1 - i, 2G + i, 4G - 1 - i, ... (a snake: positions of falling cost even out over the blocks).
// Numbering tiles by level instead (every sequence's last query tile, then the one before, ...) had the blocks running
// at once read many sequences' K / V and ran 3 % slower at d 128 (bench/NOTES.md, "Packed causal sequences from a tile
// table merged"); a fixed pairing of each sequence's own tiles over the longest's count left some blocks a few
// percent more work and half their tiles empty ("Packed causal sequences in looping blocks").
#pragma once

#include "attention_params.cuh"
#include "attention_ws_layout.cuh"
#include "tile/tile_index.cuh"

namespace fa_jit::tile::packed_tiles {

// The host takes this variant only for at most kMaxSequences sequences (packed_loop_fits).
constexpr int kMaxSequences = 64;

struct Table {
    int4 rows[kMaxSequences];            // each sequence's SeqRows: q0, seqlen_q, k0, seqlen_k
    int pair_start[kMaxSequences + 1];   // each ranked sequence's first position (pairs x heads); [batch]: the count
    unsigned char order[kMaxSequences];  // sequences by query tiles, most first (ties by index)
    int batch;
};
constexpr int kTableBytes = (static_cast<int>(sizeof(Table)) + 15) / 16 * 16;
static_assert(kTableBytes + 16 <= ws_layout::kPackedTableBytes, "the table, 16-byte aligned after the barriers");

// The exclusive prefix sums of two values per lane (lane's and lane + 32's, in that order), times `scale`, into
// out[0..64].
__device__ __forceinline__ void prefix_pairs(const int (&x)[2], int scale, int* out, int lane) {
    int sum[2] = {x[0], x[1]};
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const int y = __shfl_up_sync(0xffffffffu, sum[h], o);
            if (lane >= o) sum[h] += y;
        }
    const int first_half = __shfl_sync(0xffffffffu, sum[0], 31);
    if (lane == 0) out[0] = 0;
    out[lane + 1] = sum[0] * scale;
    out[lane + 33] = (first_half + sum[1]) * scale;
}

// Fills `t`: the 32 lanes of one warp (lane = threadIdx.x % 32), p.batch <= kMaxSequences; rows_of(b) gives sequence
// b's SeqRows (the kernel's tile::seq_rows, from cu_seqlens). The block's barrier after it publishes the table.
template <int kBlockM, typename RowsOf>
__device__ __forceinline__ void build(const AttentionParams& p, Table& t, int lane, RowsOf rows_of) {
    int tiles[2];  // query tiles of sequences lane and lane + 32; -1 past the batch
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int b = lane + 32 * h;
        tiles[h] = -1;
        if (b < p.batch) {
            const SeqRows r = rows_of(b);
            t.rows[b] = make_int4(r.q0, r.seqlen_q, r.k0, r.seqlen_k);
            tiles[h] = (r.seqlen_q + kBlockM - 1) / kBlockM;
        }
    }
    // Each sequence's rank: sequences with more tiles first.
    int rank[2] = {0, 0};
    for (int j = 0; j < kMaxSequences; ++j) {
        const int tj = __shfl_sync(0xffffffffu, j < 32 ? tiles[0] : tiles[1], j % 32);
#pragma unroll
        for (int h = 0; h < 2; ++h) rank[h] += tj > tiles[h] || (tj == tiles[h] && j < lane + 32 * h);
    }
    // The pairs of the sequence of each rank (lane's ranks lane and lane + 32).
    int pairs[2] = {0, 0};
    for (int j = 0; j < kMaxSequences; ++j) {
        const int tj = __shfl_sync(0xffffffffu, j < 32 ? tiles[0] : tiles[1], j % 32);
        const int rj = __shfl_sync(0xffffffffu, j < 32 ? rank[0] : rank[1], j % 32);
#pragma unroll
        for (int h = 0; h < 2; ++h)
            if (tj > 0 && rj == lane + 32 * h) pairs[h] = (tj + 1) / 2;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h)
        if (tiles[h] >= 0) t.order[rank[h]] = static_cast<unsigned char>(lane + 32 * h);
    prefix_pairs(pairs, p.heads_q, t.pair_start, lane);
    if (lane == 0) t.batch = p.batch;
}

// Tile ids in [0, count()): two per position (the second of a middle tile has no rows).
__device__ __forceinline__ int count(const Table& t) { return 2 * t.pair_start[t.batch]; }

// Block `block` of `blocks`: the tile id of its n-th tile (count() or more: none).
__device__ __forceinline__ int tile_of(int n, int block, int blocks) {
    const int i = n >> 1;
    const int position = i * blocks + ((i & 1) ? blocks - 1 - block : block);
    return 2 * position + (n & 1);
}

// The last index in [lo, hi) whose start is <= x, for starts[lo] <= x < starts[hi].
__device__ __forceinline__ int bracket(const int* starts, int lo, int hi, int x) {
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (starts[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

// The tile `id` (< count(t)) and its sequence's rows; a middle tile's second gets m0 = seqlen_q (no rows).
template <int kBlockM>
__device__ __forceinline__ BlockIndex tile_at(const AttentionParams& p, const Table& t, int id, SeqRows& seq) {
    const int position = id >> 1;
    const int rank = bracket(t.pair_start, 0, t.batch, position);
    const int batch = t.order[rank];
    const int tiles = (t.rows[batch].y + kBlockM - 1) / kBlockM, pairs = (tiles + 1) / 2;
    const int i = position - t.pair_start[rank], j = i % pairs, head = i / pairs;
    const int m_block = (id & 1) == 0 ? j : (tiles - 1 - j == j ? tiles : tiles - 1 - j);
    const int4 r = t.rows[batch];
    seq = SeqRows{r.x, r.z, r.y, r.w};
    return {m_block * kBlockM, head, batch, head / p.group_size};
}

}  // namespace fa_jit::tile::packed_tiles
