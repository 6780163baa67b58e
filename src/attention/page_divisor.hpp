// The constants of tile::fast_div (kernel_sources/tile/paged_kv.cuh): n / d for n in [0, 2^31) as
// (umulhi(n, magic) + n) >> shift, with shift = ceil(log2 d) and magic = floor(2^32 (2^shift - d) / d) + 1.
#pragma once

#include <cstdint>

namespace fa_jit {

struct PageDivisor {
    unsigned magic;
    int shift;

    // n / d as the kernels compute it.
    std::uint32_t divide(std::uint32_t n) const {
        const std::uint32_t high = static_cast<std::uint32_t>((std::uint64_t{n} * magic) >> 32);
        return (high + n) >> shift;
    }
};

// d in [1, 2^31).
inline PageDivisor page_divisor(int d) {
    int shift = 0;
    while ((std::int64_t{1} << shift) < d) ++shift;
    const std::uint64_t magic = ((std::uint64_t{1} << 32) * ((std::uint64_t{1} << shift) - d)) / d + 1;
    return {static_cast<std::uint32_t>(magic), shift};
}

}  // namespace fa_jit
