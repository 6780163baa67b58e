// Sequence lengths are grouped in power-of-two buckets [128, 16384]: one kernel and one tuned configuration
// serve every length of a bucket. Decode query lengths (1..16) are kept exact: the decode family's tile and split
// count depend on the query rows it packs.
#pragma once

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

}  // namespace fa_jit
