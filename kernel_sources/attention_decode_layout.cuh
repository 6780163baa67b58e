// Shape rules of the split-KV decode kernel (attention_decode.cu) as constexpr functions that both the kernel's
// traits and the host library evaluate: one formula for the shared memory, one predicate for a legal tile.
//
// A tile "MxNwWsS-split": M packed query rows (query tokens x the query heads of one KV head), N keys per step of
// the block, W warps each taking N / W of those keys with its own S-deep cp.async ring.
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

FA_JIT_HOST_DEVICE constexpr int q_bytes(int block_m, int head_dim) {
    return 2 * block_m * head_dim_smem(head_dim);
}
// One stage of one warp's ring: K and V for its N / W keys.
FA_JIT_HOST_DEVICE constexpr int stage_bytes(int block_n, int warps, int head_dim) {
    return 2 * 2 * (block_n / warps) * head_dim_smem(head_dim);
}
FA_JIT_HOST_DEVICE constexpr int ring_bytes(int block_n, int warps, int stages, int head_dim) {
    return warps * stages * stage_bytes(block_n, warps, head_dim);
}
// fp32 row stride of the per-warp O the block merges at the end: 4 floats of padding spread the rows over the banks.
FA_JIT_HOST_DEVICE constexpr int merge_row_floats(int head_dim) {
    return head_dim_mma(head_dim) + 4;
}
// The merge reuses the ring: every warp's O [M][row floats], then its row maxima and sums.
FA_JIT_HOST_DEVICE constexpr int merge_bytes(int block_m, int warps, int head_dim) {
    return 4 * warps * block_m * (merge_row_floats(head_dim) + 2);
}
FA_JIT_HOST_DEVICE constexpr int smem_bytes(int block_m, int block_n, int warps, int stages, int head_dim) {
    return q_bytes(block_m, head_dim) +
           (ring_bytes(block_n, warps, stages, head_dim) > merge_bytes(block_m, warps, head_dim)
                ? ring_bytes(block_n, warps, stages, head_dim)
                : merge_bytes(block_m, warps, head_dim));
}

constexpr int kMaxSmemBytes = 227 * 1024;

// Each warp keeps O for all M rows: M x head_dim_mma / 32 fp32 registers per thread, held to 128 (M 64 at d 64,
// 32 at d 128, 16 at d 256). A warp's keys per step are one or two 16-key MMA k-chunks.
FA_JIT_HOST_DEVICE constexpr bool legal(int block_m, int block_n, int warps, int stages, int head_dim) {
    return (warps == 2 || warps == 4 || warps == 8) && (block_m == 16 || block_m == 32 || block_m == 64) &&
           block_n % warps == 0 && (block_n / warps == 16 || block_n / warps == 32) && stages >= 2 && stages <= 4 &&
           head_dim >= 8 && head_dim <= 256 && head_dim % 8 == 0 && block_m * head_dim_mma(head_dim) <= 4096 &&
           smem_bytes(block_m, block_n, warps, stages, head_dim) <= kMaxSmemBytes;
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

}  // namespace fa_jit::decode_layout
