// Merges the num_splits partial results of a split-KV decode launch (tile/split_block.cuh) into O and the LSE:
//
//   LSE = log sum_s exp(LSE_s),   O = sum_s exp(LSE_s - LSE) O_s   (a split that saw no key has LSE_s = -inf).
//
//   template <typename T, int kHeadDim>
//   __global__ void attention_split_combine(const __grid_constant__ AttentionParams p);
//
// Launch: grid ceil(rows / rows_per_block), block decode_layout::kCombineWarps * 32, where rows = batch * heads_q *
// seqlen_q and rows_per_block = kCombineWarps / combine_warps_per_row(num_splits). The warps of one output row split
// its splits between them and add up their sums through shared memory: with many splits and few rows (one long
// sequence) a single warp walking every split in turn would be one dependent load latency per split.
// On sm_90 the host launches it as a programmatic dependent of the split kernel, whose blocks release it as they
// start (ptx::launch_dependents): its launch overlaps the split kernel, and it waits for the partials
// (ptx::grid_dependency_wait) before reading them.
#pragma once

#include "attention_decode_layout.cuh"
#include "attention_params.cuh"
#include "dtypes.cuh"
#include "ptx.cuh"
#include "tile/f16_types.cuh"

namespace fa_jit {

template <typename T, int kHeadDim>
__global__ void __launch_bounds__(decode_layout::kCombineWarps * 32)
    attention_split_combine(const __grid_constant__ AttentionParams p) {
    using namespace ptx;
    static_assert(kHeadDim % 4 == 0, "4-column vectors");
    static_assert(tile::IsF16Type<T>::value, "decode outputs are fp16 / bf16");
    constexpr bool kBf16 = tile::IsBf16<T>::value;
    constexpr int kWarps = decode_layout::kCombineWarps;
    constexpr int kVecs = kHeadDim / 4;
    constexpr int kVecsPerLane = (kVecs + 31) / 32;
    constexpr float kLog2e = 1.4426950408889634f;
    const float kNegInf = neg_inf_f32();
    __shared__ float4 part_o[kWarps][kVecsPerLane * 32];
    __shared__ float part_sum[kWarps];

    const int warps_per_row = decode_layout::combine_warps_per_row(p.num_splits);
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int sub = warp % warps_per_row;  // this warp takes splits sub, sub + warps_per_row, ...
    const long long rows = static_cast<long long>(p.batch) * p.heads_q * p.seqlen_q;
    const long long row = static_cast<long long>(blockIdx.x) * (kWarps / warps_per_row) + warp / warps_per_row;
    const bool live = row < rows;  // rows past the end still meet the barrier below
    grid_dependency_wait();        // launched as a programmatic dependent of the split kernel: its partials

    float m = kNegInf;
    if (live)
        for (int s = lane; s < p.num_splits; s += 32) m = fmaxf(m, p.partial_lse[s * rows + row]);
    m = warp_max(m);

    float sum = 0.f;
    float acc[kVecsPerLane][4] = {};
    if (live && m != kNegInf) {
#pragma unroll 4
        for (int s = sub; s < p.num_splits; s += warps_per_row) {
            const float w = exp2_approx((p.partial_lse[s * rows + row] - m) * kLog2e);
            sum += w;
            const float* part = p.partial_o + (s * rows + row) * kHeadDim;
#pragma unroll
            for (int i = 0; i < kVecsPerLane; ++i) {
                const int vec = lane + 32 * i;
                if (kVecs % 32 != 0 && vec >= kVecs) break;
                unsigned x[4];
                ld_global_v4(x, part + 4 * vec);
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(w, bits_as_float(x[j]), acc[i][j]);
            }
        }
    }
    if (warps_per_row > 1) {  // uniform over the block: every thread meets both barriers
#pragma unroll
        for (int i = 0; i < kVecsPerLane; ++i) part_o[warp][lane + 32 * i] = {acc[i][0], acc[i][1], acc[i][2], acc[i][3]};
        if (lane == 0) part_sum[warp] = sum;
        __syncthreads();
        if (sub == 0) {
            for (int w = warp + 1; w < warp + warps_per_row; ++w) {
                sum += part_sum[w];
#pragma unroll
                for (int i = 0; i < kVecsPerLane; ++i) {
                    const float4 x = part_o[w][lane + 32 * i];
                    acc[i][0] += x.x, acc[i][1] += x.y, acc[i][2] += x.z, acc[i][3] += x.w;
                }
            }
        }
    }
    if (!live || sub != 0) return;

    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    const int token = static_cast<int>(row % p.seqlen_q);
    const long long bh = row / p.seqlen_q;
    const int head = static_cast<int>(bh % p.heads_q);
    const int batch = static_cast<int>(bh / p.heads_q);
    T* o = static_cast<T*>(p.o) + batch * p.o_batch_stride + head * p.o_head_stride + token * p.o_row_stride;
#pragma unroll
    for (int i = 0; i < kVecsPerLane; ++i) {
        const int vec = lane + 32 * i;
        if (kVecs % 32 != 0 && vec >= kVecs) break;
        st_global_v2(o + 4 * vec, tile::pack2<kBf16>(acc[i][0] * inv, acc[i][1] * inv),
                     tile::pack2<kBf16>(acc[i][2] * inv, acc[i][3] * inv));
    }
    if (lane == 0 && p.lse != nullptr) p.lse[row] = sum > 0.f ? m + log2_approx(sum) / kLog2e : kNegInf;
}

}  // namespace fa_jit
