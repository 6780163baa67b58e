// FlashAttention forward for fp16 / bf16 on Hopper (sm_90a only), compiled at run time by NVRTC: warpgroup MMA
// (wgmma) reading Q, K and V straight from shared memory, so that the four warps of a warpgroup share each operand
// read (mma.sync re-reads K and V once per warp, which bounds attention_f16.cu by shared-memory bandwidth on H100).
//
//   template <typename T, int kBlockM, int kBlockN, int kHeadDim, int kStages, bool kCausal, bool kEvenMN>
//   __global__ void attention_fwd_f16_wgmma(const __grid_constant__ AttentionParams p);
//
//   T        fa_jit::half_t or fa_jit::bf16_t (q, k, v, o all of type T; lse fp32).
//   kBlockM  query rows per block, 64 or 128: one warpgroup (128 threads) per 64 rows, each warp owning 16 of them.
//   kBlockN  keys per step, 64 or 128 (S = Q K^T in 64-key wgmma chunks).
//   kHeadDim exactly p.head_dim: 64, 128, 192 or 256 (P V in 64-column wgmma chunks).
//   kStages  K/V shared-memory buffers (cp.async ring), 2..4: tile j + kStages - 1 loads while j computes.
//   kCausal, kEvenMN: as in attention_fwd_f16 (bottom-right causal mask; no row bounds checks).
//
// Name expression: fa_jit::attention_fwd_f16_wgmma<fa_jit::bf16_t, 128, 64, 256, 2, false, true>
// Launch:          grid (ceil(seqlen_q / kBlockM), heads_q, batch), block 2 * kBlockM threads, dynamic shared memory
//                  wgmma_layout::smem_bytes(kBlockM, kBlockN, kHeadDim, kStages).
// Preconditions (validated by the host): 16-byte aligned q, k, v, o; strides multiples of 8 elements; seqlen_q >= 1.
//
// Shared memory: every tile is head_dim / 64 column blocks of [rows][64] with wgmma's 128-byte swizzle
// (wgmma_layout.cuh); cp.async fills them (zeros past seqlen), fence.proxy.async publishes them to wgmma.
// Per key tile, per warpgroup: S = Q K^T (wgmma, both operands from shared memory), mask, online softmax in
// registers (as attention_f16.cu), P converted to T in registers and fed as wgmma's register A operand against
// V (MN-major, transposed by the tensor core), 64 output columns at a time, two chunks in flight.
//
// Numerics as attention_fwd_f16: each tile's P V_j goes into a fresh accumulator and is added to the rescaled O with
// an ordinary FFMA (O = O * alpha + PV_j), so the tensor core's truncating accumulation does not bias long rows.
#pragma once

#include "attention_f16_common.cuh"
#include "attention_params.cuh"
#include "attention_wgmma_layout.cuh"
#include "dtypes.cuh"
#include "ptx.cuh"
#include "wgmma.cuh"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "attention_f16_wgmma.cu needs -arch=sm_90a: wgmma exists only on the arch-specific Hopper target"
#endif

namespace fa_jit {

template <typename T, int kBlockM_, int kBlockN_, int kHeadDim_, int kStages_>
struct AttentionFwdWgmmaTraits {
    static constexpr int kBlockM = kBlockM_;
    static constexpr int kBlockN = kBlockN_;
    static constexpr int kHeadDim = kHeadDim_;
    static constexpr int kStages = kStages_;
    static constexpr int kNWarps = kBlockM / 16;
    static constexpr int kNThreads = kNWarps * 32;
    static constexpr bool kBf16 = F16IsBf16<T>::value;

    static constexpr int kNTilesS = kBlockN / 8;    // 8-column n-tiles of S per thread row pair
    static constexpr int kChunksS = kBlockN / 64;   // 64-key wgmma chunks of S
    static constexpr int kDBlocks = kHeadDim / 64;  // 64-column blocks of Q, K, V and O
    static constexpr int kKSteps = kHeadDim / 16;   // k steps of Q K^T
    static constexpr unsigned kQBytes = 2u * kBlockM * kHeadDim;
    static constexpr unsigned kKVBytes = 2u * kBlockN * kHeadDim;

    static_assert(F16IsSupported<T>::value, "T must be fa_jit::half_t or fa_jit::bf16_t");
    static_assert(wgmma_layout::legal(kBlockM, kBlockN, kNWarps, kStages, kHeadDim),
                  "illegal tile (wgmma_layout::legal)");
};

namespace wgmma_detail {

using namespace ptx;      // cp_async_*, quad_sum, log2_approx, smem_address
using namespace f16_ops;  // pack2, epilogue accesses

// Byte offset of 16-byte chunk `chunk` (0 .. head_dim / 8) of row `row` in a tile of kRows rows: column block
// chunk / 8, then the 128-byte row, then the chunk XOR (row & 7).
template <int kRows>
__device__ __forceinline__ unsigned sw128(int row, int chunk) {
    return static_cast<unsigned>((chunk / 8) * (kRows * 128) + row * 128 + (((chunk % 8) ^ (row % 8)) * 16));
}

// Rows [row0, row0 + kRows) of a [rows_total, kHeadDim] matrix (row stride `stride`) -> swizzled shared tile; rows
// >= rows_total (checked unless kEven) are zero-filled. Consecutive threads copy consecutive 16 bytes of a row.
template <class Tr, int kRows, bool kEven>
__device__ __forceinline__ void load_tile(unsigned smem, const unsigned short* gmem, long long stride, int row0,
                                          int rows_total) {
    constexpr int kChunksRow = Tr::kHeadDim / 8;
    const int tid = threadIdx.x;
    if (Tr::kNThreads % kChunksRow == 0) {  // every thread keeps one column chunk: pointer bumps
        constexpr int kRowsPerIter = Tr::kNThreads / kChunksRow;
        const int ch = tid % kChunksRow;
        const int r0 = tid / kChunksRow;
        const unsigned short* src = gmem + static_cast<long long>(row0 + r0) * stride + ch * 8;
        const long long step = static_cast<long long>(kRowsPerIter) * stride;
#pragma unroll
        for (int i = 0; i * kRowsPerIter < kRows; ++i) {
            const int r = r0 + i * kRowsPerIter;
            if (kRows % kRowsPerIter != 0 && r >= kRows) break;
            const bool ok = kEven || row0 + r < rows_total;
            cp_async_16(smem + sw128<kRows>(r, ch), ok ? src : gmem, ok ? 16 : 0);
            src += step;
        }
    } else {  // head_dim 192 with 128 threads per warpgroup
        constexpr int kChunks = kRows * kChunksRow;
#pragma unroll
        for (int c0 = 0; c0 < kChunks; c0 += Tr::kNThreads) {
            const int c = c0 + tid;
            if (kChunks % Tr::kNThreads != 0 && c >= kChunks) break;
            const int r = c / kChunksRow;
            const int ch = c % kChunksRow;
            const bool ok = kEven || row0 + r < rows_total;
            cp_async_16(smem + sw128<kRows>(r, ch),
                        ok ? gmem + static_cast<long long>(row0 + r) * stride + ch * 8 : gmem, ok ? 16 : 0);
        }
    }
}

// Sets to -inf the scores of one m-tile that lie past seqlen_k (unless kEvenMN) or above the causal diagonal.
// row_0, col_0: the global query row and key column of the warp's 16 x kBlockN corner; lane = 4g + t. neg_inf comes
// from the caller, computed once per kernel (neg_inf_f32() is an inline-asm move the compiler repeats per call).
template <bool kEvenMN, bool kCausal, int kNT>
__device__ __forceinline__ void mask_scores(float (&s)[kNT][4], int row_0, int col_0, int g, int t, int seqlen_k,
                                            int causal_offset, float neg_inf) {
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int row = row_0 + (e / 2) * 8 + g;
            const int col = col_0 + nt * 8 + 2 * t + (e % 2);
            if ((!kEvenMN && col >= seqlen_k) || (kCausal && col > row + causal_offset)) s[nt][e] = neg_inf;
        }
}

// One online-softmax step (log2 units, the scale folded into the exponent) for the two rows a thread holds of one
// m-tile: updates the running max m and sum l, returns O's rescale factor alpha = exp2(m_old - m_new) per row, and
// writes P = exp2(s * scale_log2 - m_new) packed to T pairs: p[nt][h] = columns (2t, 2t+1) of row g + 8h.
// The row max is taken on raw scores and then scaled: scale_log2 must be > 0. neg_inf as for mask_scores.
// (attention_f16.cu does the same steps inline over its m-tiles: sharing this code changed ptxas's register
// allocation there, which sits at 255 registers, enough to spill in a configuration the CI keeps spill-free.)
template <bool kBf16, int kNT>
__device__ __forceinline__ void online_softmax(const float (&s)[kNT][4], float (&m)[2], float (&l)[2],
                                               float (&alpha)[2], unsigned (&p)[kNT][2], float scale_log2,
                                               float neg_inf) {
    float m_use[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float row_max = neg_inf;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) row_max = fmaxf(row_max, fmaxf(s[nt][2 * h], s[nt][2 * h + 1]));
        row_max = ptx::quad_max(row_max) * scale_log2;  // max commutes with a positive scale; -inf stays -inf
        const float m_new = fmaxf(m[h], row_max);
        m_use[h] = m_new == neg_inf ? 0.f : m_new;     // rows with no visible key yet: exp2(-inf - 0) = 0
        alpha[h] = ptx::exp2_approx(m[h] - m_use[h]);  // first tile / no key yet: 0 (O is 0 anyway)
        m[h] = m_new;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float row_sum = 0.f;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
            const float p0 = ptx::exp2_approx(fmaf(s[nt][2 * h], scale_log2, -m_use[h]));
            const float p1 = ptx::exp2_approx(fmaf(s[nt][2 * h + 1], scale_log2, -m_use[h]));
            row_sum += p0 + p1;
            p[nt][h] = pack2<kBf16>(p0, p1);
        }
        l[h] = l[h] * alpha[h] + row_sum;
    }
}

// O = O * alpha + PV for one 64-column block (alpha per accumulator row: e / 2).
__device__ __forceinline__ void rescale_add(float (&o)[8][4], const float (&alpha)[2], const float (&pv)[8][4]) {
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[i][e] = fmaf(o[i][e], alpha[e / 2], pv[i][e]);
}

}  // namespace wgmma_detail

template <typename T, int kBlockM, int kBlockN, int kHeadDim, int kStages, bool kCausal, bool kEvenMN>
__global__ void __launch_bounds__(kBlockM * 2, 1) attention_fwd_f16_wgmma(const __grid_constant__ AttentionParams p) {
    using namespace wgmma_detail;
    using Tr = AttentionFwdWgmmaTraits<T, kBlockM, kBlockN, kHeadDim, kStages>;
    constexpr bool kBf16 = Tr::kBf16;
    constexpr int kNTilesS = Tr::kNTilesS;
    constexpr int kDBlocks = Tr::kDBlocks;
    constexpr unsigned kKVBytes = Tr::kKVBytes;
    const float kNegInf = neg_inf_f32();

    extern __shared__ float4 smem_raw[];
    const unsigned sQ = (smem_address(smem_raw) + 1023u) & ~1023u;  // swizzle atoms need 1024-byte alignment
    const unsigned sKV = sQ + Tr::kQBytes;                          // stage s: K at sKV + 2 s kKVBytes, V right after

    const int m_block = kCausal ? static_cast<int>(gridDim.x - 1 - blockIdx.x) : static_cast<int>(blockIdx.x);
    const int head = blockIdx.y;
    const int batch = blockIdx.z;
    const int head_kv = head / p.group_size;
    const int m0 = m_block * kBlockM;

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int g = lane / 4;
    const int t = lane % 4;
    const int warp_row0 = warp * 16;      // this warp's 16 accumulator rows
    const int wg_row0 = (warp / 4) * 64;  // its warpgroup's 64 rows (the A operand of S)

    const unsigned short* q =
        static_cast<const unsigned short*>(p.q) + batch * p.q_batch_stride + head * p.q_head_stride;
    const unsigned short* k =
        static_cast<const unsigned short*>(p.k) + batch * p.k_batch_stride + head_kv * p.k_head_stride;
    const unsigned short* v =
        static_cast<const unsigned short*>(p.v) + batch * p.v_batch_stride + head_kv * p.v_head_stride;
    unsigned short* o = static_cast<unsigned short*>(p.o) + batch * p.o_batch_stride + head * p.o_head_stride;
    float* lse = p.lse == nullptr ? nullptr : p.lse + (static_cast<long long>(batch) * p.heads_q + head) * p.seqlen_q;

    int n_block_max = (p.seqlen_k + kBlockN - 1) / kBlockN;
    if (kCausal) {
        const int last_visible = m0 + kBlockM - 1 + p.causal_offset;
        n_block_max = min(n_block_max, last_visible < 0 ? 0 : last_visible / kBlockN + 1);
    }

    float acc_o[kDBlocks][8][4];
#pragma unroll
    for (int dc = 0; dc < kDBlocks; ++dc)
#pragma unroll
        for (int i = 0; i < 8; ++i) acc_o[dc][i][0] = acc_o[dc][i][1] = acc_o[dc][i][2] = acc_o[dc][i][3] = 0.f;
    float m_i[2] = {kNegInf, kNegInf};
    float l_i[2] = {0.f, 0.f};

    // ---- prologue: Q_i with the first key tile in group 0, then kStages - 2 more tiles
    // --------------------------------
    if (n_block_max > 0) {
        load_tile<Tr, kBlockM, kEvenMN>(sQ, q, p.q_row_stride, m0, p.seqlen_q);
#pragma unroll
        for (int s = 0; s < kStages - 1; ++s) {
            const int nb = n_block_max - 1 - s;
            if (nb >= 0) {
                const unsigned kb = sKV + s * 2 * kKVBytes;
                load_tile<Tr, kBlockN, kEvenMN>(kb, k, p.k_row_stride, nb * kBlockN, p.seqlen_k);
                load_tile<Tr, kBlockN, kEvenMN>(kb + kKVBytes, v, p.v_row_stride, nb * kBlockN, p.seqlen_k);
            }
            cp_async_commit();
        }
    }

    int stage = 0;
    for (int it = 0; it < n_block_max; ++it) {
        const int n_block = n_block_max - 1 - it;  // last tile first: the masked tiles come first
        const int n0 = n_block * kBlockN;
        cp_async_wait<kStages - 2>();
        wgmma::fence_proxy_async();
        __syncthreads();  // tile `it` landed and is visible to wgmma; every warpgroup is done with the buffer refilled
        {
            const int nb = n_block - (kStages - 1);
            if (nb >= 0) {
                int ls = stage + kStages - 1;
                if (ls >= kStages) ls -= kStages;
                const unsigned kb = sKV + ls * 2 * kKVBytes;
                load_tile<Tr, kBlockN, kEvenMN>(kb, k, p.k_row_stride, nb * kBlockN, p.seqlen_k);
                load_tile<Tr, kBlockN, kEvenMN>(kb + kKVBytes, v, p.v_row_stride, nb * kBlockN, p.seqlen_k);
            }
            cp_async_commit();
        }
        const unsigned sK = sKV + stage * 2 * kKVBytes;
        const unsigned sV = sK + kKVBytes;
        if (++stage == kStages) stage = 0;

        // ---- S = Q K^T: k step ks reads 16 columns (32 bytes) inside column block ks / 4
        // ------------------------------
        float acc_s[kNTilesS][4];
        wgmma::fence();
#pragma unroll
        for (int ks = 0; ks < Tr::kKSteps; ++ks) {
            const unsigned long long a =
                wgmma::desc_sw128(sQ + (ks / 4) * (kBlockM * 128u) + wg_row0 * 128u + (ks % 4) * 32u, 16, 1024);
#pragma unroll
            for (int nc = 0; nc < Tr::kChunksS; ++nc) {
                const unsigned long long b =
                    wgmma::desc_sw128(sK + (ks / 4) * (kBlockN * 128u) + nc * (64 * 128u) + (ks % 4) * 32u, 16, 1024);
                wgmma::mma_ss<kBf16>(acc_s + 8 * nc, a, b, ks > 0);
            }
        }
        wgmma::commit();
        wgmma::wait<0>();
        wgmma::hold(acc_s);

        // ---- mask, online softmax
        // ------------------------------------------------------------------------------------
        const bool need_mask =
            (!kEvenMN && n0 + kBlockN > p.seqlen_k) || (kCausal && n0 + kBlockN - 1 > m0 + p.causal_offset);
        if (need_mask)
            mask_scores<kEvenMN, kCausal>(acc_s, m0 + warp_row0, n0, g, t, p.seqlen_k, p.causal_offset, kNegInf);
        unsigned p_frag[kNTilesS][2];
        float alpha[2];
        online_softmax<kBf16>(acc_s, m_i, l_i, alpha, p_frag, p.scale_log2, kNegInf);

        // ---- O = O * alpha + P V_j, 64 columns at a time: chunk dc computes while chunk dc - 1 is added to O
        // ---------
        float pv[2][8][4];
#pragma unroll
        for (int dc = 0; dc < kDBlocks; ++dc) {
            wgmma::fence();
#pragma unroll
            for (int kc = 0; kc < kBlockN / 16; ++kc) {
                // A fragment of P for keys 16kc..16kc+15: n-tiles 2kc (a0, a1) and 2kc + 1 (a2, a3). V rows 16kc..: two
                // 8-row groups of 1024 bytes inside column block dc.
                const unsigned a[4] = {p_frag[2 * kc][0], p_frag[2 * kc][1], p_frag[2 * kc + 1][0],
                                       p_frag[2 * kc + 1][1]};
                const unsigned long long b =
                    wgmma::desc_sw128(sV + dc * (kBlockN * 128u) + kc * (16 * 128u), kBlockN * 128u, 1024);
                wgmma::mma_rs_bt<kBf16>(pv[dc % 2], a, b, kc > 0);
            }
            wgmma::commit();
            if (dc > 0) {
                wgmma::wait<1>();
                wgmma::hold(pv[(dc - 1) % 2]);
                rescale_add(acc_o[dc - 1], alpha, pv[(dc - 1) % 2]);
            }
        }
        wgmma::wait<0>();
        wgmma::hold(pv[(kDBlocks - 1) % 2]);
        rescale_add(acc_o[kDBlocks - 1], alpha, pv[(kDBlocks - 1) % 2]);
    }
    cp_async_wait<0>();  // nothing left in flight at exit (empty groups only)

    // ================================================================================================================
    // Epilogue: O / l through shared memory (16-byte coalesced stores), LSE = (m + log2 l) * ln 2; rows with no
    // visible key: O = 0, LSE = -inf. Staging reuses this warp's own Q rows: only its warpgroup's wgmmas read them,
    // and every one of those has completed (wait<0> above), so a warp barrier orders the rest.
    // ================================================================================================================
    __syncwarp();
    const unsigned o_stage = sQ + (warp_row0 + g) * 128u + 4u * t;  // row & 7 == g: chunk nt lives at nt ^ g
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const float l = quad_sum(l_i[h]);
        const bool any = l > 0.f;
        const float inv_l = any ? 1.f / l : 0.f;
        const int row = m0 + warp_row0 + h * 8 + g;
#pragma unroll
        for (int dc = 0; dc < kDBlocks; ++dc)
#pragma unroll
            for (int nt = 0; nt < 8; ++nt)
                st_shared_b32(o_stage + dc * (kBlockM * 128u) + h * (8 * 128u) + ((nt ^ g) * 16u),
                              pack2<kBf16>(acc_o[dc][nt][2 * h] * inv_l, acc_o[dc][nt][2 * h + 1] * inv_l));
        if (lse != nullptr && t == 0 && (kEvenMN || row < p.seqlen_q))
            lse[row] = any ? (m_i[h] + log2_approx(l)) * 0.69314718055994531f : kNegInf;
    }
    __syncwarp();  // the warp's O rows are in shared memory

    // Copy out: lane i takes 16-byte chunk i, i + 32, ... of the warp's [16, kHeadDim] block, consecutive lanes
    // storing consecutive 16 bytes of a row.
    constexpr int kChunksO = kHeadDim / 8;
    constexpr int kChunksWarp = 16 * kChunksO;
    const int o_row0 = m0 + warp_row0;
#pragma unroll
    for (int c0 = 0; c0 < kChunksWarp; c0 += 32) {
        const int c = c0 + lane;
        const int r = c / kChunksO;
        const int ch = c % kChunksO;
        if (kEvenMN || o_row0 + r < p.seqlen_q) {
            unsigned val[4];
            ld_shared_v4(val, sQ + sw128<kBlockM>(warp_row0 + r, ch));
            st_global_v4(o + static_cast<long long>(o_row0 + r) * p.o_row_stride + ch * 8, val);
        }
    }
}

}  // namespace fa_jit
