// TMA descriptors (tensor maps) for the Hopper kernels: a 16-bit tensor of rank 1..5 and the box one copy moves,
// checked against the driver's rules here (an InvalidArgument naming the field, before any driver call) and encoded
// by cuTensorMapEncodeTiled. The kernels receive the map as a fa_jit::TensorMap (kernel_sources/tile/tma.cuh).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace fa_jit {

struct TensorMapDesc {
    const void* base = nullptr;             // 16-byte aligned
    int rank = 0;                           // 1..5
    std::uint64_t dims[5] = {};             // elements per dimension, innermost first, each in [1, 2^32]
    std::uint64_t strides_bytes[5] = {};    // strides_bytes[i], i >= 1: bytes between consecutive indices of dim i
    std::uint32_t box[5] = {};              // elements per copy and dimension, each in [1, 256]
    bool swizzle_128b = true;               // the wgmma layout (tile::Swizzle128B): box[0] * 2 <= 128 bytes
};

// The driver's requirements for 16-bit elements: rank 1..5; base 16-byte aligned; dims in [1, 2^32]; strides of
// dimensions 1.. multiples of 16 bytes below 2^40; box extents in [1, 256] with box[0] * 2 a multiple of 16 bytes,
// at most 128 with the 128-byte swizzle. Throws InvalidArgument naming the first field that breaks one.
void check_tensor_map(const TensorMapDesc& desc);

// check_tensor_map(), then the driver's encoding (zero fill outside the tensor, 128-byte L2 promotion). Throws
// CudaError when the driver lacks cuTensorMapEncodeTiled (CUDA 12.0) or refuses the map.
CUtensorMap encode_tensor_map_16bit(const TensorMapDesc& desc);

}  // namespace fa_jit
