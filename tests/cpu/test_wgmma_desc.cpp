// The kernels' wgmma descriptors (kernel_sources/wgmma_desc.cuh): stepping a base descriptor by a byte offset gives
// the descriptor of the moved address, at every address and offset the kernels' shared memory allows.
#include <catch2/catch.hpp>

#include "wgmma_desc.cuh"

namespace fa_jit::wgmma {
namespace {

TEST_CASE("a wgmma descriptor advanced by an offset describes the moved address", "[wgmma]") {
    // Every 16-byte-aligned shared-memory address below 228 KB (the most a block may use), with the leading / stride
    // byte offsets the kernels pass (K-major: 16 / 1024 or 2048; MN-major: a column block's bytes / 1024), and every
    // offset that keeps the address in the 2^18-byte field.
    constexpr unsigned kSmemBytes = 228 * 1024;
    const unsigned strides[][2] = {{16, 1024}, {16, 2048}, {128 * 128, 1024}, {80 * 128, 1024}, {1024, 2048}};
    long long checked = 0, wrong = 0;
    for (const auto& [lbo, sbo] : strides)
        for (unsigned addr = 0; addr < kSmemBytes; addr += 16 * 31) {  // every 16-byte slot of an atom comes up
            const unsigned long long base = desc_sw128(addr, lbo, sbo);
            for (unsigned bytes = 0; addr + bytes < (1u << 18); bytes += 16 * 7) {
                ++checked;
                if (desc_advance(base, bytes) != desc_sw128(addr + bytes, lbo, sbo)) ++wrong;
            }
        }
    CHECK(checked > 1000000);
    CHECK(wrong == 0);
    // The fields where the PTX ISA puts them: address >> 4 in bits 0-13, LBO >> 4 in 16-29, SBO >> 4 in 32-45,
    // 128-byte swizzle (1) in 62-63.
    CHECK(desc_sw128(0x1230, 16, 1024) == (0x123ull | (1ull << 16) | (64ull << 32) | (1ull << 62)));
    CHECK(desc_advance(desc_sw128(0x3FFF0 - 0x400, 16, 1024), 0x400) == desc_sw128(0x3FFF0, 16, 1024));
    // Without swizzle (0 in bits 62-63): the ALiBi columns' operands, a zero stride byte offset included.
    CHECK(desc_interleave(0x1230, 128, 256) == (0x123ull | (8ull << 16) | (16ull << 32)));
    CHECK(desc_interleave(0x1230, 128, 0) == (0x123ull | (8ull << 16)));
    CHECK(desc_advance(desc_interleave(0x1230, 128, 256), 0x200) == desc_interleave(0x1430, 128, 256));
}

}  // namespace
}  // namespace fa_jit::wgmma
