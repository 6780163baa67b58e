// The 128-byte opaque TMA descriptor, as the driver's CUtensorMap: kernels include no CUDA header, and the host
// library fills it with cuTensorMapEncodeTiled (src/launch/tensor_map.hpp). Built-in types only, for both sides.
#pragma once

namespace fa_jit {

struct alignas(64) TensorMap {
    unsigned long long opaque[16];
};

}  // namespace fa_jit
