// How sequence lengths enter kernel selection besides their buckets: whether tiles of up to kMaxTile divide them.
#pragma once

#include <algorithm>

namespace fa_jit {

// The largest power of two <= kMaxTile dividing n: whether a tile of any size up to kMaxTile divides n.
constexpr int kMaxTile = 1024;  // f16-ws takes 256-row tiles for 256, 512 and 1024 rows (not 768)
inline int tile_alignment(int n) {
    return n == 0 ? kMaxTile : std::min(n & -n, kMaxTile);
}

}  // namespace fa_jit
