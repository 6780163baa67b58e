// Merges the num_splits partial results of a split-KV decode launch (tile/split_block.cuh) into O and the LSE:
//
//   LSE = log sum_s exp(LSE_s),   O = sum_s exp(LSE_s - LSE) O_s   (a split that saw no key has LSE_s = -inf).
//
//   template <typename T, int kHeadDim, bool kVarlen = false>
//   __global__ void attention_split_combine(const __grid_constant__ AttentionParams p);
//
// kVarlen: packed sequences (tile::seq_rows): rows are indexed with seqlen_q the bound, and a row past its sequence's
// length (never computed) is skipped; O and LSE go to the sequence's rows of the packed tensors.
//
// Launch: grid ceil(rows / rows_per_block), block decode_layout::kCombineWarps * 32, where rows = batch * heads_q *
// seqlen_q and rows_per_block = kCombineWarps / combine_warps_per_row(num_splits). The warps of one output row split
// its splits between them, each with its own running max, and the row's first warp merges their parts through
// shared memory. The kernel is latency-bound (one long sequence: 32 rows x 128 splits), so it is written for few
// dependent loads: one LSE per lane, then the O rows of 8 splits in flight per warp.
// On sm_90 the host launches it as a programmatic dependent of the split kernel, whose blocks release it as they
// start (ptx::launch_dependents): its launch overlaps the split kernel, and it waits for the partials
// (ptx::grid_dependency_wait) before reading them. It releases the kernel after it as it starts: the next call's
// split kernel, also a programmatic dependent, is then scheduled while this one runs and waits for it to complete.
#pragma once

#include "attention_decode_layout.cuh"
#include "attention_params.cuh"
#include "dtypes.cuh"
#include "ptx.cuh"
#include "tile/coords.cuh"
#include "tile/f16_types.cuh"

namespace fa_jit {

// At least 2 blocks per SM: with the block size alone ptxas aims at full occupancy (32 registers) and spills.
template <typename T, int kHeadDim, bool kVarlen = false>
__global__ void __launch_bounds__(decode_layout::kCombineWarps * 32, 2)
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
    __shared__ float part_m[kWarps], part_sum[kWarps];

    const int warps_per_row = decode_layout::combine_warps_per_row(p.num_splits);
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int sub = warp % warps_per_row;  // this warp takes splits sub, sub + warps_per_row, ...
    const long long rows = static_cast<long long>(p.batch) * p.heads_q * p.seqlen_q;
    const long long row = static_cast<long long>(blockIdx.x) * (kWarps / warps_per_row) + warp / warps_per_row;
    const bool live = row < rows;  // rows past the end still meet the barrier below
    launch_dependents();           // the next call's split kernel may be scheduled (it waits for this grid)
    grid_dependency_wait();        // launched as a programmatic dependent of the split kernel: its partials

    // Each warp merges its splits 32 at a time (one LSE per lane, then the O rows with their weights broadcast from
    // the lanes), keeping its own running max m, sum and O: a few dependent loads per warp, not one per split.
    float m = kNegInf, sum = 0.f;
    float acc[kVecsPerLane][4] = {};
    const int stride = 32 * warps_per_row;
    for (int base = sub; live && base < p.num_splits; base += stride) {
        const int s_lane = base + lane * warps_per_row;
        const float lse = s_lane < p.num_splits ? p.partial_lse[s_lane * rows + row] * kLog2e : kNegInf;
        const float m_new = fmaxf(m, warp_max(lse));
        if (m_new == kNegInf) continue;  // no split of this chunk saw a key (uniform over the warp)
        const float rescale = exp2_approx(m - m_new);
        m = m_new;
        sum *= rescale;
#pragma unroll
        for (int i = 0; i < kVecsPerLane; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[i][j] *= rescale;
        const float w_lane = exp2_approx(lse - m);
        sum += warp_sum(w_lane);
        const int n = min(32, (p.num_splits - base + warps_per_row - 1) / warps_per_row);
#pragma unroll 8
        for (int k = 0; k < n; ++k) {
            const float w = __shfl_sync(0xffffffffu, w_lane, k);
            const float* part = p.partial_o + ((base + k * warps_per_row) * rows + row) * kHeadDim;
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
    if (warps_per_row > 1) {  // uniform over the block: every thread meets the barrier
#pragma unroll
        for (int i = 0; i < kVecsPerLane; ++i) part_o[warp][lane + 32 * i] = {acc[i][0], acc[i][1], acc[i][2], acc[i][3]};
        if (lane == 0) part_m[warp] = m, part_sum[warp] = sum;
        __syncthreads();
        if (sub == 0) {  // the row's first warp rescales every warp's part to the row's max
            float m_row = m;
            for (int w = warp + 1; w < warp + warps_per_row; ++w) m_row = fmaxf(m_row, part_m[w]);
            if (m_row != kNegInf) {
                const float own = exp2_approx(m - m_row);
                sum *= own;
#pragma unroll
                for (int i = 0; i < kVecsPerLane; ++i)
#pragma unroll
                    for (int j = 0; j < 4; ++j) acc[i][j] *= own;
                for (int w = warp + 1; w < warp + warps_per_row; ++w) {
                    const float scale = exp2_approx(part_m[w] - m_row);  // 0 for a warp that saw no key
                    sum += scale * part_sum[w];
#pragma unroll
                    for (int i = 0; i < kVecsPerLane; ++i) {
                        const float4 x = part_o[w][lane + 32 * i];
                        acc[i][0] += scale * x.x, acc[i][1] += scale * x.y, acc[i][2] += scale * x.z,
                            acc[i][3] += scale * x.w;
                    }
                }
            }
            m = m_row;
        }
    }
    if (!live || sub != 0) return;

    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    const int token = static_cast<int>(row % p.seqlen_q);
    const long long bh = row / p.seqlen_q;
    const int head = static_cast<int>(bh % p.heads_q);
    const int batch = static_cast<int>(bh / p.heads_q);
    T* o = static_cast<T*>(p.o) + batch * p.o_batch_stride + head * p.o_head_stride + token * p.o_row_stride;
    long long lse_at = row;
    if constexpr (kVarlen) {
        int q0 = 0;  // the sequence's rows only (its keys may be paged: no cu_seqlens_k)
        if (token >= tile::packed_span(p.cu_seqlens_q, batch, p.total_q, p.seqlen_q, q0)) return;
        o = static_cast<T*>(p.o) + head * p.o_head_stride + static_cast<long long>(q0 + token) * p.o_row_stride;
        lse_at = static_cast<long long>(head) * p.total_q + q0 + token;
    }
#pragma unroll
    for (int i = 0; i < kVecsPerLane; ++i) {
        const int vec = lane + 32 * i;
        if (kVecs % 32 != 0 && vec >= kVecs) break;
        st_global_v2(o + 4 * vec, tile::pack2<kBf16>(acc[i][0] * inv, acc[i][1] * inv),
                     tile::pack2<kBf16>(acc[i][2] * inv, acc[i][3] * inv));
    }
    if (lane == 0 && p.lse != nullptr) p.lse[lse_at] = sum > 0.f ? (m + log2_approx(sum)) / kLog2e : kNegInf;
}

}  // namespace fa_jit
