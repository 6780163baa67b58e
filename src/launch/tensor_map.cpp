#include "launch/tensor_map.hpp"

#include <fmt/format.h>

#include "driver/driver_api.hpp"
#include "fa_jit/errors.hpp"

namespace fa_jit {
namespace {

constexpr std::uint64_t kMaxDim = std::uint64_t{1} << 32;
constexpr std::uint64_t kMaxStride = std::uint64_t{1} << 40;
constexpr std::uint32_t kElementBytes = 2;

}  // namespace

void check_tensor_map(const TensorMapDesc& d) {
    if (d.rank < 1 || d.rank > 5) throw InvalidArgument("rank", "1..5", std::to_string(d.rank));
    if (reinterpret_cast<std::uintptr_t>(d.base) % 16 != 0)
        throw InvalidArgument("base", "a 16-byte aligned device address", fmt::format("{}", d.base));
    for (int i = 0; i < d.rank; ++i) {
        if (d.dims[i] < 1 || d.dims[i] > kMaxDim)
            throw InvalidArgument(fmt::format("dims[{}]", i), "in [1, 2^32]", std::to_string(d.dims[i]));
        if (d.box[i] < 1 || d.box[i] > 256)
            throw InvalidArgument(fmt::format("box[{}]", i), "in [1, 256]", std::to_string(d.box[i]));
        if (i >= 1 && (d.strides_bytes[i] % 16 != 0 || d.strides_bytes[i] == 0 || d.strides_bytes[i] >= kMaxStride))
            throw InvalidArgument(fmt::format("strides_bytes[{}]", i), "a positive multiple of 16 below 2^40",
                                  std::to_string(d.strides_bytes[i]));
    }
    const std::uint64_t inner_bytes = std::uint64_t{d.box[0]} * kElementBytes;
    if (inner_bytes % 16 != 0)
        throw InvalidArgument("box[0]", "a multiple of 8 elements (16 bytes)", std::to_string(d.box[0]));
    if (d.swizzle_128b && inner_bytes > 128)
        throw InvalidArgument("box[0]", "at most 64 elements (128 bytes) with the 128-byte swizzle",
                              std::to_string(d.box[0]));
}

CUtensorMap encode_tensor_map_16bit(const TensorMapDesc& d) {
    check_tensor_map(d);
    const driver::Api& api = driver::api();
    if (!api.cuTensorMapEncodeTiled)
        driver::throw_error("cuTensorMapEncodeTiled", CUDA_ERROR_NOT_SUPPORTED, __FILE__, __LINE__);
    cuuint64_t dims[5], strides[4];
    cuuint32_t box[5], element_strides[5];
    for (int i = 0; i < d.rank; ++i) {
        dims[i] = d.dims[i];
        box[i] = d.box[i];
        element_strides[i] = 1;
        if (i >= 1) strides[i - 1] = d.strides_bytes[i];
    }
    CUtensorMap map;
    FA_JIT_CU(cuTensorMapEncodeTiled, &map, CU_TENSOR_MAP_DATA_TYPE_UINT16, static_cast<cuuint32_t>(d.rank),
              const_cast<void*>(d.base), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
              d.swizzle_128b ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
              CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return map;
}

}  // namespace fa_jit
