// ALiBi's column term on the tensor cores (the warp-specialized kernel, attention_f16_ws.cu).
//
// On a key tile [n0, n0 + kBlockN) whose distances row + offset - col have one sign for every row of the query tile
// (side +1 below the diagonal, -1 above it: alibi_side, tile/mask.cuh), ALiBi's -slope * |row + offset - col| splits
// into side * slope * (col - n0), which varies along the tile's columns only, and -side * slope * (row + offset - n0),
// which varies along its rows only and goes to the softmax once per row (RowBias, tile/softmax.cuh). The column term
// is a rank-one product, so it is one more k step of S = Q K^T:
//   A (shared memory, every row alike): side * slope in three 16-bit parts, [hi, mid, lo, 0, ...];
//   B (shared memory, written once per block): key column c of the tile as [c, c, c, 0, ...].
// The tensor core adds side * slope * c to S in fp32: c < 256 is exact in fp16 and bf16, and the three parts carry
// the slope to 24 bits (bf16) or more (fp16). The softmax then spends no instruction per score on ALiBi. Tiles crossing
// the diagonal take a zero A and the per-score modify_fragment.
#pragma once

#include "dtypes.cuh"
#include "ptx.cuh"
#include "tile/f16_types.cuh"
#include "tile/mask.cuh"
#include "tile/softmax.cuh"
#include "wgmma.cuh"

namespace fa_jit::tile {

// B: [kBlockN][16] elements, K-major without swizzle (wgmma::desc_interleave): core matrices of 8 rows x 16 bytes,
// k 0-7 of rows 8i..8i+7 at 256 i, k 8-15 at 256 i + 128. `threads` threads from `thread` on write it; the caller
// makes it visible to wgmma (fence.proxy.async, then a barrier).
template <bool kBf16, int kBlockN>
__device__ __forceinline__ void write_alibi_keys(unsigned s_keys, int thread, int threads) {
    static_assert(kBlockN <= 256, "key columns are exact in 16 bits below 256");
    for (int i = thread; i < 2 * kBlockN; i += threads) {
        const int c = i / 2;
        const unsigned addr = s_keys + (c / 8) * 256u + (i % 2) * 128u + (c % 8) * 16u;
        if (i % 2 == 0) {
            const unsigned cc = pack2<kBf16>(static_cast<float>(c), static_cast<float>(c));
            const unsigned c0 = pack2<kBf16>(static_cast<float>(c), 0.f);
            asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %3};" ::"r"(addr), "r"(cc), "r"(c0), "r"(0u) : "memory");
        } else {
            ptx::st_shared_zero16(addr);
        }
    }
}
__device__ __forceinline__ unsigned long long alibi_keys_desc(unsigned s_keys) {
    return wgmma::desc_interleave(s_keys, 128, 256);
}

// A: side * slope's parts in every row, one [8][16] matrix per side, read with a zero stride between row groups
// (wgmma::desc_interleave, SBO 0) so that 128 bytes serve all 64 rows: variant 0 for side +1, 1 for side -1, 2 (and
// the 128 bytes after it) zeros for a tile crossing the diagonal. A variant's k 8-15 are the next variant's k 0-7,
// which meet B's zero columns. (compute-sanitizer takes the operand for 64 rows x 32 bytes from its start: B's 32
// bytes per key row follow the last variant.) 512 bytes per consumer warpgroup (ws_layout::kAlibiSlopeBytes),
// rewritten for each tile's head by one warp (`lane`: 16 bytes each); the caller makes them visible to wgmma
// (fence.proxy.async; the turn's barrier orders the warpgroup).
template <typename T>
__device__ __forceinline__ void write_alibi_slope(unsigned s_slope, float slope, int lane) {
    constexpr bool kBf16 = IsBf16<T>::value;
    const float hi = to_float(from_float<T>(slope));
    const float mid = to_float(from_float<T>(slope - hi));
    const float lo = slope - hi - mid;
    const int variant = lane / 8;
    const unsigned sign = variant == 1 ? 0x80008000u : 0u;
    const unsigned p01 = variant < 2 ? pack2<kBf16>(hi, mid) ^ sign : 0u;
    const unsigned p23 = variant < 2 ? pack2<kBf16>(lo, 0.f) ^ sign : 0u;
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %3};" ::"r"(s_slope + 16u * lane), "r"(p01), "r"(p23), "r"(0u)
                 : "memory");
}
// The A descriptor of a tile: crossing (zeros), else by side.
__device__ __forceinline__ unsigned long long alibi_slope_desc(unsigned s_slope, bool crossing, float side) {
    return wgmma::desc_interleave(s_slope + 128u * (crossing ? 2u : side < 0.f ? 1u : 0u), 128, 0);
}
// One more k step of S (the caller's commit group): acc_s += A B, kInstrN keys per instruction.
template <bool kBf16, int kBlockN, int kInstrN>
__device__ __forceinline__ void issue_alibi_columns(float (&acc_s)[kBlockN / 8][4], unsigned long long slope_desc,
                                                    unsigned long long keys_desc) {
#pragma unroll
    for (int nc = 0; nc < kBlockN / kInstrN; ++nc)
        wgmma::mma_ss_n<kInstrN, kBf16>(acc_s + (kInstrN / 8) * nc, slope_desc,
                                        wgmma::desc_advance(keys_desc, nc * (kInstrN / 8) * 256u), 1);
}

// The row term of a tile off the diagonal: -side * slope * (row + offset - n0) for rows g and g + 8 of the 16-row
// block at row_0.
__device__ __forceinline__ RowBias alibi_row_bias(int row_0, int g, int n0, int offset, float side_slope) {
    RowBias bias;
#pragma unroll
    for (int h = 0; h < 2; ++h) bias.b[h] = -side_slope * static_cast<float>(frag_row(row_0, 2 * h, g) + offset - n0);
    return bias;
}

}  // namespace fa_jit::tile
