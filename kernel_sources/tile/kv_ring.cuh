// The K/V stage ring: kStages shared buffers, each K_j [kBlockN rows] followed by V_j, filled by cp.async, one commit
// group per key tile. Key tiles are visited from the last (n_block_max - 1) down to 0, so the tiles that need a mask
// come first.
//
//   kStages >= 2: tile j + kStages - 1 loads while tile j computes; the prologue puts kStages - 1 tiles in flight
//                 (the first in the same group as Q_i), and each iteration refills the buffer freed one step earlier.
//   kStages == 1: one K and one V buffer (FlashAttention-2's schedule): V_j loads while S_j = Q K_j^T computes, K_{j-1}
//                 while P V_j does; half the shared memory of a 2-deep ring.
//
// The loaders are callables (smem address of the buffer, first key row) -> issue the cp.async copies, so the ring
// knows nothing of layouts.
#pragma once

#include "ptx.cuh"

namespace fa_jit::tile {

template <int kStages, int kBlockN, unsigned kKVBytes>
struct KVRing {
    static_assert(kStages >= 1 && kStages <= 4, "1..4 K/V stages");
    static_assert(kKVBytes % 16 == 0, "cp.async writes 16-byte chunks: buffers must stay 16-byte aligned");
    // Commit groups younger than the one that holds the current tile: kStages - 2 with a ring (the prologue's
    // kStages - 1 groups, plus one per iteration), none with single buffers (each group is waited for at once).
    static constexpr int kYounger = kStages == 1 ? 0 : kStages - 2;

    unsigned base;  // stage s: K at base + 2 s kKVBytes, V kKVBytes further
    int stage;      // the stage holding the current tile

    __device__ __forceinline__ unsigned k_buffer(int s) const { return base + s * 2 * kKVBytes; }

    // After Q_i's copies (same group): the first tiles in flight. Only when n_block_max > 0.
    template <class LoadK, class LoadV>
    __device__ __forceinline__ void prologue(int n_block_max, LoadK load_k, LoadV load_v) {
        if (kStages == 1) {
            load_k(base, (n_block_max - 1) * kBlockN);
            ptx::cp_async_commit();
        }
#pragma unroll
        for (int s = 0; s < kStages - 1; ++s) {
            const int nb = n_block_max - 1 - s;
            if (nb >= 0) {
                const unsigned kb = k_buffer(s);
                load_k(kb, nb * kBlockN);
                load_v(kb + kKVBytes, nb * kBlockN);
            }
            ptx::cp_async_commit();
        }
    }

    // The current tile's group has landed for this thread (the caller then makes it block-wide with a barrier).
    __device__ __forceinline__ void wait_current() const {
        ptx::cp_async_wait<kYounger>();
    }

    // After the barrier of tile n_block (at key row n0): refill. A ring loads tile n_block - (kStages - 1) into the
    // buffer the previous iteration freed; single buffers load V_j now (K_j is there already).
    template <class LoadK, class LoadV>
    __device__ __forceinline__ void refill(int n_block, int n0, LoadK load_k, LoadV load_v) {
        if (kStages == 1) {
            load_v(base + kKVBytes, n0);
            ptx::cp_async_commit();
        } else {
            const int nb = n_block - (kStages - 1);
            if (nb >= 0) {
                int ls = stage + kStages - 1;
                if (ls >= kStages) ls -= kStages;
                const unsigned kb = k_buffer(ls);
                load_k(kb, nb * kBlockN);
                load_v(kb + kKVBytes, nb * kBlockN);
            }
            ptx::cp_async_commit();
        }
    }

    // The current tile's K buffer (V is kKVBytes further); moves the ring on to the next stage.
    __device__ __forceinline__ unsigned advance() {
        const unsigned sK = k_buffer(stage);
        if (++stage == kStages) stage = 0;
        return sK;
    }

    // Single buffers only, once S_j is computed: wait for V_j, then (every warp done with K_j) load K_{j-1}.
    template <class LoadK>
    __device__ __forceinline__ void single_next_k(int n_block, int n0, LoadK load_k) {
        if (kStages != 1) return;
        ptx::cp_async_wait<0>();
        __syncthreads();  // V_j landed; every warp is done with K_j, whose buffer now takes K_{j-1}
        if (n_block > 0) load_k(base, n0 - kBlockN);
        ptx::cp_async_commit();
    }
};

}  // namespace fa_jit::tile
