// Causal / bounds masking of score fragments.
//
// Fragment layout (the m16n8 accumulator of mma.sync m16n8k8 / m16n8k16 and of wgmma, the same for all three
// kernels): lane = 4 g + t; for each 8-column n-tile nt a thread holds s[nt][e], e = 2 h + c, at row g + 8 h and
// column nt * 8 + 2 t + c of a 16-row block.
//
// A key column col is masked for query row row when col >= seqlen_k (unless kEvenMN: every tile is full) or, with
// kCausal, when col > row + causal_offset (bottom-right aligned: the last query row sees the last key).
//
// Score modifiers (kMods, the mods:: bits of attention_params.cuh) through ScoreMod: the sliding window hides
// col < row + offset - left and col > row + offset + right, and narrows the key tiles a query tile visits
// (key_span); softcap and ALiBi change every visible score (modify_fragment). A kernel without them (kMods 0)
// compiles exactly the code it had before: every added line sits under a compile-time condition.
//
// Window origin: a kernel whose span starts at tile `first` may move its K / V bases to key first * kBlockN and count
// keys from there, with seqlen_k and the offset reduced by first * kBlockN (KeySpan::shift): every mask and bias is
// written in row + offset - col, which the shift leaves unchanged.
#pragma once

#include "attention_params.cuh"
#include "ptx.cuh"
#include "tile/softmax.cuh"

namespace fa_jit::tile {

// The modifiers' per-block values: one head's slope, the window, the softcap factor.
template <int kMods>
struct ScoreMod {
    static constexpr bool kWindow = (kMods & mods::kWindow) != 0;
    static constexpr bool kSoftcap = (kMods & mods::kSoftcap) != 0;
    static constexpr bool kAlibi = (kMods & mods::kAlibi) != 0;
    int left, right;      // window sides (an unbounded side reaches past every key)
    float softcap_scale;  // scale / softcap: the raw score becomes tanh(q.k * softcap_scale)
    float slope;          // ALiBi: slope[head] in raw-score units

    static __device__ __forceinline__ ScoreMod make(const AttentionParams& p, int head) {
        ScoreMod m{};
        if (kWindow) m.left = p.window_left, m.right = p.window_right;
        if (kSoftcap) m.softcap_scale = p.softcap_scale;
        if (kAlibi) m.slope = slope_of(p, head);
        return m;
    }
    // Query head `head`'s ALiBi slope in raw-score units.
    static __device__ __forceinline__ float slope_of(const AttentionParams& p, int head) {
        return kAlibi ? p.alibi_slopes[head] * p.alibi_unit : 0.f;
    }
    // Is key col outside the window of query row? (offset: the causal offset in the kernel's key origin)
    __device__ __forceinline__ bool outside(int row, int col, int offset) const {
        return kWindow && (col < row + offset - left || col > row + offset + right);
    }
    // s after softcap (tanh.approx), or s.
    __device__ __forceinline__ float softcapped(float s) const {
        return kSoftcap ? ptx::tanh_approx(s * softcap_scale) : s;
    }
    // The raw score of (row, col) after softcap and ALiBi. kExact: tanhf (the fp32 family's accuracy), else
    // tanh.approx.
    template <bool kExact = false>
    __device__ __forceinline__ float apply(float s, int row, int col, int offset) const {
        return modify<kExact>(s, row + offset - col, slope);
    }
    // The same for a row of its own slope (packed decode rows mix query heads); diagonal_distance: row + offset - col.
    template <bool kExact = false>
    __device__ __forceinline__ float modify(float s, int diagonal_distance, float row_slope) const {
        if (kSoftcap) s = kExact ? tanhf(s * softcap_scale) : ptx::tanh_approx(s * softcap_scale);
        if (kAlibi)
            s = fmaf(-row_slope, static_cast<float>(diagonal_distance < 0 ? -diagonal_distance : diagonal_distance), s);
        return s;
    }
};

// Window borders: does the key tile [n0, n0 + kBlockN) cross the window of some row of [m0, m0 + kBlockM)? The last
// row has the rightmost left border, the first row the leftmost right border.
template <int kBlockM, int kBlockN, int kMods>
__device__ __forceinline__ bool window_needs_mask(int n0, int m0, int offset, const ScoreMod<kMods>& mod) {
    return ScoreMod<kMods>::kWindow &&
           (n0 < m0 + kBlockM - 1 + offset - mod.left || n0 + kBlockN - 1 > m0 + offset + mod.right);
}

// Does the key tile [n0, n0 + kBlockN) need a mask for some row of the query tile starting at m0? Only the tile that
// straddles seqlen_k and those crossing the causal diagonal do; the others skip the per-element compares.
template <int kBlockN, bool kEvenMN, bool kCausal>
__device__ __forceinline__ bool tile_needs_mask(int n0, int m0, int seqlen_k, int causal_offset) {
    static_assert(kBlockN % 8 == 0, "key tiles are whole 8-column n-tiles");
    return (!kEvenMN && n0 + kBlockN > seqlen_k) || (kCausal && n0 + kBlockN - 1 > m0 + causal_offset);
}

// Is key column col masked for query row row?
template <bool kEvenMN, bool kCausal>
__device__ __forceinline__ bool key_masked(int row, int col, int seqlen_k, int causal_offset) {
    return (!kEvenMN && col >= seqlen_k) || (kCausal && col > row + causal_offset);
}

// The row and column of fragment element e of n-tile nt (row_0 / col_0: the 16-row block's corner).
__device__ __forceinline__ int frag_row(int row_0, int e, int g) {
    return row_0 + (e / 2) * 8 + g;
}
__device__ __forceinline__ int frag_col(int col_0, int nt, int e, int t) {
    return col_0 + nt * 8 + 2 * t + (e % 2);
}

// Row h's (0: g, 1: g + 8) distance to the fragment's column 2 t, row + offset - (col_0 + 2 t), as a float: the ALiBi
// distance of element (nt, c) is this minus nt * 8 + c, with no integer conversion per score.
__device__ __forceinline__ float frag_distance(int row_0, int h, int g, int col_0, int t, int offset) {
    return static_cast<float>(frag_row(row_0, 2 * h, g) + offset - col_0 - 2 * t);
}

// s[kNT][4]: the scores of one 16-row block; row_0 / col_0: the global query row and key column of its corner.
// Masked scores become neg_inf, which the caller computes once per kernel (neg_inf_f32() is an inline-asm move that
// the compiler repeats per call).
template <bool kEvenMN, bool kCausal, int kNT>
__device__ __forceinline__ void mask_fragment(float (&s)[kNT][4], int row_0, int col_0, int g, int t, int seqlen_k,
                                              int causal_offset, float neg_inf) {
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            if (key_masked<kEvenMN, kCausal>(frag_row(row_0, e, g), frag_col(col_0, nt, e, t), seqlen_k, causal_offset))
                s[nt][e] = neg_inf;
        }
}

// mask_fragment with the window: also hides the keys outside each row's window. Each row's visible keys are one
// interval [lo, hi], worked out once per row relative to the thread's first column (col_0 + 2 t): an element is then
// two compares of its constant column offset (nt * 8 + c) where the four conditions took up to four compares of
// computed columns (windowed rows 3-6 % faster at 16k). Without a window the modifiers hide nothing, and the plain
// form measured 1-2 % faster on softcapped rows.
template <bool kEvenMN, bool kCausal, int kMods, int kNT>
__device__ __forceinline__ void mask_fragment(float (&s)[kNT][4], int row_0, int col_0, int g, int t, int seqlen_k,
                                              int causal_offset, float neg_inf, const ScoreMod<kMods>& mod) {
    if constexpr (!ScoreMod<kMods>::kWindow) {
        mask_fragment<kEvenMN, kCausal>(s, row_0, col_0, g, t, seqlen_k, causal_offset, neg_inf);
        return;
    }
    int lo[2], hi[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int first = col_0 + 2 * t;
        const int diagonal = frag_row(row_0, 2 * h, g) + causal_offset - first;  // row + offset, from `first`
        hi[h] = kEvenMN ? kNT * 8 : seqlen_k - 1 - first;
        if (kCausal) hi[h] = min(hi[h], diagonal);
        hi[h] = min(hi[h], diagonal + mod.right);
        lo[h] = diagonal - mod.left;
    }
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int k = nt * 8 + e % 2;
            if (k < lo[e / 2] || k > hi[e / 2]) s[nt][e] = neg_inf;
        }
}

// Softcap and ALiBi on every score of a 16-row fragment (before masking, which then overwrites hidden scores). The
// ALiBi distances come from one conversion per row (frag_distance).
template <int kMods, int kNT>
__device__ __forceinline__ void modify_fragment(float (&s)[kNT][4], int row_0, int col_0, int g, int t, int offset,
                                                const ScoreMod<kMods>& mod) {
    if constexpr (ScoreMod<kMods>::kSoftcap || ScoreMod<kMods>::kAlibi) {
        float d[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) d[h] = frag_distance(row_0, h, g, col_0, t, offset);
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                float x = s[nt][e];
                if (ScoreMod<kMods>::kSoftcap) x = ptx::tanh_approx(x * mod.softcap_scale);
                if (ScoreMod<kMods>::kAlibi) x = fmaf(-mod.slope, fabsf(d[e / 2] - (nt * 8 + e % 2)), x);
                s[nt][e] = x;
            }
    }
}

// ALiBi off its diagonal. On a key tile whose distances row + offset - col all have one sign for every row of the
// query tile (side +1: at or below the diagonal, -1: at or above), -slope * |d_h - (nt * 8 + c)| (d_h:
// frag_distance) splits into side * slope * (nt * 8 + c), one FFMA with an immediate per score, and -side * slope
// * d_h, one per row and lane, which the softmax adds to the row's max and exponent offset (RowBias,
// tile/softmax.cuh) instead of to every score. Tiles holding both signs take modify_fragment (alibi_crosses).
template <int kBlockM, int kBlockN>
__device__ __forceinline__ bool alibi_crosses(int n0, int m0, int offset) {
    return n0 + kBlockN - 1 > m0 + offset && n0 < m0 + kBlockM - 1 + offset;
}
template <int kBlockN>
__device__ __forceinline__ float alibi_side(int n0, int m0, int offset) {
    return n0 + kBlockN - 1 <= m0 + offset ? 1.f : -1.f;
}
template <int kMods, int kNT>
__device__ __forceinline__ void modify_fragment_one_side(float (&s)[kNT][4], int row_0, int col_0, int g, int t,
                                                         int offset, const ScoreMod<kMods>& mod, float side,
                                                         RowBias& bias) {
    static_assert(ScoreMod<kMods>::kAlibi, "the ALiBi split needs ALiBi");
    const float side_slope = side * mod.slope;
#pragma unroll
    for (int h = 0; h < 2; ++h) bias.b[h] = -side_slope * frag_distance(row_0, h, g, col_0, t, offset);
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
            s[nt][e] = fmaf(side_slope, static_cast<float>(nt * 8 + e % 2), mod.softcapped(s[nt][e]));
}

}  // namespace fa_jit::tile
