// Sample kernels for the Hopper copy primitives (tile/tma.cuh, tile/mbarrier.cuh), used by their tests: the TMA
// box lands in the wgmma layout the kernels read (tile::Swizzle128B), zeros outside the tensor, and a producer warp
// feeds consumer warps through a ring of buffers guarded by full / empty barriers, as a warp-specialized kernel does.
// sm_90a only.
#include "ptx.cuh"
#include "tile/mbarrier.cuh"
#include "tile/swizzle.cuh"
#include "tile/tma.cuh"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "tma_sample.cu needs -arch=sm_90a: TMA and mbarrier transactions exist from Hopper on"
#endif

namespace fa_jit::tma_sample {

// Tile row r (of kRows) of the box at `box`, 64 16-bit columns, read through the wgmma layout into out[r][0..64).
template <int kRows>
__device__ __forceinline__ void read_row(unsigned box, int r, unsigned short* out) {
    for (int chunk = 0; chunk < 8; ++chunk) {
        unsigned x[4];
        ptx::ld_shared_v4(x, box + tile::Swizzle128B<kRows>::offset(r, chunk));
        for (int j = 0; j < 4; ++j) {
            out[chunk * 8 + 2 * j] = static_cast<unsigned short>(x[j] & 0xffffu);
            out[chunk * 8 + 2 * j + 1] = static_cast<unsigned short>(x[j] >> 16);
        }
    }
}

// Block (x, y) loads the [kRows][64] box at column 64x, row kRows * y of `in` by TMA, then writes it through the
// wgmma layout to out[kRows * y + r][64 x + c] (row stride out_cols; zeros where the box left the tensor), and
// stores it back by TMA to the same place of `out_map` (only elements inside that tensor are written).
// Launch: block 128 threads, dynamic shared memory kRows * 128 + 1024 + 8.
template <int kRows>
__global__ void box_roundtrip(const __grid_constant__ TensorMap in_map, const __grid_constant__ TensorMap out_map,
                              unsigned short* out, int out_cols) {
    extern __shared__ float4 smem_raw[];
    const unsigned box = (ptx::smem_address(smem_raw) + 1023u) & ~1023u;
    const unsigned bar = box + kRows * 128u;
    const int c0 = blockIdx.x * 64;
    const int r0 = blockIdx.y * kRows;
    if (threadIdx.x == 0) {
        tile::mbarrier::init(bar, 1);
        tile::mbarrier::fence_init();
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        tile::tma::prefetch_map(in_map);
        tile::mbarrier::arrive_expect_tx(bar, kRows * 128u);  // the whole box, zero-filled parts included
        tile::tma::load_2d(box, in_map, c0, r0, bar);
    }
    tile::mbarrier::wait(bar, 0);
    for (int r = threadIdx.x; r < kRows; r += blockDim.x)
        read_row<kRows>(box, r, out + static_cast<long long>(r0 + r) * out_cols + c0);
    if (threadIdx.x == 0) {
        tile::tma::fence_proxy_async();
        tile::tma::store_2d(out_map, c0, r0, box);
        tile::tma::commit();
        tile::tma::wait_read<0>();
    }
}

// One block of 8 warps: warp 0 produces, warps 4..7 consume (warps 1..3 idle, as a producer warpgroup's would).
// The [rows][64] tensor of `in_map` goes box by box (kRows rows each) through a ring of kStages shared buffers: the
// producer waits until a buffer is empty, announces its bytes and issues the TMA load; the consumers wait until it is
// full, copy it to out[box * kRows + r][0..64) through the wgmma layout, and release it (one arrival per consumer
// warp). Launch: block 256 threads, dynamic shared memory kStages * (kRows * 128) + 1024 + 16 * kStages.
template <int kRows, int kStages>
__global__ void __launch_bounds__(256, 1) ring_copy(const __grid_constant__ TensorMap in_map, unsigned short* out,
                                                      int boxes) {
    constexpr int kConsumerWarps = 4;
    extern __shared__ float4 smem_raw[];
    const unsigned buffers = (ptx::smem_address(smem_raw) + 1023u) & ~1023u;
    const unsigned full = buffers + kStages * kRows * 128u;  // full[s]: 8 bytes each, then empty[s]
    const unsigned empty = full + 8u * kStages;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            tile::mbarrier::init(full + 8u * s, 1);
            tile::mbarrier::init(empty + 8u * s, kConsumerWarps);
        }
        tile::mbarrier::fence_init();
    }
    __syncthreads();

    if (warp == 0) {
        if (lane == 0) {
            tile::tma::prefetch_map(in_map);
            for (int i = 0; i < boxes; ++i) {
                const int s = i % kStages;
                const unsigned phase = (i / kStages) & 1u;
                tile::mbarrier::wait(empty + 8u * s, phase ^ 1u);  // the first trip finds every buffer free
                tile::mbarrier::arrive_expect_tx(full + 8u * s, kRows * 128u);
                tile::tma::load_2d(buffers + s * kRows * 128u, in_map, 0, i * kRows, full + 8u * s);
            }
        }
    } else if (warp >= 8 - kConsumerWarps) {
        const int consumer = warp - (8 - kConsumerWarps);
        for (int i = 0; i < boxes; ++i) {
            const int s = i % kStages;
            tile::mbarrier::wait(full + 8u * s, (i / kStages) & 1u);
            for (int r = consumer * 32 + lane; r < kRows; r += 32 * kConsumerWarps)
                read_row<kRows>(buffers + s * kRows * 128u, r, out + (static_cast<long long>(i) * kRows + r) * 64);
            __syncwarp();
            if (lane == 0) tile::mbarrier::arrive(empty + 8u * s);
        }
    }
}

}  // namespace fa_jit::tma_sample
