// Shape rules of the split-KV decode kernel (attention_decode.cu) as constexpr functions that both the kernel's
// traits and the host library evaluate: one formula for the shared memory, one predicate for a legal tile.
//
// A tile "MxNwWsS-split": M packed query rows (query tokens x the query heads of one KV head), N keys per step of
// the block, W warps, S-deep cp.async rings. The warps form a grid of row warps x key warps:
//   - a row warp keeps O for 16 rows in registers; M / 16 row warps cover the tile;
//   - the key warps split the N keys of a step; each column of row warps (one key warp) shares one ring, which its
//     warps fill together; with row warps the block synchronises every step (a single row warp: __syncwarp only).
#pragma once

#include "host_device.cuh"

namespace fa_jit::decode_layout {

FA_JIT_HOST_DEVICE constexpr int head_dim_mma(int head_dim) {
    return (head_dim + 15) / 16 * 16;
}
// Shared rows are whole 128-byte swizzle groups (tile::SwizzleRows64).
FA_JIT_HOST_DEVICE constexpr int head_dim_smem(int head_dim) {
    return (head_dim + 63) / 64 * 64;
}

// Rows one warp holds: one 16-row m-tile (O: head_dim_mma / 2 fp32 registers per thread, 128 at d 256). Measured
// on sm_80 / sm_90a: two m-tiles per warp (32 rows at d 128) reach 255 registers and spill, and their Q cannot stay
// in registers.
FA_JIT_HOST_DEVICE constexpr int warp_rows(int, int) {
    return 16;
}
FA_JIT_HOST_DEVICE constexpr int row_warps(int block_m, int head_dim) {
    return block_m / warp_rows(block_m, head_dim);
}
FA_JIT_HOST_DEVICE constexpr int key_warps(int block_m, int warps, int head_dim) {
    return warps / row_warps(block_m, head_dim);
}
FA_JIT_HOST_DEVICE constexpr int warp_keys(int block_m, int block_n, int warps, int head_dim) {
    return block_n / key_warps(block_m, warps, head_dim);
}

FA_JIT_HOST_DEVICE constexpr int q_bytes(int block_m, int head_dim) {
    return 2 * block_m * head_dim_smem(head_dim);
}
// One stage of one key warp's ring: K and V for its keys of a step.
FA_JIT_HOST_DEVICE constexpr int stage_bytes(int block_m, int block_n, int warps, int head_dim) {
    return 2 * 2 * warp_keys(block_m, block_n, warps, head_dim) * head_dim_smem(head_dim);
}
FA_JIT_HOST_DEVICE constexpr int ring_bytes(int block_m, int block_n, int warps, int stages, int head_dim) {
    return key_warps(block_m, warps, head_dim) * stages * stage_bytes(block_m, block_n, warps, head_dim);
}
// fp32 row stride of the per-key-warp O the block merges at the end: 4 floats of padding spread rows over the banks.
FA_JIT_HOST_DEVICE constexpr int merge_row_floats(int head_dim) {
    return head_dim_mma(head_dim) + 4;
}
// The merge reuses the ring: each key warp's O [M][row floats], then its row maxima and sums.
FA_JIT_HOST_DEVICE constexpr int merge_bytes(int block_m, int warps, int head_dim) {
    return 4 * key_warps(block_m, warps, head_dim) * block_m * (merge_row_floats(head_dim) + 2);
}
FA_JIT_HOST_DEVICE constexpr int smem_bytes(int block_m, int block_n, int warps, int stages, int head_dim) {
    return q_bytes(block_m, head_dim) +
           (ring_bytes(block_m, block_n, warps, stages, head_dim) > merge_bytes(block_m, warps, head_dim)
                ? ring_bytes(block_m, block_n, warps, stages, head_dim)
                : merge_bytes(block_m, warps, head_dim));
}

constexpr int kMaxSmemBytes = 227 * 1024;

FA_JIT_HOST_DEVICE constexpr bool legal(int block_m, int block_n, int warps, int stages, int head_dim) {
    if (!(block_m == 16 || block_m == 32 || block_m == 64 || block_m == 128)) return false;
    if (!(warps == 2 || warps == 4 || warps == 8 || warps == 16)) return false;
    if (!(head_dim >= 8 && head_dim <= 256 && head_dim % 8 == 0 && stages >= 2 && stages <= 4)) return false;
    const int rw = row_warps(block_m, head_dim);
    if (warps % rw != 0 || block_n % (warps / rw) != 0) return false;
    const int wk = warp_keys(block_m, block_n, warps, head_dim);
    return (wk == 16 || wk == 32) && smem_bytes(block_m, block_n, warps, stages, head_dim) <= kMaxSmemBytes;
}

// Workspace of a split launch: the partial LSEs, then (256-byte aligned) the partial O, all fp32.
FA_JIT_HOST_DEVICE constexpr unsigned long long partial_lse_bytes(long long rows, int splits) {
    return (static_cast<unsigned long long>(rows) * splits * 4 + 255) / 256 * 256;
}
FA_JIT_HOST_DEVICE constexpr unsigned long long workspace_bytes(long long rows, int splits, int head_dim) {
    return splits <= 1
               ? 0
               : partial_lse_bytes(rows, splits) + static_cast<unsigned long long>(rows) * splits * head_dim * 4;
}

// The combine kernel (attention_split_combine.cuh): kCombineWarps warps per block, and the warps that share one
// output row's splits: about 8 splits per warp, so that a warp's loads of its splits overlap (a power of two: a block
// holds whole rows).
constexpr int kCombineWarps = 8;
FA_JIT_HOST_DEVICE constexpr int combine_warps_per_row(int splits) {
    return splits <= 8 ? 1 : splits <= 16 ? 2 : splits <= 32 ? 4 : 8;
}

}  // namespace fa_jit::decode_layout
