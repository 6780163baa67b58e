// Attention in float64 on the host: the ground truth of the GPU tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "common/parallel.hpp"
#include "fa_jit/attention.hpp"
#include "support/compile_jobs.hpp"

namespace fa_jit::testing {

// Host copies of q, k, v (float), laid out with the strides in `a`; writes o (same strides as a.o_strides) and lse
// ([batch, heads_q, seqlen_q]). `seqused_k`: the host copy of a.seqused_k (empty: every sequence uses seqlen_k);
// each entry is clamped to [0, seqlen_k], as the kernels do. Score modifiers: a.window_left / a.window_right,
// a.softcap, and `alibi_slopes` (the host copy of a.alibi_slopes; empty: none). Packed sequences: `cu_q` / `cu_k`,
// the host copies of a.cu_seqlens_q / _k, clamped as the kernels clamp them (tile::seq_rows); LSE is then
// [heads_q, total_q]. `cu_k` empty with `cu_q` set: packed queries against keys in batches (the contiguous copy of a
// paged cache). The (batch, head) pairs run on several threads: packed sequences must not share query rows (prefix
// sums that decrease are checked by their own test, without this reference).
struct PackedSequences {
    std::vector<int> cu_q, cu_k;
};
inline void reference_attention(const AttentionArgs& a, const std::vector<float>& q, const std::vector<float>& k,
                                const std::vector<float>& v, std::vector<double>& o, std::vector<double>& lse,
                                const std::vector<int>& seqused_k = {}, const std::vector<float>& alibi_slopes = {},
                                const PackedSequences& packed = {}) {
    const double scale = a.scale ? *a.scale : 1.0 / std::sqrt(static_cast<double>(a.head_dim));
    const int group = a.heads_q / a.heads_kv;
    const bool varlen = !packed.cu_q.empty(), varlen_k = !packed.cu_k.empty();
    // A sequence's first row and length: [cu[b], cu[b + 1]) clamped into [0, total), at most `bound` long.
    const auto span = [](const std::vector<int>& cu, int b, int total, int bound) {
        const std::int64_t s = std::clamp(cu[b], 0, total), e = std::clamp<std::int64_t>(cu[b + 1], s, total);
        return std::pair<std::int64_t, std::int64_t>{s, std::min<std::int64_t>(e - s, bound)};
    };
    // One (batch, head) per work item on test_threads() threads: each writes its own rows of o and lse.
    const auto one_head = [&](std::size_t item) {
        const int b = static_cast<int>(item / a.heads_q), h = static_cast<int>(item % a.heads_q);
        std::vector<double> p(static_cast<std::size_t>(std::max(a.seqlen_k, 1))), acc(a.head_dim);
        const auto [row0, seqlen_q] =
            varlen ? span(packed.cu_q, b, a.total_q, a.seqlen_q) : std::pair<std::int64_t, std::int64_t>{0, a.seqlen_q};
        const auto [key0, seqlen_k] = varlen_k ? span(packed.cu_k, b, a.total_k, a.seqlen_k)
                                               : std::pair<std::int64_t, std::int64_t>{0, a.seqlen_k};
        const std::int64_t batch = varlen ? 0 : b, batch_k = varlen_k ? 0 : b;
        const std::int64_t used = seqused_k.empty() ? seqlen_k : std::clamp<std::int64_t>(seqused_k[b], 0, seqlen_k);
        const int hk = h / group;
        for (std::int64_t i = 0; i < seqlen_q; ++i) {
            const std::int64_t q0 = batch * a.q_strides.batch + h * a.q_strides.head + (row0 + i) * a.q_strides.row;
            const std::int64_t o0 = batch * a.o_strides.batch + h * a.o_strides.head + (row0 + i) * a.o_strides.row;
            // Row i sees keys [first, last]: below `used`, left of the causal diagonal, inside the window.
            const std::int64_t diagonal = i + used - seqlen_q;
            std::int64_t last = a.causal ? std::min<std::int64_t>(used - 1, diagonal) : used - 1;
            if (a.window_right >= 0) last = std::min<std::int64_t>(last, diagonal + a.window_right);
            const std::int64_t first = a.window_left >= 0 ? std::max<std::int64_t>(0, diagonal - a.window_left) : 0;
            if (first > last) last = first - 1;  // no key
            const double slope = alibi_slopes.empty() ? 0.0 : alibi_slopes[h];
            double m = -std::numeric_limits<double>::infinity();
            for (std::int64_t j = first; j <= last; ++j) {
                const std::int64_t k0 =
                    batch_k * a.k_strides.batch + hk * a.k_strides.head + (key0 + j) * a.k_strides.row;
                double dot = 0;
                for (int c = 0; c < a.head_dim; ++c) dot += double(q[q0 + c]) * double(k[k0 + c]);
                double score = dot * scale;
                if (a.softcap > 0) score = a.softcap * std::tanh(score / a.softcap);
                p[j] = score - slope * std::abs(static_cast<double>(diagonal - j));
                m = std::max(m, p[j]);
            }
            double l = 0;
            for (std::int64_t j = first; j <= last; ++j) l += (p[j] = std::exp(p[j] - m));
            std::fill(acc.begin(), acc.end(), 0.0);
            for (std::int64_t j = first; j <= last; ++j) {  // each column sums its keys in order, as one dot would
                const std::int64_t v0 =
                    batch_k * a.v_strides.batch + hk * a.v_strides.head + (key0 + j) * a.v_strides.row;
                for (int c = 0; c < a.head_dim; ++c) acc[c] += p[j] * double(v[v0 + c]);
            }
            for (int c = 0; c < a.head_dim; ++c) o[o0 + c] = last < first ? 0.0 : acc[c] / l;
            lse[varlen ? h * static_cast<std::int64_t>(a.total_q) + row0 + i
                       : (static_cast<std::int64_t>(b) * a.heads_q + h) * a.seqlen_q + i] =
                last < first ? -std::numeric_limits<double>::infinity() : m + std::log(l);
        }
    };
    tools::parallel_for(static_cast<std::size_t>(a.batch) * a.heads_q, test_threads(), one_head);
}

}  // namespace fa_jit::testing
