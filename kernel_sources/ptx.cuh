// Small PTX wrappers shared by the attention kernels (NVRTC: no CUDA toolkit headers).
#pragma once

namespace fa_jit::ptx {

__device__ __forceinline__ float exp2_approx(float x) {  // 2^x, ex2.approx: <= 2 ulp; ex2(-inf) = 0
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
// tanh(x), tanh.approx.f32: one MUFU op, max relative error 2^-11. Softcap runs it on every score next to the
// softmax's ex2, and the softmax's instruction count is what the ping-pong hides behind the other warpgroup's GEMMs:
// an exact form (ex2, then a reciprocal by three Newton steps on the FMA pipe: 13 instructions) ran softcap at
// 0.62-0.66 of plain attention's rate per pair, ex2 + rcp.approx at 0.62-0.69, this at 0.71-0.78 (H200, bf16 / fp16,
// d 128, N 16k), with the same error against float64 (bench/NOTES.md, "Score modifiers").
__device__ __forceinline__ float tanh_approx(float x) {
    float y;
    asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ float log2_approx(float x) {
    float y;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ unsigned smem_address(const void* p) {
    unsigned long long a;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
    return static_cast<unsigned>(a);
}

// Asynchronous global -> shared copies; src_bytes = 0 writes zeros (used for out-of-bounds rows and padding).
__device__ __forceinline__ void cp_async_16(unsigned dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_4(unsigned dst, const void* src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;");
}
// Waits until at most N committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
    cp_async_wait<0>();
}

// Reductions over the 4 lanes of a quad (lanes 4g .. 4g + 3), which together hold one row of an mma accumulator.
__device__ __forceinline__ float quad_max(float x) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Plain 4- and 16-byte shared / global accesses (inline PTX: no toolkit vector types under NVRTC).
__device__ __forceinline__ void st_shared_b32(unsigned addr, unsigned v) {
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void st_shared_zero16(unsigned addr) {
    asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};" ::"r"(addr), "r"(0u) : "memory");
}
__device__ __forceinline__ int ld_shared_s32(unsigned addr) {
    int v;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
    return v;
}
__device__ __forceinline__ void ld_shared_v4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}
__device__ __forceinline__ void st_global_v4(void* ptr, const unsigned (&r)[4]) {
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(ptr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
}

__device__ __forceinline__ void st_global_v2(void* ptr, unsigned a, unsigned b) {
    asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(ptr), "r"(a), "r"(b) : "memory");
}
__device__ __forceinline__ void ld_global_v4(unsigned (&r)[4], const void* ptr) {
    asm volatile("ld.global.v4.b32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "l"(ptr)
                 : "memory");
}

// Programmatic dependent launch (sm_90 and newer; no-ops below). launch_dependents: this block no longer holds back
// the kernel launched after this one as a programmatic dependent (it is scheduled once every block of this grid has
// said so or exited). grid_dependency_wait: waits until the grids this one depends on have completed and their
// writes are visible; returns at once for a kernel launched normally (stream order already holds).
__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Reductions over a warp.
__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
    for (int d = 16; d >= 1; d /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, d));
    return x;
}
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
    for (int d = 16; d >= 1; d /= 2) x += __shfl_xor_sync(0xffffffffu, x, d);
    return x;
}

}  // namespace fa_jit::ptx
