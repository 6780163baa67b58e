// Checking then timing one tile config on one problem.
#pragma once

#include "row.hpp"
#include "workspace.hpp"

#include "fa_jit/jit.hpp"

namespace fa_jit::bench {

struct MeasureSettings {
    int reps = 30;
    int warmup = 5;
};

// `reference`: attention_reference()'s output for input set 0, or null to skip the check (--no-check).
// Never throws for a config that fails to compile or run: the row says why.
Row measure_config(const Problem& problem, const TileConfig& tile, bool chosen, Workspace& workspace,
                   const HostOutput* reference, const MeasureSettings& settings, Stream& stream);

}  // namespace fa_jit::bench
