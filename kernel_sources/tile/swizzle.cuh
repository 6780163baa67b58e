// Shared-memory tile layouts of the 16-bit kernels: where 16-byte chunk `chunk` of row `row` lives, in bytes from the
// tile's base. A chunk is 8 fp16 / bf16 elements; the loaders (tile/copy.cuh) and the epilogue (tile/epilogue.cuh)
// take a layout as a template parameter, the MMA code reads through the same formula.
#pragma once

namespace fa_jit::tile {

// mma.sync layout (attention_f16.cu): tile[rows][kRowElems], kRowElems a multiple of 64 so that a row is whole
// groups of 8 chunks (128 bytes); chunk c of row r is stored at (c & ~7) | ((c ^ r) & 7). ldmatrix reads one logical
// chunk from 8 consecutive rows; the XOR with (row & 7) puts those 8 x 16 bytes in 8 distinct bank groups.
template <int kRowElems>
struct SwizzleRows64 {
    static_assert(kRowElems % 64 == 0 && kRowElems > 0, "rows must be whole 128-byte swizzle groups (64 elements)");
    static constexpr int kRowBytes = kRowElems * 2;
    __device__ __forceinline__ static unsigned offset(int row, int chunk) {
        return static_cast<unsigned>(row * kRowBytes + (((chunk & 7) ^ (row & 7)) | (chunk & ~7)) * 16);
    }
};

// wgmma layout (attention_f16_wgmma.cu): a tile of kRows rows is stored as column blocks of [kRows][64] elements,
// each row 128 bytes with chunk c at c ^ (row & 7): wgmma's 128-byte swizzle, whose 8-row x 128-byte atoms must
// start on 1024-byte boundaries (the kernel aligns its shared base; kRows multiple of 8 keeps the blocks aligned).
// The MMA code addresses atom (column block b, 8-row group g) at b * kBlockStride + g * kGroupStride.
template <int kRows>
struct Swizzle128B {
    static_assert(kRows % 8 == 0 && kRows > 0, "column blocks must be whole 1024-byte swizzle atoms (8 rows)");
    static constexpr unsigned kBlockBytes = kRows * 128u;  // one [kRows][64] column block
    static constexpr unsigned kBlockStride = kBlockBytes, kGroupStride = 1024u;
    __device__ __forceinline__ static unsigned offset(int row, int chunk) {
        return static_cast<unsigned>((chunk / 8) * (kRows * 128) + row * 128 + (((chunk % 8) ^ (row % 8)) * 16));
    }
};

// The same atoms ordered row group first, [kRows / 8][kBlocks][8][64]: the kBlocks column blocks of 8 rows lie
// together, so one TMA box brings every column of a run of rows (the paged K / V tiles of attention_f16_ws.cu).
template <int kRows, int kBlocks>
struct Swizzle128BRowGroups {
    static_assert(kRows % 8 == 0 && kRows > 0 && kBlocks > 0, "whole 1024-byte swizzle atoms (8 rows)");
    static constexpr unsigned kBlockStride = 1024u, kGroupStride = kBlocks * 1024u;
    __device__ __forceinline__ static unsigned offset(int row, int chunk) {
        return static_cast<unsigned>((row / 8) * kGroupStride + (chunk / 8) * kBlockStride + (row % 8) * 128 +
                                     (((chunk % 8) ^ (row % 8)) * 16));
    }
};

// Swizzle128BRowGroups<kRows, kBlocks> if kRowGroups, else Swizzle128B<kRows>.
template <bool kRowGroups, int kRows, int kBlocks>
struct Swizzle128BOrder {
    using type = Swizzle128B<kRows>;
};
template <int kRows, int kBlocks>
struct Swizzle128BOrder<true, kRows, kBlocks> {
    using type = Swizzle128BRowGroups<kRows, kBlocks>;
};

}  // namespace fa_jit::tile
