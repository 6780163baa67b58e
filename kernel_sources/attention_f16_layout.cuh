// Shared-memory layout of the fp16/bf16 attention kernel (attention_f16.cu), as constexpr functions that both the
// kernel's traits and the host library (which sizes the launch) evaluate: one formula, no copy to drift.
#pragma once

#include "host_device.cuh"

namespace fa_jit::f16_layout {

// The tensor-core k step is 16, so the math runs over head_dim rounded up to 16 (zero-filled padding).
FA_JIT_HOST_DEVICE constexpr int head_dim_mma(int head_dim) { return (head_dim + 15) / 16 * 16; }

// Shared-memory row length in elements: rounded up to 64 (128 bytes), so that every row is a whole number of
// 8-chunk (8 x 16 bytes) swizzle groups: 16-byte chunk c of row r lives at chunk (c & ~7) | ((c ^ r) & 7).
// ldmatrix reads 8 rows of one logical chunk, which the XOR spreads over 8 distinct 16-byte bank groups.
// Columns in [head_dim_mma, head_dim_smem) are never read or written (only d = 96, 160 waste any).
FA_JIT_HOST_DEVICE constexpr int head_dim_smem(int head_dim) { return (head_dim + 63) / 64 * 64; }

// Q_i [block_m] plus `stages` buffers each holding K_j and V_j [block_n], all 2-byte elements.
FA_JIT_HOST_DEVICE constexpr int smem_bytes(int block_m, int block_n, int head_dim, int stages) {
    return 2 * head_dim_smem(head_dim) * (block_m + 2 * stages * block_n);
}

// The most shared memory any supported GPU gives one block (sm_90: 227 KB).
constexpr int kMaxSmemBytes = 227 * 1024;

// The kernel's static_asserts as one predicate, so the host never asks NVRTC for a configuration it rejects.
FA_JIT_HOST_DEVICE constexpr bool legal(int block_m, int block_n, int warps, int stages, int head_dim) {
    return warps >= 1 && warps <= 16 && block_m > 0 && block_m % (16 * warps) == 0 && block_n >= 16 &&
           block_n % 16 == 0 && stages >= 1 && stages <= 4 && head_dim >= 8 && head_dim <= 256 &&
           head_dim % 8 == 0 && smem_bytes(block_m, block_n, head_dim, stages) <= kMaxSmemBytes;
}

}  // namespace fa_jit::f16_layout
