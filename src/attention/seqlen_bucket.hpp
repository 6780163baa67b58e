// Sequence lengths are grouped in power-of-two buckets [128, 16384]: one kernel and one tuned configuration
// serve every length of a bucket.
#pragma once

namespace fa_jit {

inline int seqlen_bucket(int n) {
    int b = 128;
    while (b < n && b < 16384) b *= 2;
    return b;
}

}  // namespace fa_jit
