// Shared-memory matrix descriptors of Hopper's warpgroup MMA (PTX ISA, "Matrix Descriptor Format"), for the kernels
// (wgmma.cuh) and the host's tests alike.
#pragma once

#include "host_device.cuh"

namespace fa_jit::wgmma {

// Descriptor of a 128-byte-swizzled operand in shared memory: start address, leading and stride byte offsets (all
// >> 4, 14 bits each), swizzle mode 1 in bits 62-63. Base offset 0: every swizzle atom (8 rows x 128 bytes) starts on
// a 1024-byte boundary, which the kernels guarantee.
//   K-major (Q, K): rows of 64 elements, 128 bytes; SBO = 1024 (8 rows to the next 8), LBO unused (16).
//   MN-major (V as B of P V): LBO = bytes from one 64-column block to the next, SBO = 1024 (8 k rows to the next 8).
FA_JIT_HOST_DEVICE constexpr unsigned long long desc_sw128(unsigned addr, unsigned lbo_bytes, unsigned sbo_bytes) {
    return static_cast<unsigned long long>((addr & 0x3FFFFu) >> 4) |
           (static_cast<unsigned long long>((lbo_bytes & 0x3FFFFu) >> 4) << 16) |
           (static_cast<unsigned long long>((sbo_bytes & 0x3FFFFu) >> 4) << 32) | (1ull << 62);
}

// Descriptor of an operand without swizzle: core matrices of 8 rows x 16 bytes, each stored contiguously (row r at
// 16 r); K-major, the leading byte offset steps from one core matrix to the next along K, the stride byte offset
// from one 8-row group to the next. For small constant operands whose layout need not match TMA's (the ALiBi
// columns, tile/alibi_columns.cuh).
FA_JIT_HOST_DEVICE constexpr unsigned long long desc_interleave(unsigned addr, unsigned lbo_bytes, unsigned sbo_bytes) {
    return static_cast<unsigned long long>((addr & 0x3FFFFu) >> 4) |
           (static_cast<unsigned long long>((lbo_bytes & 0x3FFFFu) >> 4) << 16) |
           (static_cast<unsigned long long>((sbo_bytes & 0x3FFFFu) >> 4) << 32);
}

// `desc` with its start address `bytes` further (a multiple of 16): one add to the low word, equal to desc_sw128 of
// the moved address while that stays below 2^18 bytes, as every shared-memory address does (the address field, bits
// 0-13, then cannot carry into the leading byte offset). Unrolled GEMMs step from one base descriptor this way: ptxas
// then adds a constant per wgmma instead of masking and shifting each address anew.
FA_JIT_HOST_DEVICE constexpr unsigned long long desc_advance(unsigned long long desc, unsigned bytes) {
    return (desc & 0xFFFFFFFF00000000ull) | static_cast<unsigned>(static_cast<unsigned>(desc) + (bytes >> 4));
}

}  // namespace fa_jit::wgmma
