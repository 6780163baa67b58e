// What the fp16/bf16 families share: their argument preconditions and the kernels' element-type names.
#pragma once

#include "fa_jit/attention.hpp"

namespace fa_jit::families {

// The fp16/bf16 kernels copy rows in 16-byte chunks (cp.async) only, and take each row's max before scaling:
// head_dim a multiple of 8, base pointers 16-byte aligned, strides in whole chunks of 8 elements, scale > 0.
void check_f16_args(const AttentionArgs& args);

// "fa_jit::half_t" or "fa_jit::bf16_t": the kernels' T.
const char* f16_element_type(DType dtype);

}  // namespace fa_jit::families
