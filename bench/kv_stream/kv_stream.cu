// kv_stream.cu - how fast an H100 / H200 streams a split-KV decode cache into shared
// memory with cp.async (16 B, LDGSTS) versus TMA tensor loads (UTMALDG) and
// 1-D bulk copies (UBLKCP).
// K, V: bf16 [B][N][H][D]; each (b, h) reads all N keys of K and V, in one block
// (or split over SPLITS blocks, each taking N / SPLITS consecutive keys).
// Usage: kv_stream [B N H D [variant...]]   (defaults 16 131072 8 128, all variants;
//        D must be 128 or 256).  Every launch is watched: a kernel that has not
//        finished after 10 s prints "<variant> HUNG" and the process exits with 3.
// Build: bench/kv_stream/build.sh (nvcc, sm_90a). It answers what the decode family's loads could reach on these
// bytes, apart from its softmax and MMA: bench/NOTES.md, "One row warp on 32 keys per key warp" (the first five
// variants timed on an H200: cp.async 4.58 TB/s at B 64 32k, the per-warp TMA rings 4.22); the variants with a
// producer warp and release barriers were written after that run and have not run yet.
#include <cuda.h>  // CUtensorMap and enum types only (no -lcuda)
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                                                         \
    do {                                                                                                              \
        cudaError_t e_ = (x);                                                                                         \
        if (e_ != cudaSuccess) {                                                                                      \
            fprintf(stderr, "CUDA error %s (%d) at %s:%d: %s\n", cudaGetErrorString(e_), (int)e_, __FILE__, __LINE__, \
                    #x);                                                                                              \
            exit(1);                                                                                                  \
        }                                                                                                             \
    } while (0)

constexpr int NT = 128;       // consumer threads per block (4 warps) in every variant
constexpr int NCW = NT / 32;  // consumer warps
constexpr int NTP = NT + 32;  // producer-warp kernels: 4 consumer warps + 1 producer warp

// ---------------------------------------------------------------- PTX helpers
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_fence_init() {  // make inits visible to the async proxy
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {  // plain arrive (release.cta)
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// returns once the phase of parity `parity` has completed (parity 1 passes on a fresh barrier)
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "WAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra WAIT_%=;\n"
        "}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}
// 4-D tiled TMA load global -> shared, completion signalled on mbarrier `bar`.
__device__ __forceinline__ void tma_load4(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1, int c2,
                                          int c3) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(dst),
        "l"((uint64_t)map), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
        : "memory");
}
// non-tensor (1-D) bulk copy global -> shared of `bytes` (multiple of 16, 16-B aligned)
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1], %2, [%3];\n" ::"r"(dst),
        "l"(src), "r"(bytes), "r"(bar)
        : "memory");
}
// consumer: every thread reads one 16-byte value from K and from V of a stage
__device__ __forceinline__ uint32_t xor16(const uint8_t* p, int idx) {
    uint4 a = *reinterpret_cast<const uint4*>(p + idx * 16);
    return a.x ^ a.y ^ a.z ^ a.w;
}
__device__ __forceinline__ uint32_t consume(const uint8_t* k, const uint8_t* v, int idx) {
    return xor16(k, idx) ^ xor16(v, idx);
}
// dynamic smem base rounded up to 1024 B (needed by SWIZZLE_128B); host adds 1 KB slack
__device__ __forceinline__ uint8_t* aligned_smem(uint8_t* raw) {
    uint32_t a = smem_u32(raw);
    return raw + ((1024u - (a & 1023u)) & 1023u);
}

// ------------------------------------------------------ per-warp ring kernels
// Each warp w streams tiles w, w+4, ... of KW keys through its own S-stage ring.
// Stage layout: [K: KW*D bf16][V: KW*D bf16].  TMA=false: cp.async, else TMA.
// SPLITS blocks per (b, h): blockIdx = (b*H + h) * SPLITS + part, part takes keys
// [part*N/SPLITS, (part+1)*N/SPLITS).
template <int D, int KW, int S, bool TMA, int SPLITS>
__global__ void __launch_bounds__(NT, SPLITS)
    warp_ring_kernel(const unsigned short* __restrict__ K, const unsigned short* __restrict__ V,
                     const __grid_constant__ CUtensorMap tmK, const __grid_constant__ CUtensorMap tmV, int N, int H,
                     uint32_t* __restrict__ out) {
    constexpr int HALF = KW * D * 2;  // bytes of K (or V) per stage
    constexpr int STAGE = 2 * HALF;
    constexpr int CHUNKS = HALF / 16;  // 16-byte chunks of K per stage
    constexpr int RC = D / 8;          // chunks per key row
    static_assert(HALF % 1024 == 0 && CHUNKS % 32 == 0, "stage halves must stay 1024-B aligned");
    extern __shared__ uint8_t smem_raw[];
    uint8_t* smem = aligned_smem(smem_raw);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int bh = blockIdx.x / SPLITS, part = blockIdx.x % SPLITS;
    const int b = bh / H, h = bh % H;
    uint8_t* ring = smem + warp * S * STAGE;
    uint64_t* bars = reinterpret_cast<uint64_t*>(smem + 4 * S * STAGE) + warp * S;

    const int NP = N / SPLITS;                                 // keys handled by this block
    const int T = NP / KW;                                     // tiles per block
    const int ntiles = (T - warp + 3) / 4;                     // tiles handled by this warp
    const size_t rowbase = (size_t)b * N + (size_t)part * NP;  // first key row of this block

    auto issue = [&](int it) {  // load this warp's it-th tile into slot it%S
        const int n0 = (warp + 4 * it) * KW;
        uint8_t* st = ring + (it % S) * STAGE;
        if constexpr (TMA) {  // lane 0 only
            const uint32_t bar = smem_u32(bars + it % S);
            mbar_expect_tx(bar, STAGE);
            tma_load4(smem_u32(st), &tmK, bar, 0, 0, h, (int)(rowbase + n0));
            tma_load4(smem_u32(st + HALF), &tmV, bar, 0, 0, h, (int)(rowbase + n0));
        } else {  // whole warp
#pragma unroll
            for (int j = 0; j < CHUNKS / 32; ++j) {
                const int i = lane + 32 * j, k = i / RC, c = i % RC;
                const size_t g = ((rowbase + n0 + k) * H + h) * D + c * 8;
                cp_async16(smem_u32(st + i * 16), K + g);
                cp_async16(smem_u32(st + HALF + i * 16), V + g);
            }
        }
    };

    if constexpr (TMA) {
        if (lane == 0)
            for (int s = 0; s < S; ++s) mbar_init(smem_u32(bars + s), 1);
        mbar_fence_init();
        __syncthreads();
    }
    // prologue: S-1 tiles in flight
    for (int s = 0; s < S - 1; ++s) {
        if constexpr (TMA) {
            if (lane == 0 && s < ntiles) issue(s);
        } else {
            if (s < ntiles) issue(s);
            cp_async_commit();
        }
    }
    uint32_t acc = 0;
    for (int it = 0; it < ntiles; ++it) {
        const int nx = it + S - 1;  // refill slot freed at it-1
        const uint8_t* st = ring + (it % S) * STAGE;
        if constexpr (TMA) {
            __syncwarp();  // all lanes done reading slot (it-1)%S
            if (lane == 0 && nx < ntiles) issue(nx);
            mbar_wait(smem_u32(bars + it % S), (uint32_t)((it / S) & 1));
        } else {
            cp_async_wait<S - 2>();  // own copies of tile `it` landed
            __syncwarp();            // ... and everyone else's; slot it-1 free
            if (nx < ntiles) issue(nx);
            cp_async_commit();  // (possibly empty group keeps counting)
        }
        acc ^= consume(st, st + HALF, lane);
    }
    out[blockIdx.x * NT + threadIdx.x] = acc;
}

// ----------------------------------------------- block-wide ring, one producer
// Thread 0 loads KB-key tiles of K and V into a 2-stage block ring; all 4 warps
// consume; __syncthreads() before a stage is refilled.
template <int D, int KB>
__global__ void __launch_bounds__(NT, 1)
    block_ring_kernel(const __grid_constant__ CUtensorMap tmK, const __grid_constant__ CUtensorMap tmV, int N, int H,
                      uint32_t* __restrict__ out) {
    constexpr int S = 2, HALF = KB * D * 2, STAGE = 2 * HALF;
    extern __shared__ uint8_t smem_raw[];
    uint8_t* smem = aligned_smem(smem_raw);
    uint64_t* bars = reinterpret_cast<uint64_t*>(smem + S * STAGE);
    const int b = blockIdx.x / H, h = blockIdx.x % H;
    const int T = N / KB;
    const int rowbase = b * N;
    auto issue = [&](int it) {
        uint8_t* st = smem + (it % S) * STAGE;
        const uint32_t bar = smem_u32(bars + it % S);
        mbar_expect_tx(bar, STAGE);
        tma_load4(smem_u32(st), &tmK, bar, 0, 0, h, rowbase + it * KB);
        tma_load4(smem_u32(st + HALF), &tmV, bar, 0, 0, h, rowbase + it * KB);
    };
    if (threadIdx.x == 0)
        for (int s = 0; s < S; ++s) mbar_init(smem_u32(bars + s), 1);
    mbar_fence_init();
    __syncthreads();
    if (threadIdx.x == 0) issue(0);
    uint32_t acc = 0;
    for (int it = 0; it < T; ++it) {
        __syncthreads();  // everyone done with slot (it-1)%S
        if (threadIdx.x == 0 && it + 1 < T) issue(it + 1);
        mbar_wait(smem_u32(bars + it % S), (uint32_t)((it / S) & 1));
        const uint8_t* st = smem + (it % S) * STAGE;
        acc ^= consume(st, st + HALF, threadIdx.x);
    }
    out[blockIdx.x * NT + threadIdx.x] = acc;
}

// ------------------------------------- block-wide ring, dedicated producer warp
// Warps 0..3 consume, warp 4 produces.  Each block streams NP = N/SPLITS keys of one
// (b, h) (blockIdx = (b*H + h) * SPLITS + part) as T = NP/KS tiles of KS keys through
// an S-stage ring; stage layout [K: KS*D bf16][V: KS*D bf16], 1024-B aligned halves.
//   full[s]  (count 1): the producer's arrive.expect_tx plus the tile's tx bytes.
//            MODE PM_TMA_KSPLIT: two per stage, fullK (K box) and fullV (V box).
//   empty[s] (count NCW): lane 0 of each consumer warp arrives after __syncwarp once
//            the warp has read the slot; the producer waits on it before refilling.
// Tile `it` lives in slot s = it % S and is that slot's u = it / S -th use:
//   consumer waits full[s] phase u   -> parity u & 1;
//   producer (it >= S) waits empty[s] phase u-1 (the release of tile it-S) -> parity (u-1) & 1.
// Neither side can get 2 phases ahead of the other, so parity never aliases.  The
// producer only waits for releases of tiles it - S < T, all of which the consumers
// consume, and the consumers wait for exactly the T tiles issued: no end deadlock.
enum ProdMode {
    PM_TMA = 0,         // one tensor box per K and V, one full barrier per stage
    PM_TMA_KSPLIT = 1,  // same, separate full barriers for K and V (V issued after K)
    PM_BULK_LANE = 2,   // 1-D bulk copy per key row (D*2 bytes), all issued by lane 0
    PM_BULK_WARP = 3,   // same, the 32 producer lanes share the rows
};
template <int D, int KS, int S, int MODE, int SPLITS>
__global__ void __launch_bounds__(NTP, SPLITS)
    prod_ring_kernel(const unsigned short* __restrict__ K, const unsigned short* __restrict__ V,
                     const __grid_constant__ CUtensorMap tmK, const __grid_constant__ CUtensorMap tmV, int N, int H,
                     uint32_t* __restrict__ out) {
    constexpr int HALF = KS * D * 2, STAGE = 2 * HALF, ROW = D * 2;
    constexpr int NFULL = MODE == PM_TMA_KSPLIT ? 2 : 1;
    constexpr bool BULK = MODE == PM_BULK_LANE || MODE == PM_BULK_WARP;
    static_assert(HALF % 1024 == 0, "stage halves must stay 1024-B aligned");
    static_assert(HALF / 16 >= NT, "each consumer thread reads its own 16-B chunk of a stage");
    static_assert(!BULK || KS % 32 == 0, "bulk warp mode splits a tile's rows over 32 lanes");
    extern __shared__ uint8_t smem_raw[];
    uint8_t* smem = aligned_smem(smem_raw);
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + S * STAGE);  // [S][NFULL]
    uint64_t* empty = full + S * NFULL;                              // [S]
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int bh = blockIdx.x / SPLITS, part = blockIdx.x % SPLITS;
    const int b = bh / H, h = bh % H;
    const int NP = N / SPLITS;           // keys handled by this block
    const int T = NP / KS;               // tiles handled by this block
    const int row0 = b * N + part * NP;  // first key row (B*N < 2^31 checked on host)

    if (threadIdx.x == 0) {
        for (int i = 0; i < S * NFULL; ++i) mbar_init(smem_u32(full + i), 1);
        for (int s = 0; s < S; ++s) mbar_init(smem_u32(empty + s), NCW);
    }
    mbar_fence_init();
    __syncthreads();  // the last block-wide barrier

    if (warp == NCW) {  // ------------------------- producer
        if (MODE != PM_BULK_WARP && lane != 0) return;
        for (int it = 0; it < T; ++it) {
            const int s = it % S, u = it / S;
            if (u > 0) mbar_wait(smem_u32(empty + s), (uint32_t)((u - 1) & 1));
            uint8_t* st = smem + s * STAGE;
            const int n0 = row0 + it * KS;
            if constexpr (MODE == PM_TMA) {
                const uint32_t bar = smem_u32(full + s);
                mbar_expect_tx(bar, STAGE);
                tma_load4(smem_u32(st), &tmK, bar, 0, 0, h, n0);
                tma_load4(smem_u32(st + HALF), &tmV, bar, 0, 0, h, n0);
            } else if constexpr (MODE == PM_TMA_KSPLIT) {
                const uint32_t bk = smem_u32(full + 2 * s), bv = smem_u32(full + 2 * s + 1);
                mbar_expect_tx(bk, HALF);
                tma_load4(smem_u32(st), &tmK, bk, 0, 0, h, n0);
                mbar_expect_tx(bv, HALF);
                tma_load4(smem_u32(st + HALF), &tmV, bv, 0, 0, h, n0);
            } else {  // 1-D bulk, one copy per key row
                const uint32_t bar = smem_u32(full + s);
                constexpr int STEP = MODE == PM_BULK_WARP ? 32 : 1;
                const int k0 = MODE == PM_BULK_WARP ? lane : 0;
                if (lane == 0) mbar_expect_tx(bar, STAGE);  // all 2*KS rows of the stage
                if constexpr (MODE == PM_BULK_WARP) __syncwarp();
                for (int k = k0; k < KS; k += STEP) {  // K rows, then V rows
                    const size_t g = ((size_t)(n0 + k) * H + h) * D;
                    bulk_load(smem_u32(st + k * ROW), K + g, ROW, bar);
                }
                for (int k = k0; k < KS; k += STEP) {
                    const size_t g = ((size_t)(n0 + k) * H + h) * D;
                    bulk_load(smem_u32(st + HALF + k * ROW), V + g, ROW, bar);
                }
            }
        }
        return;  // slots still full at exit are never reused
    }
    // ------------------------------------------------------------------ consumers
    uint32_t acc = 0;
    for (int it = 0; it < T; ++it) {
        const int s = it % S;
        const uint32_t par = (uint32_t)((it / S) & 1);
        const uint8_t* st = smem + s * STAGE;
        if constexpr (MODE == PM_TMA_KSPLIT) {
            mbar_wait(smem_u32(full + 2 * s), par);
            acc ^= xor16(st, threadIdx.x);
            mbar_wait(smem_u32(full + 2 * s + 1), par);
            acc ^= xor16(st + HALF, threadIdx.x);
        } else {
            mbar_wait(smem_u32(full + s), par);
            acc ^= consume(st, st + HALF, threadIdx.x);
        }
        __syncwarp();  // whole warp has read slot s
        if (lane == 0) mbar_arrive(smem_u32(empty + s));
    }
    out[blockIdx.x * NT + threadIdx.x] = acc;
}

// ---------------------------------------------------------------------- host
typedef CUresult (*EncodeTiledFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                  const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                  CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
static EncodeTiledFn g_encode = nullptr;
constexpr CUtensorMapL2promotion L2_256 = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;

// rank 4: {64 elems, D/64 col blocks (128 B), H heads (D*2 B), B*N keys (H*D*2 B)}
static CUtensorMap make_map(const void* base, int B, int N, int H, int D, int keys,
                            CUtensorMapL2promotion l2 = L2_256) {
    CUtensorMap m;
    cuuint64_t dims[4] = {64, (cuuint64_t)(D / 64), (cuuint64_t)H, (cuuint64_t)B * N};
    cuuint64_t strides[3] = {128, (cuuint64_t)D * 2, (cuuint64_t)H * D * 2};
    cuuint32_t box[4] = {64, (cuuint32_t)(D / 64), 1, (cuuint32_t)keys};
    cuuint32_t estr[4] = {1, 1, 1, 1};
    CUresult r =
        g_encode(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<void*>(base), dims, strides, box, estr,
                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, l2, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "cuTensorMapEncodeTiled failed: %d (box keys %d)\n", (int)r, keys);
        exit(1);
    }
    return m;
}

struct Ctx {
    const unsigned short *K, *V;
    int B, N, H, D;
    uint32_t* out;
    size_t smem_optin;
};

// Watchdog: poll `ev` until the work before it is done; after 10 s print "<name> HUNG"
// and leave with status 3.  _Exit skips the runtime's atexit teardown (which could
// block on the stuck kernel); closing the process's device handles kills the kernel.
static void wait_or_die(cudaEvent_t ev, const char* name) {
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
        const cudaError_t r = cudaEventQuery(ev);
        if (r == cudaSuccess) return;
        if (r != cudaErrorNotReady) {
            fprintf(stderr, "%s: CUDA error %s (%d)\n", name, cudaGetErrorString(r), (int)r);
            exit(1);
        }
        if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) {
            printf("%-14s HUNG\n", name);
            fflush(stdout);
            fflush(stderr);
            std::_Exit(3);
        }
    }
}

// 3 warm-ups + 20 timed launches (each watched), return the median in microseconds
template <typename L>
static float time_launch(const char* name, L launch) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; ++i) {
        launch();
        CK(cudaGetLastError());
        CK(cudaEventRecord(e1));
        wait_or_die(e1, name);
    }
    std::vector<float> t;
    for (int i = 0; i < 20; ++i) {
        CK(cudaEventRecord(e0));
        launch();
        CK(cudaGetLastError());
        CK(cudaEventRecord(e1));
        wait_or_die(e1, name);
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms * 1000.f);
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    std::sort(t.begin(), t.end());
    return 0.5f * (t[9] + t[10]);
}

// one output line per variant: name, median us, TB/s, resident blocks per SM, grid size
static void report(const char* name, float us, const Ctx& c, int occ, int grid) {
    double bytes = 2.0 * c.B * (double)c.N * c.H * c.D * 2.0;
    printf("%-14s %10.1f us  %6.3f TB/s  %d blk/SM  grid %d\n", name, us, bytes / (us * 1e-6) / 1e12, occ, grid);
    fflush(stdout);
}

// opt in to `smem` bytes of dynamic shared memory; false (and a SKIP line) if too much
template <typename F>
static bool setup(const char* name, F kern, size_t smem, int threads, const Ctx& c, int* occ) {
    if (smem > c.smem_optin) {
        printf("%-14s SKIP (needs %zu B smem > %zu)\n", name, smem, c.smem_optin);
        return false;
    }
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(occ, kern, threads, smem));
    return true;
}

template <int D, int KW, int S, bool TMA, int SPLITS = 1>
static void run_warp(const char* name, const Ctx& c) {
    constexpr int STAGE = 2 * KW * D * 2;
    const size_t smem = 4 * S * STAGE + 1024 + 4 * S * 8;
    auto kern = warp_ring_kernel<D, KW, S, TMA, SPLITS>;
    int occ;
    if (!setup(name, kern, smem, NT, c, &occ)) return;
    CUtensorMap mk = make_map(c.K, c.B, c.N, c.H, D, KW), mv = make_map(c.V, c.B, c.N, c.H, D, KW);
    const int grid = c.B * c.H * SPLITS;
    float us = time_launch(name, [&] { kern<<<grid, NT, smem>>>(c.K, c.V, mk, mv, c.N, c.H, c.out); });
    report(name, us, c, occ, grid);
}

template <int D, int KB>
static void run_block(const char* name, const Ctx& c) {
    constexpr int STAGE = 2 * KB * D * 2;
    const size_t smem = 2 * STAGE + 1024 + 2 * 8;
    auto kern = block_ring_kernel<D, KB>;
    int occ;
    if (!setup(name, kern, smem, NT, c, &occ)) return;
    CUtensorMap mk = make_map(c.K, c.B, c.N, c.H, D, KB), mv = make_map(c.V, c.B, c.N, c.H, D, KB);
    const int grid = c.B * c.H;
    float us = time_launch(name, [&] { kern<<<grid, NT, smem>>>(mk, mv, c.N, c.H, c.out); });
    report(name, us, c, occ, grid);
}

template <int D, int KS, int S, int MODE, int SPLITS = 1, CUtensorMapL2promotion L2 = L2_256>
static void run_prod(const char* name, const Ctx& c) {
    constexpr int STAGE = 2 * KS * D * 2, NFULL = MODE == PM_TMA_KSPLIT ? 2 : 1;
    const size_t smem = (size_t)S * STAGE + 1024 + (size_t)S * (NFULL + 1) * 8;
    auto kern = prod_ring_kernel<D, KS, S, MODE, SPLITS>;
    int occ;
    if (!setup(name, kern, smem, NTP, c, &occ)) return;
    // (the bulk modes ignore the maps)
    CUtensorMap mk = make_map(c.K, c.B, c.N, c.H, D, KS, L2), mv = make_map(c.V, c.B, c.N, c.H, D, KS, L2);
    const int grid = c.B * c.H * SPLITS;
    float us = time_launch(name, [&] { kern<<<grid, NTP, smem>>>(c.K, c.V, mk, mv, c.N, c.H, c.out); });
    report(name, us, c, occ, grid);
}

struct Variant {
    const char* name;
    void (*run)(const char*, const Ctx&);
};

// Stage sizes are given for D 128; D 256 halves every key count (same bytes per stage).
//   KW: per-warp ring tile (32 keys), KB: 128-key box, KS: 64-key (32 KB) block stage.
template <int D>
static std::vector<Variant> variants() {
    constexpr int KW = D == 128 ? 32 : 16, KB = D == 128 ? 128 : 64, KS = D == 128 ? 64 : 32;
    return {
        {"cpasync", run_warp<D, KW, 2, false>},  // 4 warp rings, 128 KB
        {"cpasync_s4", run_warp<D, KW / 2, 4, false>},
        {"tma", run_warp<D, KW, 2, true>},
        {"tma_s4", run_warp<D, KW / 2, 4, true>},
        {"tma_block", run_block<D, KB>},                     // thread 0, __syncthreads
        {"tma_block_s3", run_prod<D, KS, 3, PM_TMA>},        // producer warp, 96 KB ring
        {"tma_block_s4", run_prod<D, KS, 4, PM_TMA>},        //                128 KB ring
        {"tma_block_k", run_prod<D, KS, 4, PM_TMA_KSPLIT>},  // K, V on separate barriers
        {"tma_2blk", run_prod<D, KS / 2, 3, PM_TMA, 2>},     // 2 blocks per (b,h), 48 KB
        {"tma_box128_s2", run_prod<D, KB, 2, PM_TMA>},       // 64 KB stages, 128 KB ring
        {"tma_box128_s3", run_prod<D, KB, 3, PM_TMA>},       //               192 KB ring
        {"tma_nol2", run_prod<D, KS, 4, PM_TMA, 1, CU_TENSOR_MAP_L2_PROMOTION_NONE>},
        {"tma_l2_128", run_prod<D, KS, 4, PM_TMA, 1, CU_TENSOR_MAP_L2_PROMOTION_L2_128B>},
        {"cpasync_2blk", run_warp<D, KW / 2, 2, false, 2>},  // 2 blocks per (b,h), 64 KB
        {"bulk1d", run_prod<D, KS, 4, PM_BULK_LANE>},        // 2*KS row copies by lane 0
        {"bulk1d_warp", run_prod<D, KS, 4, PM_BULK_WARP>},   // ... by 32 producer lanes
    };
}

static void usage(const char* prog) {
    fprintf(stderr, "usage: %s [B N H D [variant...]]\nvariants:", prog);
    for (const Variant& v : variants<128>()) fprintf(stderr, " %s", v.name);
    fprintf(stderr, "\n");
}

int main(int argc, char** argv) {
    int B = 16, N = 131072, H = 8, D = 128;
    if (argc >= 5) {
        B = atoi(argv[1]);
        N = atoi(argv[2]);
        H = atoi(argv[3]);
        D = atoi(argv[4]);
    } else if (argc != 1) {
        usage(argv[0]);
        return 1;
    }
    if ((D != 128 && D != 256) || B < 1 || H < 1 || N < 128 || N % 128 != 0 || (long long)B * N >= (1ll << 31)) {
        fprintf(stderr, "need D in {128,256}, N a positive multiple of 128, B*N < 2^31\n");
        return 1;
    }
    const std::vector<Variant> all = D == 128 ? variants<128>() : variants<256>();
    std::vector<Variant> sel;
    if (argc <= 5) sel = all;
    for (int i = 5; i < argc; ++i) {
        auto it = std::find_if(all.begin(), all.end(), [&](const Variant& v) { return strcmp(v.name, argv[i]) == 0; });
        if (it == all.end()) {
            fprintf(stderr, "unknown variant '%s'\n", argv[i]);
            usage(argv[0]);
            return 1;
        }
        sel.push_back(*it);
    }
    int dev;
    cudaDeviceProp prop;
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    // driver entry point via the runtime (no -lcuda); ByVersion is the non-deprecated form in CUDA 13
    cudaDriverEntryPointQueryResult q;
    void* fn = nullptr;
    CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !fn) {
        fprintf(stderr, "cuTensorMapEncodeTiled not found\n");
        return 1;
    }
    g_encode = reinterpret_cast<EncodeTiledFn>(fn);

    const size_t elems = (size_t)B * N * H * D, bytes = elems * 2;
    constexpr int MAX_SPLITS = 2;
    unsigned short *K, *V;
    uint32_t* out;
    CK(cudaMalloc(&K, bytes));
    CK(cudaMalloc(&V, bytes));
    CK(cudaMalloc(&out, (size_t)B * H * MAX_SPLITS * NT * sizeof(uint32_t)));
    CK(cudaMemset(K, 0x3c, bytes));
    CK(cudaMemset(V, 0x5a, bytes));
    CK(cudaDeviceSynchronize());
    printf("device %s, %d SMs | B=%d N=%d H=%d D=%d | KV bytes %.3f GB | %d (b,h) blocks\n", prop.name,
           prop.multiProcessorCount, B, N, H, D, 2.0 * bytes / 1e9, B * H);
    Ctx c{K, V, B, N, H, D, out, prop.sharedMemPerBlockOptin};
    for (int pass = 0; pass < 2; ++pass) {
        printf("--- pass %d ---\n", pass + 1);
        for (const Variant& v : sel) v.run(v.name, c);
    }
    uint32_t h0;
    CK(cudaMemcpy(&h0, out, 4, cudaMemcpyDeviceToHost));
    printf("checksum word %08x\n", h0);
    CK(cudaFree(K));
    CK(cudaFree(V));
    CK(cudaFree(out));
    return 0;
}
