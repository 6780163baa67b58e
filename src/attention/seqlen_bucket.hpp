// Sequence lengths are grouped in power-of-two buckets [128, 16384]: one kernel and one tuned configuration
// serve every length of a bucket. Decode query lengths (1..16) are kept exact: the decode family's tile and split
// count depend on the query rows it packs.
#pragma once

#include <algorithm>

#include "fa_jit/attention.hpp"

namespace fa_jit {

inline int seqlen_bucket(int n) {
    int b = 128;
    while (b < n && b < 16384) b *= 2;
    return b;
}

// The query lengths the decode family serves without per-sequence KV lengths (tokens per step of speculative
// decoding); longer ones are prefill.
constexpr int kMaxDecodeQueries = 16;

inline int query_length_class(int seqlen_q) {
    return seqlen_q <= kMaxDecodeQueries ? seqlen_q : seqlen_bucket(seqlen_q);
}

// The most keys one query row sees: a sliding window's span where it is shorter than the keys (under the causal mask
// the window's right side is 0). Where a kernel's variant depends on the length of a row (the settled max), not of
// the keys.
inline int keys_per_row(const AttentionArgs& a) {
    if (a.window_left < 0 || (a.window_right < 0 && !a.causal)) return a.seqlen_k;
    const long long span = static_cast<long long>(a.window_left) + (a.causal ? 0 : a.window_right) + 1;
    return static_cast<int>(std::min<long long>(a.seqlen_k, span));
}

}  // namespace fa_jit
