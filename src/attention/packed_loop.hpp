// Whether packed sequences may take a kernel whose blocks loop over query tiles: one warp numbers the tiles in shared
// memory (kernel_sources/tile/packed_tiles.cuh), which holds at most 64 sequences; up to 8k rows a sequence, as the
// looping kernel for one sequence (ws_layout::loops_over_causal_tiles). The kernel table keys it, so that one table
// entry means one kernel.
#pragma once

#include "fa_jit/attention.hpp"

namespace fa_jit {

inline bool packed_loop_fits(const AttentionArgs& a) {
    return a.batch <= 64 && a.seqlen_q <= 64 * 128;
}

}  // namespace fa_jit
