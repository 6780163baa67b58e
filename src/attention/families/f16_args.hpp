// What the fp16/bf16 families share: their argument preconditions.
#pragma once

#include "fa_jit/attention.hpp"

namespace fa_jit::families {

// The fp16/bf16 kernels copy rows in 16-byte chunks (cp.async) only, and take each row's max before scaling:
// head_dim a multiple of 8, base pointers 16-byte aligned, strides in whole chunks of 8 elements, scale > 0.
void check_f16_args(const AttentionArgs& args);

}  // namespace fa_jit::families
