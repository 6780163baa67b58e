// Causal / bounds masking of score fragments.
//
// Fragment layout (the m16n8 accumulator of mma.sync m16n8k8 / m16n8k16 and of wgmma, the same for all three
// kernels): lane = 4 g + t; for each 8-column n-tile nt a thread holds s[nt][e], e = 2 h + c, at row g + 8 h and
// column nt * 8 + 2 t + c of a 16-row block.
//
// A key column col is masked for query row row when col >= seqlen_k (unless kEvenMN: every tile is full) or, with
// kCausal, when col > row + causal_offset (bottom-right aligned: the last query row sees the last key).
#pragma once

namespace fa_jit::tile {

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

}  // namespace fa_jit::tile
