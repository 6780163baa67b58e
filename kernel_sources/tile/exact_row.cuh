// One query row's attention computed again, exactly, from global memory by the 4 lanes of its quad: the settled max's
// fallback (attention_f16_ws.cu) for a row whose P overflowed fp32 in a key step (a score 120 or more above the row's
// running max, in log2 units). Slow (two passes over the row's keys, a dot product per key) and only for such inputs.
#pragma once

#include "dtypes.cuh"
#include "ptx.cuh"

namespace fa_jit::tile {

template <bool kBf16>
__device__ __forceinline__ float element(const unsigned short* p, long long i) {
    return kBf16 ? to_float(bf16_t{p[i]}) : to_float(half_t{p[i]});
}

// Row h (0: g, 1: g + 8) of the thread's fragment, written where `redo`; the whole warp runs the loops (quad sums
// shuffle across it). q: the row's Q; k / v: key 0 of its K / V; keys [0, keys_max) are visited (the warp's most);
// score(j, dot): key j's raw score from its dot product with the row's modifiers applied, or -inf where the row does
// not see key j. Leaves O unnormalized in the wgmma layout (o[b][nt][2 h + c] is column b * 64 + nt * 8 + 2 t + c), m
// in log2 units (-inf without keys) and l on lane t = 0 (the quad's sum is the row's), as the key loop does.
template <bool kBf16, int kHeadDim, int kDBlocks, int h, class Score>
__device__ __forceinline__ void exact_row(const unsigned short* q, const unsigned short* k, long long k_row_stride,
                                          const unsigned short* v, long long v_row_stride, int keys_max,
                                          float scale_log2, int t, bool redo, float (&o)[kDBlocks][8][4], float& m,
                                          float& l, float neg_inf, Score score) {
    const auto score_of = [&](int j) {
        float dot = 0.f;
        for (int i = t; i < kHeadDim; i += 4)
            dot = fmaf(element<kBf16>(q, i), element<kBf16>(k + j * k_row_stride, i), dot);
        return score(j, ptx::quad_sum(dot));
    };
    float row_max = neg_inf;
    for (int j = 0; j < keys_max; ++j) row_max = fmaxf(row_max, score_of(j));
    const float m_new = row_max == neg_inf ? neg_inf : row_max * scale_log2;
    const float m_use = row_max == neg_inf ? 0.f : m_new;
    float o_new[kDBlocks][8][2] = {};
    float l_new = 0.f;
    for (int j = 0; j < keys_max; ++j) {
        const float pj = ptx::exp2_approx(fmaf(score_of(j), scale_log2, -m_use));  // 0 for a hidden key (-inf)
        if (t == 0) l_new += pj;
        const unsigned short* vj = v + j * v_row_stride;
#pragma unroll
        for (int b = 0; b < kDBlocks; ++b)
#pragma unroll
            for (int nt = 0; nt < 8; ++nt)
#pragma unroll
                for (int c = 0; c < 2; ++c) {
                    const int col = b * 64 + nt * 8 + 2 * t + c;
                    if (col < kHeadDim) o_new[b][nt][c] = fmaf(pj, element<kBf16>(vj, col), o_new[b][nt][c]);
                }
    }
    if (!redo) return;
#pragma unroll
    for (int b = 0; b < kDBlocks; ++b)
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) o[b][nt][2 * h] = o_new[b][nt][0], o[b][nt][2 * h + 1] = o_new[b][nt][1];
    m = m_new;
    l = l_new;
}

}  // namespace fa_jit::tile
