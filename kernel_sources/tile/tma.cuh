// Tensor memory accelerator (TMA, sm_90) copies: a whole box of a global tensor into shared memory by one thread,
// described by a tensor map the host encodes (src/launch/tensor_map.hpp), completing on an mbarrier
// (tile/mbarrier.cuh). PTX ISA, "cp.async.bulk.tensor".
//
// With the map's 128-byte swizzle a box whose inner dimension is 64 fp16 / bf16 elements lands exactly in the wgmma
// layout the kernels use (tile::Swizzle128B: rows of 128 bytes, 16-byte chunk c of row r at c ^ (r & 7)), provided
// the destination is 1024-byte aligned. Elements of the box outside the tensor are written as zeros.
#pragma once

#include "tensor_map.cuh"
#include "wgmma.cuh"

namespace fa_jit::tile::tma {

// A map must live in a __grid_constant__ kernel parameter (or global memory): its address is then a valid generic
// address for the copy.
__device__ __forceinline__ unsigned long long map_address(const TensorMap& map) {
    return reinterpret_cast<unsigned long long>(&map);
}

// Fetches the map into the TMA unit's cache ahead of the first copy.
__device__ __forceinline__ void prefetch_map(const TensorMap& map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(map_address(map)) : "memory");
}

// The box at coordinates (c0 innermost, c1, ...) into shared memory at `dst`; `bytes` of the box complete on the
// barrier `bar` (whose phase the caller announced with mbarrier::arrive_expect_tx).
__device__ __forceinline__ void load_2d(unsigned dst, const TensorMap& map, int c0, int c1, unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
        ::"r"(dst), "l"(map_address(map)), "r"(c0), "r"(c1), "r"(bar)
        : "memory");
}
__device__ __forceinline__ void load_3d(unsigned dst, const TensorMap& map, int c0, int c1, int c2, unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
        "[%5];" ::"r"(dst),
        "l"(map_address(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
        : "memory");
}
__device__ __forceinline__ void load_4d(unsigned dst, const TensorMap& map, int c0, int c1, int c2, int c3,
                                        unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, "
        "%5}], [%6];" ::"r"(dst),
        "l"(map_address(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
        : "memory");
}

__device__ __forceinline__ void load_5d(unsigned dst, const TensorMap& map, int c0, int c1, int c2, int c3, int c4,
                                        unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, "
        "%5, %6}], [%7];" ::"r"(dst),
        "l"(map_address(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar)
        : "memory");
}

// Shared memory -> the box at (c0, c1, ...) of the global tensor; elements outside the tensor are not written.
// The threads' shared-memory writes must be made visible to the TMA unit first (fence_proxy_async() and a barrier);
// commit() closes the group of stores, wait_read<0>() waits until their shared memory may be reused.
__device__ __forceinline__ void store_2d(const TensorMap& map, int c0, int c1, unsigned src) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                     map_address(map)),
                 "r"(c0), "r"(c1), "r"(src)
                 : "memory");
}
__device__ __forceinline__ void store_4d(const TensorMap& map, int c0, int c1, int c2, int c3, unsigned src) {
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3, %4}], [%5];" ::"l"(
                     map_address(map)),
                 "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src)
                 : "memory");
}
__device__ __forceinline__ void commit() {
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
// Orders this thread's generic-proxy shared-memory writes before later TMA (async-proxy) reads of them: the same
// fence wgmma needs.
using wgmma::fence_proxy_async;

}  // namespace fa_jit::tile::tma
