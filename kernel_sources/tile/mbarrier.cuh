// Shared-memory transaction barriers (mbarrier, sm_90), the handshake between a producer that issues asynchronous
// copies (TMA) and the warps that consume them. PTX ISA, "Parallel Synchronization and Communication Instructions:
// mbarrier".
//
// A barrier is 8 bytes of shared memory, addressed here by its shared-space address. Each phase completes when the
// expected arrivals have arrived and the expected transaction bytes have landed; waiters test a phase by its parity
// (0, 1, 0, ...), so a ring of barriers flips each one's parity once per trip around the ring.
#pragma once

namespace fa_jit::tile::mbarrier {

// Once, by one thread, before any use: `arrivals` arrivals complete a phase. fence_init() then makes the initialised
// barriers visible to the other threads and to the asynchronous proxy (the TMA unit); a block barrier follows.
__device__ __forceinline__ void init(unsigned bar, unsigned arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(arrivals) : "memory");
}
__device__ __forceinline__ void fence_init() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// One arrival that also announces `bytes` more transaction bytes for the current phase (the producer, before it
// issues copies of that many bytes that complete on this barrier).
__device__ __forceinline__ void arrive_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
// One arrival (a consumer releasing a buffer).
__device__ __forceinline__ void arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Whether the phase of parity `parity` has completed (the hardware may suspend the thread for a while first).
__device__ __forceinline__ bool try_wait(unsigned bar, unsigned parity) {
    unsigned done;
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    return done != 0;
}
// Waits until the phase of parity `parity` has completed: its copies' bytes are visible to this thread.
__device__ __forceinline__ void wait(unsigned bar, unsigned parity) {
    while (!try_wait(bar, parity)) {
    }
}

}  // namespace fa_jit::tile::mbarrier
