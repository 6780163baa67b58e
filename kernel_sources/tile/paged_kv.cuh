// Paged KV cache: where a sequence's key j lies when K / V live in pages (AttentionParams::block_table), and the
// cp.async copies that gather key tiles from them.
//
//   row(j) = base + page * page_stride + (j % page_size) * row_stride,   page = block_table[batch][j / page_size]
//
// Page sizes are multiples of 16, and key tiles start at multiples of 16, so an aligned group of 16 keys lies in one
// page: the copies look a page up once per 16 rows a thread copies (once per row where a thread's rows are further
// apart). j / page_size is a multiply and a shift (fast_div; the host computes the constants).
//
// Malformed tables: a lookup never leaves the sequence's row of the table, and an entry outside [0, num_pages) never
// addresses outside the pages (both clamped). Beyond that, a sequence whose table names a page outside
// [0, num_pages) among the pages its keys use is made empty (checked_keys, block-wide): its rows get O = 0 and
// LSE = -inf instead of attending to some other sequence's keys.
#pragma once

#include "attention_params.cuh"
#include "ptx.cuh"
#include "tile/copy.cuh"

namespace fa_jit::tile {

// n / d for n in [0, 2^31) and the divisor's (magic, shift) (attention.cpp: page_divisor): umulhi(n, magic) < n, so
// the sum stays below 2^32.
__device__ __forceinline__ int fast_div(int n, unsigned magic, int shift) {
    const unsigned u = static_cast<unsigned>(n);
    return static_cast<int>((__umulhi(u, magic) + u) >> shift);
}

// K or V of one (sequence, KV head) in pages. E: the element storage type (unsigned short or float).
template <typename E>
struct PagedKv {
    const E* base;     // page 0, row 0 of the KV head
    const int* table;  // the sequence's row of p.block_table
    long long page_stride, row_stride;
    int last_entry;  // pages_per_seq - 1
    int last_page;   // num_pages - 1
    int page_size;
    unsigned magic;
    int shift;

    __device__ __forceinline__ static PagedKv make(const AttentionParams& p, const void* tensor, long long head_offset,
                                                   long long page_stride, long long row_stride, int batch) {
        return {static_cast<const E*>(tensor) + head_offset,
                p.block_table + static_cast<long long>(batch) * p.pages_per_seq,
                page_stride,
                row_stride,
                p.pages_per_seq - 1,
                p.num_pages - 1,
                p.page_size,
                p.page_magic,
                p.page_shift};
    }
    // K: the kernels' k strides; V: v's.
    __device__ __forceinline__ static PagedKv keys(const AttentionParams& p, int head_kv, int batch) {
        return make(p, p.k, head_kv * p.k_head_stride, p.k_batch_stride, p.k_row_stride, batch);
    }
    __device__ __forceinline__ static PagedKv values(const AttentionParams& p, int head_kv, int batch) {
        return make(p, p.v, head_kv * p.v_head_stride, p.v_batch_stride, p.v_row_stride, batch);
    }

    // The page of key j (j >= 0) and its row there.
    __device__ __forceinline__ int page_of(int j, int& in_page) const {
        const int entry = fast_div(j, magic, shift);
        in_page = j - entry * page_size;
        return min(max(table[min(entry, last_entry)], 0), last_page);
    }
    // The same with the table's entries from `first_entry` on already in shared memory at `entries` (one 4-byte
    // entry each, key j's among them): no global load.
    __device__ __forceinline__ int page_of(int j, int& in_page, int first_entry, unsigned entries) const {
        const int entry = fast_div(j, magic, shift);
        in_page = j - entry * page_size;
        return min(max(ptx::ld_shared_s32(entries + 4u * (entry - first_entry)), 0), last_page);
    }
    // The table entry of key j.
    __device__ __forceinline__ int entry_of(int j) const { return fast_div(j, magic, shift); }
    // Key j's row, and its offset from base in elements.
    __device__ __forceinline__ long long offset(int j) const {
        int in_page;
        const int page = page_of(j, in_page);
        return page * page_stride + in_page * row_stride;
    }
    __device__ __forceinline__ const E* row(int j) const { return base + offset(j); }
};

// Whether the entries tid, tid + threads, ... of those that a sequence's `keys` use name pages in [0, num_pages):
// one thread's share of a table check.
__device__ __forceinline__ bool pages_ok(const AttentionParams& p, int batch, int keys, int tid, int threads) {
    const int* table = p.block_table + static_cast<long long>(batch) * p.pages_per_seq;
    const int entries = min((keys + p.page_size - 1) / p.page_size, p.pages_per_seq);
    bool bad = false;
    for (int i = tid; i < entries; i += threads) {
        const int page = table[i];
        bad |= page < 0 || page >= p.num_pages;
    }
    return !bad;
}
// The keys a paged sequence attends to: `keys` when every table entry its keys use names a page in
// [0, num_pages), else 0. Block-wide: every thread of the block calls it with the same arguments.
__device__ __forceinline__ int checked_keys(const AttentionParams& p, int batch, int keys) {
    const bool ok = pages_ok(p, batch, keys, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x));
    return __syncthreads_or(!ok) ? 0 : keys;
}

// Rows [row0, row0 + kRows) of a paged K or V into a swizzled shared tile, as cp_async_tile (tile/copy.cuh): chunk ch
// of row r to Layout::offset(r, ch), zeros for rows >= rows_total and the padding columns. row0: a multiple of 16.
// kRowRuns: each thread copies consecutive rows (prefill tiles); false keeps the rows interleaved (decode).
template <class Layout, int kNThreads, int kRows, int kChunksRow, int kHeadDim, bool kRowRuns = (kRows > 32)>
__device__ __forceinline__ void cp_async_tile_paged(unsigned smem, const PagedKv<unsigned short>& kv, int row0,
                                                    int rows_total, int tid) {
    static_assert(kChunksRow * 8 >= kHeadDim && kChunksRow * 8 < kHeadDim + 16, "as cp_async_tile");
    static_assert(kHeadDim % 8 == 0, "16-byte chunks need a head dim that is a multiple of 8 elements");
    constexpr bool kPadded = kChunksRow * 8 != kHeadDim;
    constexpr int kRowsPerIter = kNThreads % kChunksRow == 0 ? kNThreads / kChunksRow : 0;
    // kRowRuns: each thread copies a run of kRun consecutive rows when the run fits a 16-row group (one lookup per
    // thread); consecutive threads still take consecutive chunks of a row. Decode tiles measured faster with the
    // interleaved rows below (H200: 0.98 of contiguous against 0.92).
    constexpr int kRun = kRowsPerIter > 0 && kRows % kRowsPerIter == 0 ? kRows / kRowsPerIter : 0;
    if constexpr (kRowRuns && kRun > 0 && kRun <= 16 && 16 % kRun == 0) {
        const int ch = tid % kChunksRow;
        const int first = tid / kChunksRow * kRun;
        const bool col_ok = !kPadded || ch * 8 < kHeadDim;
        const unsigned short* run = row0 + first < rows_total ? kv.row(row0 + first) + ch * 8 : kv.base;
#pragma unroll
        for (int i = 0; i < kRun; ++i) {
            const bool ok = col_ok && row0 + first + i < rows_total;
            ptx::cp_async_16(smem + Layout::offset(first + i, ch), ok ? run + i * kv.row_stride : kv.base, ok ? 16 : 0);
        }
    } else if constexpr (kRowsPerIter > 0) {
        // A thread's rows r0 + i * kRowsPerIter (r0 < kRowsPerIter): when kRowsPerIter divides 16, iterations
        // i * kRowsPerIter / 16 share a 16-row group, which starts kRowsPerIter * i rounded down to 16 (one lookup).
        // The copies are compiler barriers, so lookups between them wait for each other: tiles of at most two
        // groups (decode) look both up before the first copy; larger ones (prefill, whose registers are scarce) look
        // each group up before its copies.
        constexpr bool kGroups = 16 % kRowsPerIter == 0;
        constexpr int kGroupRows = 16;
        constexpr bool kHoist = kGroups && kRows <= 2 * kGroupRows;
        const int ch = tid % kChunksRow;
        const int r0 = tid / kChunksRow;
        const bool col_ok = !kPadded || ch * 8 < kHeadDim;
        const unsigned short* groups[kHoist ? kRows / kGroupRows : 1];
        if constexpr (kHoist) {
#pragma unroll
            for (int l = 0; l < kRows / kGroupRows; ++l)
                groups[l] = row0 + l * kGroupRows < rows_total ? kv.row(row0 + l * kGroupRows) : kv.base;
        }
        const unsigned short* group = kv.base;
#pragma unroll
        for (int i = 0; i * kRowsPerIter < kRows; ++i) {
            const int r = r0 + i * kRowsPerIter;
            if (kRows % kRowsPerIter != 0 && r >= kRows) break;
            const bool ok = col_ok && row0 + r < rows_total;
            const unsigned short* src;
            if constexpr (kGroups) {
                const int group_row = i * kRowsPerIter / kGroupRows * kGroupRows;
                if constexpr (kHoist)
                    group = groups[group_row / kGroupRows];
                else if (i * kRowsPerIter % kGroupRows == 0 && row0 + group_row < rows_total)
                    group = kv.row(row0 + group_row);
                src = group + (r - group_row) * kv.row_stride + ch * 8;
            } else {
                src = (ok ? kv.row(row0 + r) : kv.base) + ch * 8;
            }
            ptx::cp_async_16(smem + Layout::offset(r, ch), ok ? src : kv.base, ok ? 16 : 0);
        }
    } else {  // e.g. head dim 192 (24 chunks) over 128 threads: a lookup per chunk
        constexpr int kChunks = kRows * kChunksRow;
#pragma unroll
        for (int c0 = 0; c0 < kChunks; c0 += kNThreads) {
            const int c = c0 + tid;
            if (kChunks % kNThreads != 0 && c >= kChunks) break;
            const int r = c / kChunksRow;
            const int ch = c % kChunksRow;
            const bool ok = (!kPadded || ch * 8 < kHeadDim) && row0 + r < rows_total;
            ptx::cp_async_16(smem + Layout::offset(r, ch), ok ? kv.row(row0 + r) + ch * 8 : kv.base, ok ? 16 : 0);
        }
    }
}
template <class Layout, int kNThreads, int kRows, int kChunksRow, int kHeadDim, bool kRowRuns = (kRows > 32)>
__device__ __forceinline__ void cp_async_tile_paged(unsigned smem, const PagedKv<unsigned short>& kv, int row0,
                                                    int rows_total) {
    cp_async_tile_paged<Layout, kNThreads, kRows, kChunksRow, kHeadDim, kRowRuns>(smem, kv, row0, rows_total,
                                                                                  static_cast<int>(threadIdx.x));
}

// fp32 rows into rows of kSmemStride floats, as cp_async_tile_fp32 (tile/copy.cuh); `vec`: 16-byte copies are legal.
template <int kNThreads, int kRows, int kSmemStride, int kHeadDimPad, int kHeadDim>
__device__ __forceinline__ void cp_async_tile_fp32_paged(float* smem, const PagedKv<float>& kv, int row0,
                                                         int rows_total, bool vec) {
    cp_async_rows_fp32<kNThreads, kRows, kSmemStride, kHeadDimPad, kHeadDim>(
        smem, kv.base, [&](int row, int col) { return kv.offset(row) + col; }, row0, rows_total, vec);
}

}  // namespace fa_jit::tile
