// Block coordinates shared by the attention kernels: which query tile, head and batch a block works on, the base
// pointers of its tensors, and the key tiles it must visit.
//
//   grid (ceil(seqlen_q / kBlockM), heads_q, batch): blockIdx.x -> query tile, blockIdx.y -> head, blockIdx.z -> batch.
//
// Query tiles: causal launches run the heavy (last) query tiles first. Under the bottom-right mask the last rows see
// the most keys, and the blocks that start first finish last, so the long ones belong at the front of the queue.
// Heads: query head h reads key/value head h / group_size (GQA; group_size 1 is plain multi-head attention).
// Bases: batch * batch_stride + head * head_stride in 64-bit arithmetic (the strides are long long).
// Key range: tiles [0, n_block_max) hold every key some row of the query tile sees; under the causal mask row i
// sees keys j <= i + causal_offset, so the last row of the tile bounds the range (0 tiles when it sees no key).
//
// Three steps, block_index -> tensor_bases -> key_tiles, which each kernel calls where its register allocation wants
// them: the fp32 and mma.sync kernels write (some of) the bases out in the kernel body, the wgmma kernel computes the
// bases and the key range after its lane roles. The same arithmetic in another place lands elsewhere in the PTX, and
// at 255 registers ptxas then spills more or the kernel runs slower (bench/NOTES.md, "mma.sync kernel on the tile
// layer" and "Kernel families and the tile layer on the GPU").
#pragma once

#include "attention_params.cuh"
#include "tile/head_groups.cuh"
#include "tile/mask.cuh"
#include "tile/paged_kv.cuh"
#include "tile/tile_index.cuh"

namespace fa_jit::tile {

template <int kBlockM, bool kCausal>
__device__ __forceinline__ BlockIndex block_index(const AttentionParams& p) {
    static_assert(kBlockM > 0, "tile sizes must be positive");
    const int m_block = kCausal ? static_cast<int>(gridDim.x - 1 - blockIdx.x) : static_cast<int>(blockIdx.x);
    const int head = blockIdx.y;
    const int batch = blockIdx.z;
    const int head_kv = head / p.group_size;
    return {m_block * kBlockM, head, batch, head_kv};
}

// The same grid with the heads in groups of at most kGroup (tile/head_groups.cuh says why and in which order).
template <int kBlockM, bool kCausal, int kGroup>
__device__ __forceinline__ BlockIndex block_index_head_groups(const AttentionParams& p) {
    static_assert(kGroup > 0, "a group holds at least one head");
    const int tiles = static_cast<int>(gridDim.x);
    const HeadGroupPlace at = head_group_place(static_cast<int>(blockIdx.x + blockIdx.y * gridDim.x), tiles,
                                               static_cast<int>(gridDim.y), kGroup);
    const int m_block = kCausal ? tiles - 1 - at.rank : at.rank;
    return {m_block * kBlockM, at.head, static_cast<int>(blockIdx.z), at.head / p.group_size};
}

// Persistent kernels: block b takes tiles b, b + gridDim.x, ... (under the causal mask pairs of tiles: 2b and 2b + 1,
// ...), numbered query tile fastest, then head, then batch (tile_at), so that the blocks running at once work on one
// head's K / V (and its GQA group's) while it sits in L2. Under the causal mask a head's tiles come heaviest, lightest,
// second heaviest, second lightest, ... (its last rows see the most keys), so that tiles 2i and 2i + 1 of a head
// together visit about the same keys whatever i. An odd number of query tiles per head gets one more, past the rows
// (m0 >= seqlen_q: no work), after the heaviest, which then makes a pair alone: pairs never straddle two heads.
template <int kBlockM, bool kCausal = false>
__device__ __forceinline__ int tiles_per_head(const AttentionParams& p) {
    const int m_blocks = (p.seqlen_q + kBlockM - 1) / kBlockM;
    return kCausal ? m_blocks + (m_blocks & 1) : m_blocks;
}
template <int kBlockM, bool kCausal = false>
__device__ __forceinline__ int tile_count(const AttentionParams& p) {
    return tiles_per_head<kBlockM, kCausal>(p) * p.heads_q * p.batch;  // the host keeps this below 2^31
}
template <int kBlockM, bool kCausal = false>
__device__ __forceinline__ BlockIndex tile_at(const AttentionParams& p, int tile) {
    const int per_head = tiles_per_head<kBlockM, kCausal>(p);
    const int head_batch = tile / per_head;
    const int head = head_batch % p.heads_q;
    const int i = tile % per_head;
    int m_block = i;
    if constexpr (kCausal) {
        const int m_blocks = (p.seqlen_q + kBlockM - 1) / kBlockM, odd = m_blocks & 1;
        const int j = i - 2 * odd, even = m_blocks - odd;  // position and count among the paired tiles
        m_block = odd && i < 2 ? m_blocks - 1 + i : (j & 1) ? j / 2 : even - 1 - j / 2;
    }
    return {m_block * kBlockM, head, head_batch / p.heads_q, head / p.group_size};
}

template <typename E>  // E: the element storage type (float, or unsigned short for fp16 / bf16 bits)
struct TensorBases {
    const E* q;  // Q[batch][head], row 0
    const E* k;  // K[batch][head_kv], row 0
    const E* v;  // V[batch][head_kv], row 0
    E* o;        // O[batch][head], row 0
    float* lse;  // LSE[batch][head], row 0; null when the caller asked for none
};

template <typename E>
__device__ __forceinline__ TensorBases<E> tensor_bases(const AttentionParams& p, const BlockIndex& b) {
    const E* q = static_cast<const E*>(p.q) + b.batch * p.q_batch_stride + b.head * p.q_head_stride;
    const E* k = static_cast<const E*>(p.k) + b.batch * p.k_batch_stride + b.head_kv * p.k_head_stride;
    const E* v = static_cast<const E*>(p.v) + b.batch * p.v_batch_stride + b.head_kv * p.v_head_stride;
    E* o = static_cast<E*>(p.o) + b.batch * p.o_batch_stride + b.head * p.o_head_stride;
    float* lse =
        p.lse == nullptr ? nullptr : p.lse + (static_cast<long long>(b.batch) * p.heads_q + b.head) * p.seqlen_q;
    return {q, k, v, o, lse};
}

// The keys sequence `batch` uses: p.seqused_k[batch] clamped to [0, seqlen_k], or seqlen_k without per-sequence
// lengths. The clamp keeps a malformed entry from addressing past the tensors the host validated.
__device__ __forceinline__ int used_keys(const AttentionParams& p, int batch) {
    if (p.seqused_k == nullptr) return p.seqlen_k;
    const int used = p.seqused_k[batch];
    return used < 0 ? 0 : (used > p.seqlen_k ? p.seqlen_k : used);
}
// A sequence's rows and lengths. Without kVarlen: row 0 of its batch (the batch strides place it), p.seqlen_q and
// p.seqlen_k. With packed sequences (p.cu_seqlens_q / _k): its first rows q0 / k0 in the packed tensors and its
// lengths, each clamped so that [start, start + length) lies inside [0, total) and length <= the host's bound, so a
// malformed prefix sum never reaches outside. A sequence whose own entries are malformed (negative, decreasing, past
// the total, or longer than the bound) gets no keys: its clamped rows come out O = 0, LSE = -inf (a decreasing pair
// leaves it no rows either; rows no sequence covers are not written). (SeqRows: tile/tile_index.cuh.)
// Whether entries cu[batch], cu[batch + 1] describe rows inside [0, total), at most `bound` of them.
__device__ __forceinline__ bool packed_ok(const int* cu, int batch, int total, int bound) {
    const int s = cu[batch], e = cu[batch + 1];
    return 0 <= s && s <= e && e <= total && e - s <= bound;
}
__device__ __forceinline__ int packed_span(const int* cu, int batch, int total, int bound, int& start) {
    const int s = min(max(cu[batch], 0), total);
    const int e = min(max(cu[batch + 1], s), total);
    start = s;
    return min(e - s, bound);
}
// With kPaged (a paged KV cache, tile/paged_kv.cuh), keys are not packed: k0 is 0 and seqlen_k the used keys
// (seqused_k or seqlen_k), 0 when the block table is malformed; block-wide then (every thread of the block calls it).
// kCheckPages false leaves the table check to the caller (tile::pages_ok): seqlen_k is the used keys.
template <bool kVarlen, bool kPaged = false, bool kCheckPages = true>
__device__ __forceinline__ SeqRows seq_rows(const AttentionParams& p, int batch) {
    SeqRows r{0, 0, p.seqlen_q, p.seqlen_k};
    if constexpr (kVarlen) r.seqlen_q = packed_span(p.cu_seqlens_q, batch, p.total_q, p.seqlen_q, r.q0);
    if constexpr (kPaged)
        r.seqlen_k = kCheckPages ? checked_keys(p, batch, used_keys(p, batch)) : used_keys(p, batch);
    else if constexpr (kVarlen)
        r.seqlen_k = packed_span(p.cu_seqlens_k, batch, p.total_k, p.seqlen_k, r.k0);
    if constexpr (kVarlen) {
        const bool ok = packed_ok(p.cu_seqlens_q, batch, p.total_q, p.seqlen_q) &&
                        (kPaged || packed_ok(p.cu_seqlens_k, batch, p.total_k, p.seqlen_k));
        if (!ok) r.seqlen_k = 0;
    }
    return r;
}

// Bottom-right causal alignment against the used keys: query i sees key j iff j <= i + used - seqlen_q.
__device__ __forceinline__ int causal_offset(const AttentionParams& p, int used_keys) {
    return used_keys - p.seqlen_q;
}

// Key tiles [0, n_block_max) visible to some row of the query tile starting at m0, for `seqlen_k` keys and the
// causal offset (the used length and its offset under per-sequence lengths).
template <int kBlockM, int kBlockN, bool kCausal>
__device__ __forceinline__ int key_tiles(int seqlen_k, int causal_offset, int m0) {
    static_assert(kBlockM > 0 && kBlockN > 0, "tile sizes must be positive");
    int n_block_max = (seqlen_k + kBlockN - 1) / kBlockN;
    if (kCausal) {
        const int last_visible = m0 + kBlockM - 1 + causal_offset;  // the largest key any row of the tile sees
        n_block_max = min(n_block_max, last_visible < 0 ? 0 : last_visible / kBlockN + 1);
    }
    return n_block_max;
}
template <int kBlockM, int kBlockN, bool kCausal>
__device__ __forceinline__ int key_tiles(const AttentionParams& p, int m0) {
    return key_tiles<kBlockM, kBlockN, kCausal>(p.seqlen_k, p.causal_offset, m0);
}

// The key tiles [first, end) a query tile at m0 visits: key_tiles() narrowed to the sliding window. Without kWindow,
// first is the constant 0.
struct KeySpan {
    int first, end;
    __device__ __forceinline__ int count() const { return end - first; }
    // The key tile of visit `it` (0 <= it < count()): last tile first, or, from `start` tiles before the last on,
    // descending and wrapping around (0 <= start < count()).
    __device__ __forceinline__ int visit(int it, int start = 0) const {
        const int j = end - 1 - it - start;
        return j < first ? j + count() : j;
    }
};
// Where a query tile's visits start (KeySpan::visit). Where every query tile of a head visits the same keys (no causal
// mask, no window), the blocks running at once would read one key tile at the same moment if each began with the last
// tile: with `stagger`, query tiles m of group m / kGroup begin that many tiles earlier (modulo the count), so that
// the groups read different tiles while a group's kGroup blocks ask for each tile together (requests that reach L2
// at once are served once: fewer L2 reads, less power; bench/NOTES.md, "Alone against interleaved").
template <int kBlockM, int kGroup = 1>
__device__ __forceinline__ int first_visit(const KeySpan& span, int m0, bool stagger) {
    static_assert(kGroup >= 1, "a stagger group holds at least one query tile");
    return stagger && span.count() > 1 ? m0 / kBlockM / kGroup % span.count() : 0;
}
// Where a query tile's visits start so that its rows' diagonals come first: the key tile of its last row's diagonal
// (key last_row_key), then down. Under ALiBi without the mask a row's largest bias is on its diagonal: visited first,
// it gives the settled max (attention_f16_ws.cu) each row's max among its exact first steps.
template <int kBlockN>
__device__ __forceinline__ int diagonal_first_visit(const KeySpan& span, int last_row_key) {
    const int diagonal = min(max(max(last_row_key, 0) / kBlockN, span.first), span.end - 1);
    return span.end - 1 - diagonal;
}
template <int kBlockM, int kBlockN, bool kCausal, int kMods>
__device__ __forceinline__ KeySpan key_span(int seqlen_k, int offset, int m0, const ScoreMod<kMods>& mod) {
    KeySpan span{0, key_tiles<kBlockM, kBlockN, kCausal>(seqlen_k, offset, m0)};
    if constexpr (ScoreMod<kMods>::kWindow) {
        const int last_visible = m0 + kBlockM - 1 + offset + mod.right;  // the last row's last key
        span.end = min(span.end, last_visible < 0 ? 0 : last_visible / kBlockN + 1);
        const int first_visible = m0 + offset - mod.left;  // the first row's first key
        span.first = min(first_visible <= 0 ? 0 : first_visible / kBlockN, span.end);
    }
    return span;
}

}  // namespace fa_jit::tile
