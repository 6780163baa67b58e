// The epilogue: O = O / l and LSE = ln(sum_j exp(s_j * scale)) = (m + log2 l) * ln 2 per query row; rows that saw no
// key (l = 0: seqlen_k = 0, or above the causal diagonal) get O = 0 and LSE = -inf.
//
// The 16-bit kernels stage O through shared memory (each warp in its own rows of the Q tile, in the Q tile's layout)
// and then store whole 16-byte chunks, consecutive lanes writing consecutive 16 bytes of a row: the accumulator
// layout alone gives 4-byte stores, each warp instruction touching 8 rows x 16 bytes.
#pragma once

#include "ptx.cuh"
#include "tile/f16_types.cuh"

namespace fa_jit::tile {

// A row's sum over its quad and the factor that normalises O: 1 / l, or 0 for a row that saw no key.
struct RowTotals {
    float l;
    bool any;  // the row saw at least one key
    float inv_l;
};
__device__ __forceinline__ RowTotals row_totals(float l_part) {
    const float l = ptx::quad_sum(l_part);
    const bool any = l > 0.f;
    return {l, any, any ? 1.f / l : 0.f};
}

// The wgmma kernels' staging: row g + 8h of a warp's O (acc_o[64-column block][n-tile][4], the m16n8 layout) times
// inv_l, as T pairs, into the warp's rows of a Swizzle128B<kRows> tile. o_stage = tile + (warp_row0 + g) * 128 + 4t:
// row & 7 == g, so n-tile nt's chunk lives at nt ^ g.
template <bool kBf16, int kRows, int kBlocks>
__device__ __forceinline__ void stage_o_row_sw128(unsigned o_stage, int h, int g, const float (&acc_o)[kBlocks][8][4],
                                                  float inv_l) {
#pragma unroll
    for (int dc = 0; dc < kBlocks; ++dc)
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
            ptx::st_shared_b32(o_stage + dc * (kRows * 128u) + h * (8 * 128u) + ((nt ^ g) * 16u),
                               pack2<kBf16>(acc_o[dc][nt][2 * h] * inv_l, acc_o[dc][nt][2 * h + 1] * inv_l));
}

// A quad's 4 x 4 transpose of 4-byte values: lane t of the quad holds x[k] = A[t][k] and ends with x[k] = A[k][t].
// Two exchanges (lanes t ^ 2, then t ^ 1), each of two values: the off-diagonal 2 x 2 blocks swap, then each block
// transposes in place. Every lane of the warp must call it.
__device__ __forceinline__ void quad_transpose(unsigned (&x)[4], int t) {
    const bool hi = (t & 2) != 0;
    unsigned a = hi ? x[0] : x[2], b = hi ? x[1] : x[3];
    a = __shfl_xor_sync(0xffffffffu, a, 2);
    b = __shfl_xor_sync(0xffffffffu, b, 2);
    x[0] = hi ? a : x[0], x[1] = hi ? b : x[1], x[2] = hi ? x[2] : a, x[3] = hi ? x[3] : b;
    const bool odd = (t & 1) != 0;
    a = odd ? x[0] : x[1], b = odd ? x[2] : x[3];
    a = __shfl_xor_sync(0xffffffffu, a, 1);
    b = __shfl_xor_sync(0xffffffffu, b, 1);
    x[0] = odd ? a : x[0], x[1] = odd ? x[1] : a, x[2] = odd ? b : x[2], x[3] = odd ? x[3] : b;
}

// Row g + 8h of a warp's O (acc_o[64-column block][n-tile][4]) times inv_l, straight to global memory at o_row (the
// row's element 0), if `write`; the first kColumns columns (a multiple of 8: padding columns are not stored). The
// accumulator gives lane t of a quad the T pair at 8 nt + 2t of every n-tile nt; a quad transpose over four n-tiles
// gives lane t all eight columns of n-tile 4j + t, one 16-byte store (each warp instruction then fills 8 rows x 64
// contiguous bytes; 4-byte pairs filled 8 x 16). Leftover n-tiles (fewer than four at the end) store 4-byte pairs.
// For kernels whose shared memory is already taken by the next tile. Every lane of the warp must call it.
template <bool kBf16, int kColumns, int kBlocks>
__device__ __forceinline__ void store_o_row(unsigned short* o_row, bool write, int h, int t,
                                            const float (&acc_o)[kBlocks][8][4], float inv_l) {
    static_assert(kColumns % 8 == 0 && kColumns <= kBlocks * 64, "whole n-tiles of O");
#pragma unroll
    for (int dc = 0; dc < kBlocks; ++dc)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int col0 = dc * 64 + j * 32;  // the four n-tiles' first column
            if (col0 + 32 <= kColumns) {
                unsigned x[4];
#pragma unroll
                for (int k = 0; k < 4; ++k)
                    x[k] = pack2<kBf16>(acc_o[dc][4 * j + k][2 * h] * inv_l, acc_o[dc][4 * j + k][2 * h + 1] * inv_l);
                quad_transpose(x, t);
                if (write) ptx::st_global_v4(o_row + col0 + 8 * t, x);
            } else {
#pragma unroll
                for (int k = 0; k < 4; ++k)
                    if (col0 + 8 * k < kColumns && write)
                        *reinterpret_cast<unsigned*>(o_row + col0 + 8 * k + 2 * t) =
                            pack2<kBf16>(acc_o[dc][4 * j + k][2 * h] * inv_l, acc_o[dc][4 * j + k][2 * h + 1] * inv_l);
            }
        }
}

// LSE in natural log from the running max m (log2 units) and the row totals; -inf for a row that saw no key.
__device__ __forceinline__ float row_lse(float m, const RowTotals& r, float neg_inf) {
    return r.any ? (m + ptx::log2_approx(r.l)) * 0.69314718055994531f : neg_inf;  // ln 2
}

// Copy a warp's staged O rows [warp_row0, warp_row0 + kWarpRows) of a shared tile in Layout (tile/swizzle.cuh) to
// global rows o_row0 + r (row stride o_row_stride elements), kHeadDim 16-bit columns. Lane i takes 16-byte chunks i,
// i + 32, ...; rows >= seqlen_q are skipped unless kEvenMN.
template <class Layout, int kWarpRows, int kHeadDim, bool kEvenMN>
__device__ __forceinline__ void store_rows_16b(unsigned smem, int warp_row0, unsigned short* o, long long o_row_stride,
                                               int o_row0, int seqlen_q, int lane) {
    static_assert(kHeadDim % 8 == 0, "16-byte stores need whole 8-element chunks");
    constexpr int kChunksO = kHeadDim / 8;  // 16-byte chunks per output row
    constexpr int kChunksWarp = kWarpRows * kChunksO;
    if (32 % kChunksO == 0) {  // every lane keeps one column chunk: pointer bumps, no division
        constexpr int kRowsPerIter = 32 / kChunksO;
        const int ch = lane % kChunksO;
        const int r0 = lane / kChunksO;
        unsigned short* dst = o + static_cast<long long>(o_row0 + r0) * o_row_stride + ch * 8;
        const long long step = static_cast<long long>(kRowsPerIter) * o_row_stride;
#pragma unroll
        for (int i = 0; i * kRowsPerIter < kWarpRows; ++i) {
            const int r = r0 + i * kRowsPerIter;
            if (kWarpRows % kRowsPerIter != 0 && r >= kWarpRows) break;  // kHeadDim 8: 32 rows per step
            if (kEvenMN || o_row0 + r < seqlen_q) {
                unsigned v[4];
                ptx::ld_shared_v4(v, smem + Layout::offset(warp_row0 + r, ch));
                ptx::st_global_v4(dst, v);
            }
            dst += step;
        }
    } else {
#pragma unroll
        for (int c0 = 0; c0 < kChunksWarp; c0 += 32) {
            const int c = c0 + lane;
            if (kChunksWarp % 32 != 0 && c >= kChunksWarp) break;
            const int r = c / kChunksO;
            const int ch = c % kChunksO;
            if (kEvenMN || o_row0 + r < seqlen_q) {
                unsigned v[4];
                ptx::ld_shared_v4(v, smem + Layout::offset(warp_row0 + r, ch));
                ptx::st_global_v4(o + static_cast<long long>(o_row0 + r) * o_row_stride + ch * 8, v);
            }
        }
    }
}

}  // namespace fa_jit::tile
