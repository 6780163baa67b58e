// Host-side facts about the fp32 kernel family (kernel_sources/attention_fp32.cu), mirrored from its traits.
#pragma once

#include <cstddef>

namespace fa_jit::fp32_kernels {

enum Math : int { kMathSimt = 0, kMath3xTF32 = 1 };

// AttentionFwdFp32Traits::kSmemBytes: Q, K and V tiles with bank-conflict-free row strides.
constexpr std::size_t smem_bytes(int block_m, int block_n, int head_dim) {
    const int pad = (head_dim + 15) / 16 * 16;
    const int qk_stride = pad % 32 == 16 ? pad : pad + 16;
    const int v_stride = pad + 4;
    return 4ull * (static_cast<std::size_t>(block_m) * qk_stride + static_cast<std::size_t>(block_n) * qk_stride +
                   static_cast<std::size_t>(block_n) * v_stride);
}

// The kernel's static_asserts, so that the host never asks NVRTC for a configuration it rejects.
constexpr bool legal(int block_m, int block_n, int warps, int head_dim) {
    return warps >= 1 && warps <= 16 && block_m % (16 * warps) == 0 && block_m > 0 && block_n % 8 == 0 &&
           block_n >= 8 && head_dim >= 1 && head_dim <= 256 && smem_bytes(block_m, block_n, head_dim) <= 227 * 1024;
}

}  // namespace fa_jit::fp32_kernels
