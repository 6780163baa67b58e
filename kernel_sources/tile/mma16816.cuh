// The mma.sync m16n8k16 primitives of the 16-bit kernels: ldmatrix (plain and transposed) and the MMA itself.
//
// Fragment layout as in tile/mask.cuh. A operand (row-major 16 x 16): ldmatrix.x4 of the matrices (rows 0-7, k 0-7),
// (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15) gives a0..a3. B from a [n][k] row-major tile (K): the
// plain ldmatrix; from a [k][n] row-major tile (V): the transposed one.
#pragma once

namespace fa_jit::tile {

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// D[16x8] += A[16x16] (row) * B[16x8] (col), 16-bit inputs, fp32 accumulate.
template <bool kBf16>
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    if (kBf16)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Byte offset of logical chunk 2 * cpair + (the lane's chunk bit) in a tile::SwizzleRows64 row whose (row & 7) the
// lane already folded into lane_x = chunk_bit ^ (row & 7): the XOR with a compile-time constant keeps per-lane
// address registers few.
__device__ __forceinline__ unsigned swz_pair(unsigned lane_x, int cpair) {
    return ((lane_x ^ ((2 * cpair) & 6)) | ((2 * cpair) & ~7)) * 16u;
}

}  // namespace fa_jit::tile
