// Attention in float64 on the host: the ground truth of the GPU tests.
#pragma once

#include "fa_jit/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace fa_jit::testing {

// Host copies of q, k, v (float), laid out with the strides in `a`; writes o (same strides as a.o_strides) and lse
// ([batch, heads_q, seqlen_q]). `seqused_k`: the host copy of a.seqused_k (empty: every sequence uses seqlen_k);
// each entry is clamped to [0, seqlen_k], as the kernels do. Score modifiers: a.window_left / a.window_right,
// a.softcap, and `alibi_slopes` (the host copy of a.alibi_slopes; empty: none).
inline void reference_attention(const AttentionArgs& a, const std::vector<float>& q, const std::vector<float>& k,
                                const std::vector<float>& v, std::vector<double>& o, std::vector<double>& lse,
                                const std::vector<int>& seqused_k = {}, const std::vector<float>& alibi_slopes = {}) {
    const double scale = a.scale ? *a.scale : 1.0 / std::sqrt(static_cast<double>(a.head_dim));
    const int group = a.heads_q / a.heads_kv;
    std::vector<double> s(static_cast<std::size_t>(a.seqlen_k));
    for (int b = 0; b < a.batch; ++b)
        for (int h = 0; h < a.heads_q; ++h)
            for (int i = 0; i < a.seqlen_q; ++i) {
                const std::int64_t used =
                    seqused_k.empty() ? a.seqlen_k : std::clamp<std::int64_t>(seqused_k[b], 0, a.seqlen_k);
                const int hk = h / group;
                const std::int64_t q0 = b * a.q_strides.batch + h * a.q_strides.head + i * a.q_strides.row;
                const std::int64_t o0 = b * a.o_strides.batch + h * a.o_strides.head + i * a.o_strides.row;
                // Row i sees keys [first, last]: below `used`, left of the causal diagonal, inside the window.
                const std::int64_t diagonal = i + used - a.seqlen_q;
                std::int64_t last = a.causal ? std::min<std::int64_t>(used - 1, diagonal) : used - 1;
                if (a.window_right >= 0) last = std::min<std::int64_t>(last, diagonal + a.window_right);
                const std::int64_t first = a.window_left >= 0 ? std::max<std::int64_t>(0, diagonal - a.window_left) : 0;
                if (first > last) last = first - 1;  // no key
                const double slope = alibi_slopes.empty() ? 0.0 : alibi_slopes[h];
                double m = -std::numeric_limits<double>::infinity();
                for (std::int64_t j = first; j <= last; ++j) {
                    const std::int64_t k0 = b * a.k_strides.batch + hk * a.k_strides.head + j * a.k_strides.row;
                    double dot = 0;
                    for (int c = 0; c < a.head_dim; ++c) dot += double(q[q0 + c]) * double(k[k0 + c]);
                    s[j] = dot * scale;
                    if (a.softcap > 0) s[j] = a.softcap * std::tanh(s[j] / a.softcap);
                    s[j] -= slope * std::abs(static_cast<double>(diagonal - j));
                    m = std::max(m, s[j]);
                }
                double l = 0;
                for (std::int64_t j = first; j <= last; ++j) l += std::exp(s[j] - m);
                for (int c = 0; c < a.head_dim; ++c) {
                    double acc = 0;
                    for (std::int64_t j = first; j <= last; ++j) {
                        const std::int64_t v0 = b * a.v_strides.batch + hk * a.v_strides.head + j * a.v_strides.row;
                        acc += std::exp(s[j] - m) * double(v[v0 + c]);
                    }
                    o[o0 + c] = last < first ? 0.0 : acc / l;
                }
                lse[(static_cast<std::int64_t>(b) * a.heads_q + h) * a.seqlen_q + i] =
                    last < first ? -std::numeric_limits<double>::infinity() : m + std::log(l);
            }
}

}  // namespace fa_jit::testing
