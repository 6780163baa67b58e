// Host-side conversions between float and the kernels' element types, so the tools and tests need no CUDA headers
// at run time. float -> fp16/bf16 rounds to nearest, ties to even (what __float2half_rn / __float2bfloat16_rn do).
#pragma once

#include "fa_jit/attention.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace fa_jit::tools {

std::uint16_t float_to_half(float value);
float half_to_float(std::uint16_t bits);
std::uint16_t float_to_bfloat16(float value);
float bfloat16_to_float(std::uint16_t bits);

// `values` encoded as `dtype` (element_size(dtype) bytes each, native byte order), and back.
std::string encode(const std::vector<float>& values, DType dtype);
std::vector<float> decode(const std::string& bytes, DType dtype);

}  // namespace fa_jit::tools
