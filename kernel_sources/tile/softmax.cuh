// Online softmax over score fragments (FlashAttention-2, Algorithm 1), in log2 units: exp2 with the softmax scale
// folded in (scale_log2 = scale * log2 e), so exp(s * scale - m) is one ex2 of an FFMA.
//
// Per query row a thread keeps the running max m (log2 units) and its own part of the running sum l (the 2 columns
// per n-tile it holds; the quad's parts are added in the epilogue). For a new key tile with scores s:
//   m_new = max(m, max_j s_j * scale_log2),  alpha = exp2(m - m_new),  p_j = exp2(s_j * scale_log2 - m_new),
//   l = l * alpha + sum_j p_j,  and O = O * alpha + P V_j.
// Rows that have seen no visible key yet keep m = -inf; they subtract 0 instead, so exp2(-inf - 0) = 0 (not NaN).
// Fresh accumulator: each tile's P V_j is computed into a zeroed accumulator and added to the rescaled O in fp32
// (O = O * alpha + PV_j). The tensor core accumulates with truncation; accumulating into O itself would shrink it by
// ~2^-24 per MMA, an error that grows with seqlen_k. A fresh accumulator keeps that error flat.
//
// Fragment layout as in tile/mask.cuh: s[nt][2 h + c] is row g + 8 h, column nt * 8 + 2 t + c; one row lives in the 4
// lanes of a quad, so row reductions are two xor-shuffles.
//
// kScaled selects where the scale is applied:
//   false (fp16 / bf16): s holds raw scores; the row max is taken on them and then scaled, which needs
//          scale_log2 > 0 (max commutes only with a positive scale); p = exp2(fmaf(s, scale_log2, -m)).
//   true (fp32): the caller already multiplied s by scale_log2 (any finite scale, negative included); the running
//          max enters the row max; p = exp2(s - m). The per-row sum then adds p0 and p1 one at a time.
#pragma once

#include "exp2_fma.cuh"
#include "ptx.cuh"

namespace fa_jit::tile {

// Forms of the softmax's code that give the same numbers bit for bit (p >= +0, and fmaxf drops a NaN, so neither seed
// changes a result) but that ptxas schedules differently; which one runs fastest differs from kernel to kernel by up to
// 6 %, so each kernel names its own (attention_f16_ws.cu, kSoftmaxForm; bench/NOTES.md, "The softmax's code forms").
namespace softmax_form {
constexpr int kMaxSeed = 1;          // a row's max starts from its first n-tile, not from -inf
constexpr int kSumSeed = 2;          // a row's sum starts from its first pair, not from 0
constexpr int kRowsInterleaved = 4;  // both rows' exponentials n-tile by n-tile, not one row after the other
constexpr int kRowsReversed = 8;     // row g + 8 before row g, in the maxima and in the exponentials
}  // namespace softmax_form

// Row h (0: row g, 1: row g + 8) of one 16-row block: updates m and returns the max to subtract (0 for a row with no
// visible key yet) and, in alpha, O's rescale factor exp2(m_old - m_new) (0 on the first tile: O is 0 anyway).
// kLazyLog2 >= 0 (raw scores only): a row keeps m, with alpha = 1 exactly, unless the tile's max passes it by more
// than kLazyLog2 (log2 units), so that a warp whose rows all keep theirs may skip O's rescale (alpha_is_one). 0: m
// keeps only where it did anyway (no new max), the same numbers as -1 (off). n > 0: P stays below 2^n (within fp32,
// fp16 and bf16) and fewer tiles rescale, but the row's largest score no longer maps to exactly 1 in P: the error
// grows (bench/NOTES.md, "A lazy running max"). lazy_log2: the threshold at run time (kLazyLog2 >= 0 only), so that
// a kernel may keep exact numbers on a row's first keys and go lazy later.
// kRowBias (raw scores only): the thread's scores of row h all lack the same `bias` (raw units, one per lane: see
// RowBias), added to the thread's max before the quad's.
template <bool kScaled, int kNT, int kLazyLog2 = -1, bool kRowBias = false, int kForm = 0>
__device__ __forceinline__ float softmax_row_max(const float (&s)[kNT][4], int h, float& m, float& alpha,
                                                 float scale_log2, float neg_inf,
                                                 float lazy_log2 = static_cast<float>(kLazyLog2), float bias = 0.f) {
    static_assert(kNT >= 1, "at least one 8-column n-tile");
    static_assert(kLazyLog2 < 0 || !kScaled, "a lazy max needs the running max outside the row max");
    static_assert(!kRowBias || !kScaled, "a row bias applies to raw scores");
    constexpr bool kSeed = (kForm & softmax_form::kMaxSeed) != 0;
    float row_max = kSeed ? fmaxf(s[0][2 * h], s[0][2 * h + 1]) : kScaled ? m : neg_inf;
    if (kScaled && kSeed) row_max = fmaxf(m, row_max);
#pragma unroll
    for (int nt = kSeed ? 1 : 0; nt < kNT; ++nt) row_max = fmaxf(row_max, fmaxf(s[nt][2 * h], s[nt][2 * h + 1]));
    if (kRowBias) row_max += bias;
    row_max = ptx::quad_max(row_max);
    // Raw scores: the max commutes with a positive scale, and -inf stays -inf.
    float m_new = kScaled ? row_max : fmaxf(m, row_max * scale_log2);
    // A row that has seen keys (m finite; -inf - -inf is NaN and fails the test) keeps m while the new max is close.
    const bool keep = kLazyLog2 >= 0 && m_new - m <= lazy_log2;
    if (keep) m_new = m;
    const float m_use = m_new == neg_inf ? 0.f : m_new;
    alpha = keep ? 1.f : ptx::exp2_approx(m - m_use);
    m = m_new;
    return m_use;
}

// Which exponentials leave the MUFU pipe: n-tiles nt with nt % 8 < kOnFma of every 8 take exp2_fma<kDegree>
// (exp2_fma.cuh: a polynomial on the FMA pipe) instead of ex2, for kernels whose MUFU pipe binds (softcap's tanh
// doubles its work). 0 (the default): all ex2.
template <int kOnFma_ = 0, int kDegree_ = 3>
struct Exp2Split {
    static constexpr int kOnFma = kOnFma_, kDegree = kDegree_;
    static_assert(kOnFma >= 0 && kOnFma <= 8, "n-tiles per 8");
    // nt: a constant once the caller's loop is unrolled, so the choice costs nothing.
    static __device__ __forceinline__ float exp2(float x, int nt) {
        return nt % 8 < kOnFma ? exp2_fma<kDegree>(x) : ptx::exp2_approx(x);
    }
};

// The running sum of a row's exponentials, pair by pair (raw scores), starting from 0 or from the first pair
// (softmax_form::kSumSeed).
template <int kForm>
__device__ __forceinline__ float add_pair(float row_sum, int nt, float p0, float p1) {
    return (kForm & softmax_form::kSumSeed) != 0 && nt == 0 ? p0 + p1 : row_sum + (p0 + p1);
}

// Row h: p = exp2(s * scale_log2 - m_use) for the thread's columns, handed to store(nt, p0, p1) (columns 2t, 2t + 1 of
// n-tile nt); returns their sum.
template <bool kScaled, class Split = Exp2Split<>, int kForm = 0, int kNT, class Store>
__device__ __forceinline__ float softmax_row_exp(const float (&s)[kNT][4], int h, float m_use, float scale_log2,
                                                 Store store) {
    float row_sum = 0.f;
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
        const auto exp2 = [nt](float x) { return Split::exp2(x, nt); };
        const float p0 = kScaled ? exp2(s[nt][2 * h] - m_use) : exp2(fmaf(s[nt][2 * h], scale_log2, -m_use));
        const float p1 = kScaled ? exp2(s[nt][2 * h + 1] - m_use) : exp2(fmaf(s[nt][2 * h + 1], scale_log2, -m_use));
        if (kScaled) {
            row_sum += p0;
            row_sum += p1;
        } else {
            row_sum = add_pair<kForm>(row_sum, nt, p0, p1);
        }
        store(nt, p0, p1);
    }
    return row_sum;
}

// A term of every score of a thread's row that the scores leave out (raw units; per lane and row h = 0, 1): a score
// modifier may hand its per-row part to the softmax, which adds it once per row to the thread's max and exponent
// offset instead of once per score (ALiBi off the diagonal, tile/mask.cuh).
struct RowBias {
    float b[2];
};

// Both rows of one 16-row block of raw scores (fp16 / bf16): m, l and alpha per row, P to store(nt, h, p0, p1).
// The two maxima first, then the two exponent passes: this order is the one ptxas was tuned against at 255 registers.
// no_max: scores bounded so that exp2(s * scale_log2) neither overflows nor underflows (softcap with bf16 P): no
// running max, m = 0 and alpha = 1 (a uniform branch around the max). kRowBias: the scores lack row_bias (RowBias;
// not with no_max). Split: which exponentials run on the FMA pipe (Exp2Split). kForm: softmax_form's flags.
template <int kLazyLog2 = -1, bool kRowBias = false, class Split = Exp2Split<>, int kForm = 0, int kNT, class Store>
__device__ __forceinline__ void online_softmax(const float (&s)[kNT][4], float (&m)[2], float (&l)[2],
                                               float (&alpha)[2], float scale_log2, float neg_inf, Store store,
                                               bool no_max = false, float lazy_log2 = static_cast<float>(kLazyLog2),
                                               RowBias row_bias = {}) {
    constexpr bool kReversed = (kForm & softmax_form::kRowsReversed) != 0;
    float m_use[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int h = kReversed ? 1 - i : i;
        if (no_max) {
            m_use[h] = m[h] = 0.f, alpha[h] = 1.f;
            continue;
        }
        m_use[h] = softmax_row_max<false, kNT, kLazyLog2, kRowBias, kForm>(s, h, m[h], alpha[h], scale_log2,
                                                                           neg_inf, lazy_log2, row_bias.b[h]);
    }
    if constexpr ((kForm & softmax_form::kRowsInterleaved) != 0) {
        float m_sub[2], row_sum[2] = {0.f, 0.f};
#pragma unroll
        for (int h = 0; h < 2; ++h) m_sub[h] = kRowBias ? fmaf(-row_bias.b[h], scale_log2, m_use[h]) : m_use[h];
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                const int h = kReversed ? 1 - i : i;
                const float p0 = Split::exp2(fmaf(s[nt][2 * h], scale_log2, -m_sub[h]), nt);
                const float p1 = Split::exp2(fmaf(s[nt][2 * h + 1], scale_log2, -m_sub[h]), nt);
                row_sum[h] = add_pair<kForm>(row_sum[h], nt, p0, p1);
                store(nt, h, p0, p1);
            }
#pragma unroll
        for (int h = 0; h < 2; ++h) l[h] = l[h] * alpha[h] + row_sum[h];
        return;
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int h = kReversed ? 1 - i : i;
        // p = exp2((s + bias) * scale_log2 - m_use): the bias joins the subtracted max, one FFMA per row.
        const float m_sub = kRowBias ? fmaf(-row_bias.b[h], scale_log2, m_use[h]) : m_use[h];
        const float row_sum =
            softmax_row_exp<false, Split, kForm>(s, h, m_sub, scale_log2,
                                                 [&](int nt, float p0, float p1) { store(nt, h, p0, p1); });
        l[h] = l[h] * alpha[h] + row_sum;
    }
}

// The settled max (attention_f16_ws.cu, kSettledMax): a key step's exponentials use each row's max from before the
// tile, so that they need not wait for the tile's own max, and the max is settled after P V of the previous tile
// only where it moved. P = exp2(s * scale_log2 - m) to store (m = 0 for a row with no key yet), the thread's part of
// each row's sum to row_sum; m, l and O are left to softmax_settle_max. A row whose scores passed its max stores P
// above 1; by at least 128 in log2 units, infinity (softmax_settle_max says so). kRowBias: the scores lack row_bias
// (RowBias, as in online_softmax), which joins the subtracted max.
template <bool kRowBias = false, class Split = Exp2Split<>, int kForm = 0, int kNT, class Store>
__device__ __forceinline__ void softmax_exp_before_max(const float (&s)[kNT][4], const float (&m)[2],
                                                       float (&row_sum)[2], float scale_log2, float neg_inf,
                                                       Store store, RowBias row_bias = {}) {
    constexpr bool kReversed = (kForm & softmax_form::kRowsReversed) != 0;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int h = kReversed ? 1 - i : i;
        const float m_before = m[h] == neg_inf ? 0.f : m[h];
        const float m_sub = kRowBias ? fmaf(-row_bias.b[h], scale_log2, m_before) : m_before;
        row_sum[h] = softmax_row_exp<false, Split, kForm>(s, h, m_sub, scale_log2,
                                                           [&](int nt, float p0, float p1) { store(nt, h, p0, p1); });
    }
}

// The row's largest P of softmax_exp_before_max (the quad's): 2^(the tile's max - the row's max).
template <int kNT>
__device__ __forceinline__ float softmax_p_max(const float (&p)[kNT][4], int h) {
    float pm = fmaxf(p[0][2 * h], p[0][2 * h + 1]);
#pragma unroll
    for (int nt = 1; nt < kNT; ++nt) pm = fmaxf(pm, fmaxf(p[nt][2 * h], p[nt][2 * h + 1]));
    return ptx::quad_max(pm);
}

// Settles the rows of softmax_exp_before_max whose largest P (p_max, softmax_p_max) passed threshold: the max moves
// to that P's score, their P and sum scale by 1 / p_max, alpha scales O; the other rows keep m (alpha 1, l += sum).
// threshold 1 gives the exact running max; above 1 rows keep theirs while P stays below it (as kLazyLog2 does in
// softmax_row_max). A row's first keys always move its max from -inf. p_max must be finite (below 2^120, so that the
// sums are too).
template <int kNT>
__device__ __forceinline__ void softmax_settle_max(float (&p)[kNT][4], float (&m)[2], float (&l)[2], float (&alpha)[2],
                                                   const float (&row_sum)[2], const float (&p_max)[2],
                                                   float threshold, float neg_inf) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const bool move = p_max[h] > threshold || (m[h] == neg_inf && p_max[h] > 0.f);  // or the row's first keys
        const float m_before = m[h] == neg_inf ? 0.f : m[h];
        const float m_new = move ? m_before + ptx::log2_approx(p_max[h]) : m[h];
        const float fix = move ? ptx::exp2_approx(m_before - m_new) : 1.f;
        alpha[h] = move ? ptx::exp2_approx(m[h] - m_new) : 1.f;  // 0 for a row with no key before: O is 0
        l[h] = fmaf(l[h], alpha[h], row_sum[h] * fix);
        m[h] = m_new;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) p[nt][2 * h] *= fix, p[nt][2 * h + 1] *= fix;
    }
}

// Whether every row of the warp keeps O's scale (alpha = 1 in every lane): the warp may skip the rescale.
__device__ __forceinline__ bool alpha_is_one(const float (&alpha)[2]) {
    return __all_sync(0xffffffffu, alpha[0] == 1.f && alpha[1] == 1.f);
}

// O's accumulator before the first key tile: [column blocks][8-column n-tiles][4] zeros.
template <int kBlocks, int kNT>
__device__ __forceinline__ void clear_accumulator(float (&o)[kBlocks][kNT][4]) {
#pragma unroll
    for (int b = 0; b < kBlocks; ++b)
#pragma unroll
        for (int i = 0; i < kNT; ++i) o[b][i][0] = o[b][i][1] = o[b][i][2] = o[b][i][3] = 0.f;
}

// O[i0 + i] = O[i0 + i] * alpha + PV[i] for kN 8-column n-tiles of one 16-row block (O holds kNO of them): one FFMA
// per element, with the alpha of the element's row (e / 2).
template <int kNO, int kN>
__device__ __forceinline__ void rescale_add(float (&o)[kNO][4], int i0, const float (&alpha)[2],
                                            const float (&pv)[kN][4]) {
    static_assert(kN <= kNO, "PV covers a slice of O");
#pragma unroll
    for (int i = 0; i < kN; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[i0 + i][e] = fmaf(o[i0 + i][e], alpha[e / 2], pv[i][e]);
}

// O *= alpha for kN 8-column n-tiles of one 16-row block, each element with its row's alpha (e / 2): before a P V
// that accumulates into O itself.
template <int kN>
__device__ __forceinline__ void rescale_rows(float (&o)[kN][4], const float (&alpha)[2]) {
#pragma unroll
    for (int i = 0; i < kN; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[i][e] *= alpha[e / 2];
}

}  // namespace fa_jit::tile
