// Global -> shared tile copies with cp.async (asynchronous: the caller commits the group and waits for it).
//
//   smem[r][:] = gmem[row0 + r][0 : kHeadDim], r in [0, kRows); zeros for rows >= rows_total and padding columns.
//
// Zero rows matter: masked keys get P = 0, and 0 * (garbage that happens to be NaN or inf) would poison O.
#pragma once

#include "ptx.cuh"

namespace fa_jit::tile {

// 16-bit elements into a swizzled Layout (tile/swizzle.cuh), 16-byte chunks: kChunksRow chunks per row, of which the
// ones at columns >= kHeadDim are zero-filled (head dims padded up to the MMA's k step). Thread i copies chunks i,
// i + kNThreads, ... so that consecutive threads read consecutive 16 bytes of a row. kEven: the caller guarantees
// row0 + kRows <= rows_total (no row bounds checks). `tid` in [0, kNThreads): the copying thread's index (threadIdx.x
// for a block-wide copy, the lane for a warp's own copy).
template <class Layout, int kNThreads, int kRows, int kChunksRow, int kHeadDim, bool kEven>
__device__ __forceinline__ void cp_async_tile(unsigned smem, const unsigned short* gmem, long long stride, int row0,
                                              int rows_total, int tid) {
    static_assert(kChunksRow * 8 >= kHeadDim && kChunksRow * 8 < kHeadDim + 16,
                  "kChunksRow chunks of 8 elements cover kHeadDim, padded by less than one 16-element k step");
    static_assert(kHeadDim % 8 == 0, "16-byte chunks need a head dim that is a multiple of 8 elements");
    constexpr bool kPadded = kChunksRow * 8 != kHeadDim;  // chunks past kHeadDim exist and are zero-filled
    if (kNThreads % kChunksRow == 0) {  // every thread keeps one column chunk: pointer bumps, no division per chunk
        constexpr int kRowsPerIter = kNThreads / kChunksRow;
        const int ch = tid % kChunksRow;
        const int r0 = tid / kChunksRow;
        const bool col_ok = !kPadded || ch * 8 < kHeadDim;
        const unsigned short* src = gmem + static_cast<long long>(row0 + r0) * stride + ch * 8;
        const long long step = static_cast<long long>(kRowsPerIter) * stride;  // pointer bumps: no hoisted i * step
#pragma unroll
        for (int i = 0; i * kRowsPerIter < kRows; ++i) {
            const int r = r0 + i * kRowsPerIter;
            if (kRows % kRowsPerIter != 0 && r >= kRows) break;
            const bool ok = col_ok && (kEven || row0 + r < rows_total);
            ptx::cp_async_16(smem + Layout::offset(r, ch), ok ? src : gmem, ok ? 16 : 0);
            src += step;
        }
    } else {  // e.g. head dim 192 (24 chunks) over 128 threads
        constexpr int kChunks = kRows * kChunksRow;
#pragma unroll
        for (int c0 = 0; c0 < kChunks; c0 += kNThreads) {
            const int c = c0 + tid;
            if (kChunks % kNThreads != 0 && c >= kChunks) break;
            const int r = c / kChunksRow;
            const int ch = c % kChunksRow;
            const bool ok = (!kPadded || ch * 8 < kHeadDim) && (kEven || row0 + r < rows_total);
            ptx::cp_async_16(smem + Layout::offset(r, ch),
                             ok ? gmem + static_cast<long long>(row0 + r) * stride + ch * 8 : gmem, ok ? 16 : 0);
        }
    }
}

// The block-wide copy: every thread of the block takes part.
template <class Layout, int kNThreads, int kRows, int kChunksRow, int kHeadDim, bool kEven>
__device__ __forceinline__ void cp_async_tile(unsigned smem, const unsigned short* gmem, long long stride, int row0,
                                              int rows_total) {
    cp_async_tile<Layout, kNThreads, kRows, kChunksRow, kHeadDim, kEven>(smem, gmem, stride, row0, rows_total,
                                                                         static_cast<int>(threadIdx.x));
}

// fp32 elements into rows of kSmemStride floats (padded strides, attention_fp32_layout.cuh), kHeadDimPad columns
// (a multiple of 4) of which those >= kHeadDim are zero-filled. `vec` (uniform): 16-byte copies are legal (base
// 16-byte aligned, strides and kHeadDim multiples of 4); otherwise 4-byte copies. Element (j, col) of the source
// at gmem + offset(j, col) (asked only for rows j below rows_total).
template <int kNThreads, int kRows, int kSmemStride, int kHeadDimPad, int kHeadDim, class Offset>
__device__ __forceinline__ void cp_async_rows_fp32(float* smem, const float* gmem, const Offset& offset, int row0,
                                                   int rows_total, bool vec) {
    static_assert(kHeadDimPad % 4 == 0 && kHeadDimPad >= kHeadDim, "rows are copied in 4-float chunks");
    static_assert(kSmemStride >= kHeadDimPad && kSmemStride % 4 == 0, "16-byte aligned shared rows");
    constexpr int kChunksPerRow = kHeadDimPad / 4;
    constexpr int kChunks = kRows * kChunksPerRow;
    const unsigned smem_base = ptx::smem_address(smem);
#pragma unroll 4
    for (int c = threadIdx.x; c < kChunks; c += kNThreads) {
        const int r = c / kChunksPerRow;
        const int col = (c % kChunksPerRow) * 4;
        const bool row_ok = row0 + r < rows_total;
        const float* src = gmem + (row_ok ? offset(row0 + r, col) : 0);  // in-bounds address even when unused
        const unsigned dst = smem_base + 4u * (r * kSmemStride + col);
        if (kHeadDim % 4 == 0 && vec) {
            ptx::cp_async_16(dst, src, row_ok && col < kHeadDim ? 16 : 0);
        } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const bool ok = row_ok && col + e < kHeadDim;
                ptx::cp_async_4(dst + 4u * e, ok ? src + e : gmem, ok ? 4 : 0);
            }
        }
    }
}
// Rows of a [rows_total, kHeadDim] matrix with row stride `stride` elements.
template <int kNThreads, int kRows, int kSmemStride, int kHeadDimPad, int kHeadDim>
__device__ __forceinline__ void cp_async_tile_fp32(float* smem, const float* gmem, long long stride, int row0,
                                                   int rows_total, bool vec) {
    cp_async_rows_fp32<kNThreads, kRows, kSmemStride, kHeadDimPad, kHeadDim>(
        smem, gmem, [&](int row, int col) { return row * stride + col; }, row0, rows_total, vec);
}

}  // namespace fa_jit::tile
