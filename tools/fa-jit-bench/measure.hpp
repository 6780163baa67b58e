// Checking then timing one tile config on one problem.
#pragma once

#include "row.hpp"
#include "workspace.hpp"

#include "fa_jit/jit.hpp"

namespace fa_jit::bench {

struct MeasureSettings {
    int reps = 30;
    int warmup = 5;
    // Untimed calls for at least this long after `warmup` (0: none). A GPU running one kernel back to back settles
    // at the clock its power limit allows within about a second; shorter runs time a cooler, faster GPU.
    double warmup_ms = 0;
};

// One run of a problem: a tile, and the key splits it is asked for (AttentionArgs::num_splits; 0 = the library's
// choice, and ignored by families that do not split the keys).
struct RunConfig {
    TileConfig tile;
    int splits = 0;
};

// `reference`: attention_reference()'s output for input set 0, or null to skip the check (--no-check).
// Never throws for a config that fails to compile or run: the row says why.
Row measure_config(const Problem& problem, const RunConfig& config, bool chosen, Workspace& workspace,
                   const HostOutput* reference, const MeasureSettings& settings, Stream& stream);

}  // namespace fa_jit::bench
