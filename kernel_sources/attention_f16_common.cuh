// Pieces shared by the two fp16/bf16 attention kernels (attention_f16.cu: mma.sync; attention_f16_wgmma.cu: wgmma).
// Both hold S and O in the m16n8 accumulator layout: lane = 4g + t holds rows g and g + 8 of a 16-row m-tile,
// columns 2t, 2t + 1 of each 8-column n-tile ([nt][e]: row g + 8 (e >> 1), column 8 nt + 2t + (e & 1)).
#pragma once

#include "dtypes.cuh"
#include "ptx.cuh"

namespace fa_jit {

template <typename T>
struct F16IsBf16 {
    static constexpr bool value = false;
};
template <>
struct F16IsBf16<bf16_t> {
    static constexpr bool value = true;
};
template <typename T>
struct F16IsSupported {
    static constexpr bool value = false;
};
template <>
struct F16IsSupported<half_t> {
    static constexpr bool value = true;
};
template <>
struct F16IsSupported<bf16_t> {
    static constexpr bool value = true;
};

namespace f16_ops {

// Two floats -> one 32-bit register of two 16-bit values, `lo` in the low half (round to nearest even).
template <bool kBf16>
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
    unsigned r;
    if (kBf16)
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// Plain 4- and 16-byte shared / global accesses for the epilogues (inline PTX: no toolkit vector types under NVRTC).
__device__ __forceinline__ void st_shared_b32(unsigned addr, unsigned v) {
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
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

// Sets to -inf the scores of one m-tile that lie past seqlen_k (unless kEvenMN) or above the causal diagonal.
// row_g: the global query row of accumulator row g; col_0: the global key column of n-tile 0, column 0.
template <bool kEvenMN, bool kCausal, int kNT>
__device__ __forceinline__ void mask_scores(float (&s)[kNT][4], int row_g, int col_0, int seqlen_k, int causal_offset) {
    const float neg_inf = neg_inf_f32();
    const int t = threadIdx.x % 4;
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int row = row_g + (e / 2) * 8;
            const int col = col_0 + nt * 8 + 2 * t + (e % 2);
            if ((!kEvenMN && col >= seqlen_k) || (kCausal && col > row + causal_offset)) s[nt][e] = neg_inf;
        }
}

// One online-softmax step (log2 units, the scale folded into the exponent) for the two rows a thread holds of one
// m-tile: updates the running max m and sum l, returns O's rescale factor alpha = exp2(m_old - m_new) per row, and
// writes P = exp2(s * scale_log2 - m_new) packed to T pairs: p[nt][h] = columns (2t, 2t+1) of row g + 8h.
// The row max is taken on raw scores and then scaled: scale_log2 must be > 0.
template <bool kBf16, int kNT>
__device__ __forceinline__ void online_softmax(const float (&s)[kNT][4], float (&m)[2], float (&l)[2],
                                               float (&alpha)[2], unsigned (&p)[kNT][2], float scale_log2) {
    const float neg_inf = neg_inf_f32();
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

}  // namespace f16_ops
}  // namespace fa_jit
