// Shared-memory layout and legal tiles of the Hopper fp16/bf16 attention kernel (attention_f16_wgmma.cu), as
// constexpr functions that both the kernel and the host library evaluate.
#pragma once

#include "host_device.cuh"

namespace fa_jit::wgmma_layout {

// Every tile (Q, and K and V per stage) is stored as head_dim / 64 column blocks of [rows][64] elements: 128-byte
// rows, 16-byte chunk c of row r at chunk c ^ (r & 7) (wgmma's 128-byte swizzle, 1024-byte atoms). The kernel
// rounds the dynamic shared base up to 1024 bytes, hence the extra 1 KB.
FA_JIT_HOST_DEVICE constexpr int smem_bytes(int block_m, int block_n, int head_dim, int stages) {
    return 2 * head_dim * (block_m + 2 * stages * block_n) + 1024;
}

constexpr int kMaxSmemBytes = 227 * 1024;  // sm_90

// One warpgroup (4 warps) per 64 query rows; S in 64-key chunks; P V in 64-column chunks of d; a K/V ring of 2..4.
FA_JIT_HOST_DEVICE constexpr bool legal(int block_m, int block_n, int warps, int stages, int head_dim) {
    return block_m >= 64 && block_m <= 256 && block_m % 64 == 0 && warps == block_m / 16 && block_n >= 64 &&
           block_n <= 128 && block_n % 64 == 0 && stages >= 2 && stages <= 4 && head_dim >= 64 && head_dim <= 256 &&
           head_dim % 64 == 0 && smem_bytes(block_m, block_n, head_dim, stages) <= kMaxSmemBytes;
}

}  // namespace fa_jit::wgmma_layout
