// The f16-ws family's tile choice (kernel_sources/attention_f16_ws.cu): the tiles a problem class prefers, fastest
// first, one rule set per padded head dim (64, 128, 192, 256), and which tiles run the kernel variant whose blocks loop
// over tiles. Pure (no device): tests check them as tables. The figures in f16_ws_tiles.cpp are H200 measurements,
// bf16 TFLOP/s unless marked (bench/NOTES.md names the sections).
#pragma once

#include <vector>

#include "fa_jit/tuning.hpp"

namespace fa_jit::families {

// The tiles `p` prefers, fastest first; the family's default is the first one legal at p's head dim.
std::vector<TileConfig> f16_ws_preferred_tiles(const ProblemClass& p);

// Plain rows (no score modifier, packed sequences or pages) under the causal mask, more than 256 of them and of
// 257-2048 keys: at d 40-64 the 256-row tile's, and at d 64 this family's rather than f16-wgmma's
// (F16WsFamily::chosen_for).
bool f16_ws_short_causal(const ProblemClass& p);

// Whether `s` runs the variant whose blocks loop over tiles (ws_layout::tile_loop) for rows of `seqlen_k` keys: up to
// 8k keys under the causal mask (loops_over_causal_tiles), else up to 2k (loops_over_tiles).
bool f16_ws_tile_loop(const AttentionKernelSpec& s, int seqlen_k);

}  // namespace fa_jit::families
