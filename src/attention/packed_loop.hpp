// Whether packed sequences may take a kernel whose blocks loop over query tiles: one warp numbers the tiles in shared
// memory (kernel_sources/tile/packed_tiles.cuh), which holds at most 64 sequences (packed_tiles::kMaxSequences); rows
// as long as the looping kernel for one sequence takes (ws_layout::loops_over_causal_tiles). The kernel table keys it,
// so that one table entry means one kernel.
#pragma once

#include "attention_ws_layout.cuh"
#include "fa_jit/attention.hpp"

namespace fa_jit {

inline bool packed_loop_fits(const AttentionArgs& a) {
    return a.batch <= 64 && ws_layout::loops_over_causal_tiles(a.seqlen_q);
}

}  // namespace fa_jit
