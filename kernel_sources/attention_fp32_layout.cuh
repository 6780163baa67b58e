// Shared-memory layout of the fp32 attention kernels, as constexpr functions that both the kernel's traits and
// the host library (which sizes the launch) evaluate: one formula, no copy to drift.
#pragma once

#include "host_device.cuh"

namespace fa_jit::fp32_layout {

// Q and K are read 16 columns (4 float4) at a time, so the on-chip head dim is rounded up to 16; padding is 0.
FA_JIT_HOST_DEVICE constexpr int head_dim_pad(int head_dim) { return (head_dim + 15) / 16 * 16; }

// Shared-memory row strides in floats, chosen so that fragment loads hit 32 distinct banks:
//  - Q, K are read as float4 at (row g, column 4t): a quarter-warp (8 lanes, g in {0,1}) must cover all 32 banks,
//    so the row stride must be 16 (mod 32).
//  - V is read as scalars at (row 2t + c, column g): 8 * (stride / 4) * t + g must be distinct (mod 32) over
//    t in 0..3, g in 0..7, so stride / 4 must be odd.
FA_JIT_HOST_DEVICE constexpr int qk_stride(int head_dim) {
    return head_dim_pad(head_dim) % 32 == 16 ? head_dim_pad(head_dim) : head_dim_pad(head_dim) + 16;
}
FA_JIT_HOST_DEVICE constexpr int v_stride(int head_dim) { return head_dim_pad(head_dim) + 4; }

// One buffer each for Q_i, K_j, V_j: the load of V_j overlaps S = Q K_j^T and the load of K_{j-1} overlaps P V_j.
FA_JIT_HOST_DEVICE constexpr int smem_bytes(int block_m, int block_n, int head_dim) {
    return 4 * ((block_m + block_n) * qk_stride(head_dim) + block_n * v_stride(head_dim));
}

// The most shared memory any supported GPU gives one block (sm_90: 227 KB).
constexpr int kMaxSmemBytes = 227 * 1024;

// The kernel's static_asserts as one predicate, so the host never asks NVRTC for a configuration it rejects.
FA_JIT_HOST_DEVICE constexpr bool legal(int block_m, int block_n, int warps, int head_dim) {
    return warps >= 1 && warps <= 16 && block_m > 0 && block_m % (16 * warps) == 0 && block_n >= 8 &&
           block_n % 8 == 0 && head_dim >= 1 && head_dim <= 256 && smem_bytes(block_m, block_n, head_dim) <= kMaxSmemBytes;
}

}  // namespace fa_jit::fp32_layout
