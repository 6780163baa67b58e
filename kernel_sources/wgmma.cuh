// Hopper warpgroup MMA (wgmma, sm_90a) through inline PTX: shared-memory matrix descriptors, the m64nNk16 shapes the
// attention kernels use, and the fences around them. PTX ISA, "Asynchronous Warpgroup Level
// Matrix Instructions".
#pragma once

#include "wgmma_desc.cuh"

namespace fa_jit::wgmma {

// Orders this thread's register writes (accumulators, A fragments) before the wgmma that reads them.
__device__ __forceinline__ void fence() {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void commit() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
// Waits until at most N committed wgmma groups of this warpgroup are pending.
template <int N>
__device__ __forceinline__ void wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Makes this thread's generic-proxy shared-memory writes (cp.async results) visible to wgmma's async proxy.
__device__ __forceinline__ void fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// Ties registers written by an asynchronous wgmma to the point after wait(): the compiler sees the wgmma's outputs
// as ready when it is issued, so without this it may move their readers above the wait.
template <int N>
__device__ __forceinline__ void hold(float (&d)[N][4]) {
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[i][e])::"memory");
}

#define FA_JIT_WGMMA_D32                                                                               \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
    "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define FA_JIT_WGMMA_D40                                                                               \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
    "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39}"
#define FA_JIT_WGMMA_D48                                                                               \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
    "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, "  \
    "%40, %41, %42, %43, %44, %45, %46, %47}"
#define FA_JIT_WGMMA_D56                                                                               \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
    "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, "  \
    "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55}"
#define FA_JIT_WGMMA_D64                                                                               \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
    "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, "  \
    "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, "  \
    "%59, %60, %61, %62, %63}"
#define FA_JIT_WGMMA_D96                                                                               \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
    "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, "  \
    "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, "  \
    "%59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, "  \
    "%78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}"
#define FA_JIT_WGMMA_D80                                                                               \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
    "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, "  \
    "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, "  \
    "%59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, "  \
    "%78, %79}"
#define FA_JIT_WGMMA_D88                                                                                              \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
    "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
    "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, "  \
    "%68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}"
#define FA_JIT_WGMMA_D112                                                                              \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
    "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, "  \
    "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, "  \
    "%59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, "  \
    "%78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, "  \
    "%97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111}"
#define FA_JIT_WGMMA_D128                                                                                 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, "    \
    "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, "     \
    "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, "     \
    "%59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, "     \
    "%78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, "     \
    "%97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, " \
    "%114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
// Accumulator operands: 2, 4 or 8 n-tiles from d (pointer arithmetic on d reaches the later ones).
#define FA_JIT_WGMMA_TILE(d, i) "+f"(d[i][0]), "+f"(d[i][1]), "+f"(d[i][2]), "+f"(d[i][3])
#define FA_JIT_WGMMA_T2(d) FA_JIT_WGMMA_TILE(d, 0), FA_JIT_WGMMA_TILE(d, 1)
#define FA_JIT_WGMMA_T4(d) FA_JIT_WGMMA_T2(d), FA_JIT_WGMMA_T2((d + 2))
#define FA_JIT_WGMMA_T8(d) FA_JIT_WGMMA_T4(d), FA_JIT_WGMMA_T4((d + 4))
#define FA_JIT_WGMMA_D32_OPERANDS(d) FA_JIT_WGMMA_T8(d)
// One shared-memory x shared-memory wgmma: `shape` (m64nNk16.f32.bf16.bf16 ...), the accumulator string `regs` of
// R registers, then the operand numbers of the A and B descriptors and of the accumulate flag (R, R + 1, R + 2).
#define FA_JIT_WGMMA_SS(shape, regs, ia, ib, ip, ...)                                                     \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" ip                                                  \
                 ", 0;\n"                                                                                 \
                 "wgmma.mma_async.sync.aligned." shape " " regs ", %" ia ", %" ib ", p, 1, 1, 0, 0;\n}\n" \
                 : __VA_ARGS__                                                                            \
                 : "l"(a_desc), "l"(b_desc), "r"(accumulate))
// Both element types of one instruction: `form` is FA_JIT_WGMMA_SS or FA_JIT_WGMMA_RS (in a function with kBf16).
#define FA_JIT_WGMMA_BOTH(form, n, regs, ia, ib, ip, ...)                   \
    if (kBf16)                                                              \
        form("m64n" #n "k16.f32.bf16.bf16", regs, ia, ib, ip, __VA_ARGS__); \
    else                                                                    \
        form("m64n" #n "k16.f32.f16.f16", regs, ia, ib, ip, __VA_ARGS__)

// D[64xN] (+)= A[64x16] B[16xN], both operands K-major in shared memory; accumulate iff `accumulate` != 0.
// D is N / 8 consecutive n-tiles d[0..N/8-1][4] in the mma.sync m16n8 accumulator layout, per warp w of the
// warpgroup: d[i][e] is row 16w + g + 8 (e >> 1), column 8i + 2t + (e & 1) (lane = 4g + t). N = 64, 80, 96, 112, 128,
// 160, 176 or 192: one instruction reads the A operand once for all N columns.
template <int N, bool kBf16>
__device__ __forceinline__ void mma_ss_n(float (*d)[4], unsigned long long a_desc, unsigned long long b_desc,
                                         int accumulate) {
    static_assert(N == 64 || N == 80 || N == 96 || N == 112 || N == 128 || N == 160 || N == 176 || N == 192,
                  "an N with an instruction here");
    if constexpr (N == 64) {
        FA_JIT_WGMMA_BOTH(FA_JIT_WGMMA_SS, 64, FA_JIT_WGMMA_D32, "32", "33", "34", FA_JIT_WGMMA_T8(d));
    } else if constexpr (N == 80) {
        FA_JIT_WGMMA_BOTH(FA_JIT_WGMMA_SS, 80, FA_JIT_WGMMA_D40, "40", "41", "42", FA_JIT_WGMMA_T8(d),
                          FA_JIT_WGMMA_T2((d + 8)));
    } else if constexpr (N == 96) {
        FA_JIT_WGMMA_BOTH(FA_JIT_WGMMA_SS, 96, FA_JIT_WGMMA_D48, "48", "49", "50", FA_JIT_WGMMA_T8(d),
                          FA_JIT_WGMMA_T4((d + 8)));
    } else if constexpr (N == 112) {
        FA_JIT_WGMMA_BOTH(FA_JIT_WGMMA_SS, 112, FA_JIT_WGMMA_D56, "56", "57", "58", FA_JIT_WGMMA_T8(d),
                          FA_JIT_WGMMA_T4((d + 8)), FA_JIT_WGMMA_T2((d + 12)));
    } else if constexpr (N == 128) {
        FA_JIT_WGMMA_BOTH(FA_JIT_WGMMA_SS, 128, FA_JIT_WGMMA_D64, "64", "65", "66", FA_JIT_WGMMA_T8(d),
                          FA_JIT_WGMMA_T8((d + 8)));
    } else if constexpr (N == 160) {
        FA_JIT_WGMMA_BOTH(FA_JIT_WGMMA_SS, 160, FA_JIT_WGMMA_D80, "80", "81", "82", FA_JIT_WGMMA_T8(d),
                          FA_JIT_WGMMA_T8((d + 8)), FA_JIT_WGMMA_T4((d + 16)));
    } else if constexpr (N == 176) {
        FA_JIT_WGMMA_BOTH(FA_JIT_WGMMA_SS, 176, FA_JIT_WGMMA_D88, "88", "89", "90", FA_JIT_WGMMA_T8(d),
                          FA_JIT_WGMMA_T8((d + 8)), FA_JIT_WGMMA_T4((d + 16)), FA_JIT_WGMMA_T2((d + 20)));
    } else {
        FA_JIT_WGMMA_BOTH(FA_JIT_WGMMA_SS, 192, FA_JIT_WGMMA_D96, "96", "97", "98", FA_JIT_WGMMA_T8(d),
                          FA_JIT_WGMMA_T8((d + 8)), FA_JIT_WGMMA_T8((d + 16)));
    }
}
// N = 64 (the m64n64k16 of the wgmma kernels).
template <bool kBf16>
__device__ __forceinline__ void mma_ss(float (*d)[4], unsigned long long a_desc, unsigned long long b_desc,
                                       int accumulate) {
    mma_ss_n<64, kBf16>(d, a_desc, b_desc, accumulate);
}

// D[64x64] (+)= A[64x16] B[16x64], A from registers (the mma.sync m16n8k16 A fragment of each warp's 16 rows), B
// MN-major in shared memory (imm-trans-b = 1).
template <bool kBf16>
__device__ __forceinline__ void mma_rs_bt(float (*d)[4], const unsigned (&a)[4], unsigned long long b_desc,
                                          int accumulate) {
    if (kBf16)
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " FA_JIT_WGMMA_D32
            ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
            : FA_JIT_WGMMA_D32_OPERANDS(d)
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate));
    else
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " FA_JIT_WGMMA_D32
            ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
            : FA_JIT_WGMMA_D32_OPERANDS(d)
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate));
}

// D[64 x N] (+)= A[64x16] B[16 x N] as mma_rs_bt, in one instruction over kBlocks = 2, 3 or 4 column blocks of D
// (d[b]: columns 64b..64b+63) and of B (the descriptor's leading byte offset steps from one 64-column block of B to
// the next): the A fragment goes to the tensor core once for all of them. N = 64 kBlocks, or 32 less for a head dim
// that leaves the last block's upper half empty (96, 160, 224: that half's n-tiles 4..7 are not written). In the
// macros, `ia` lists the operand numbers of the four A registers (R to R + 3 after the R accumulators), `ib` the
// descriptor's and `ip` the accumulate flag's.
#define FA_JIT_WGMMA_RS(shape, regs, ia, ib, ip, ...)                                                    \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" ip                                                 \
                 ", 0;\n"                                                                                \
                 "wgmma.mma_async.sync.aligned." shape " " regs ", {%" ia "}, %" ib ", p, 1, 1, 1;\n}\n" \
                 : __VA_ARGS__                                                                           \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate))
template <bool kBf16, int kBlocks, int N = 64 * kBlocks>
__device__ __forceinline__ void mma_rs_bt_blocks(float (&d)[kBlocks][8][4], const unsigned (&a)[4],
                                                 unsigned long long b_desc, int accumulate) {
    static_assert(kBlocks >= 2 && kBlocks <= 4, "2 to 4 column blocks (128 to 256 columns)");
    static_assert(N == 64 * kBlocks || N == 64 * kBlocks - 32, "whole column blocks, or the last one's lower half");
    if constexpr (N == 96) {
        FA_JIT_WGMMA_BOTH(FA_JIT_WGMMA_RS, 96, FA_JIT_WGMMA_D48, "48, %49, %50, %51", "52", "53", FA_JIT_WGMMA_T8(d[0]),
                          FA_JIT_WGMMA_T4(d[1]));
    } else if constexpr (N == 160) {
        FA_JIT_WGMMA_BOTH(FA_JIT_WGMMA_RS, 160, FA_JIT_WGMMA_D80, "80, %81, %82, %83", "84", "85",
                          FA_JIT_WGMMA_T8(d[0]), FA_JIT_WGMMA_T8(d[1]), FA_JIT_WGMMA_T4(d[2]));
    } else if constexpr (N == 224) {
        FA_JIT_WGMMA_BOTH(FA_JIT_WGMMA_RS, 224, FA_JIT_WGMMA_D112, "112, %113, %114, %115", "116", "117",
                          FA_JIT_WGMMA_T8(d[0]), FA_JIT_WGMMA_T8(d[1]), FA_JIT_WGMMA_T8(d[2]), FA_JIT_WGMMA_T4(d[3]));
    } else if constexpr (kBlocks == 2) {
        FA_JIT_WGMMA_BOTH(FA_JIT_WGMMA_RS, 128, FA_JIT_WGMMA_D64, "64, %65, %66, %67", "68", "69",
                          FA_JIT_WGMMA_T8(d[0]), FA_JIT_WGMMA_T8(d[1]));
    } else if constexpr (kBlocks == 3) {
        FA_JIT_WGMMA_BOTH(FA_JIT_WGMMA_RS, 192, FA_JIT_WGMMA_D96, "96, %97, %98, %99", "100", "101",
                          FA_JIT_WGMMA_T8(d[0]), FA_JIT_WGMMA_T8(d[1]), FA_JIT_WGMMA_T8(d[2]));
    } else {
        FA_JIT_WGMMA_BOTH(FA_JIT_WGMMA_RS, 256, FA_JIT_WGMMA_D128, "128, %129, %130, %131", "132", "133",
                          FA_JIT_WGMMA_T8(d[0]), FA_JIT_WGMMA_T8(d[1]), FA_JIT_WGMMA_T8(d[2]), FA_JIT_WGMMA_T8(d[3]));
    }
}

#undef FA_JIT_WGMMA_RS
#undef FA_JIT_WGMMA_D128
#undef FA_JIT_WGMMA_D112
#undef FA_JIT_WGMMA_D80
#undef FA_JIT_WGMMA_BOTH
#undef FA_JIT_WGMMA_SS
#undef FA_JIT_WGMMA_D32_OPERANDS
#undef FA_JIT_WGMMA_T8
#undef FA_JIT_WGMMA_T4
#undef FA_JIT_WGMMA_T2
#undef FA_JIT_WGMMA_TILE
#undef FA_JIT_WGMMA_D96
#undef FA_JIT_WGMMA_D64
#undef FA_JIT_WGMMA_D56
#undef FA_JIT_WGMMA_D48
#undef FA_JIT_WGMMA_D40
#undef FA_JIT_WGMMA_D32

}  // namespace fa_jit::wgmma
