// The warp-specialized kernel's tiles (kernel_sources/attention_f16_ws.cu), shared by the families that run it: f16-ws
// (prefill, variant "ws") and decode-ws (split-KV decode, "ws-split"). A tile is 128 query rows and 12 warps (a
// producer warpgroup and two consumers), block_n keys per step and a K / V ring of `stages`.
#pragma once

#include <string>
#include <vector>

#include "attention_ws_layout.cuh"
#include "fa_jit/tuning.hpp"

namespace fa_jit::families {

constexpr int kWsWarps = ws_layout::kThreads / 32;

inline TileConfig ws_tile(int block_n, int stages, const std::string& variant) {
    return {ws_layout::kBlockM, block_n, kWsWarps, stages, variant};
}
// Whether `t` has the kernel's shape and fits shared memory at head_dim (the variant is the family's to check).
inline bool ws_tile_fits(int head_dim, const TileConfig& t) {
    return t.block_m == ws_layout::kBlockM && t.warps == kWsWarps && ws_layout::legal(t.block_n, head_dim, t.stages);
}
// 64 to 192 keys per step, a 2- to 4-deep ring, where shared memory allows.
inline std::vector<TileConfig> ws_sweep_tiles(int head_dim, const std::string& variant) {
    std::vector<TileConfig> out;
    for (int block_n : {64, 80, 96, 112, 128, 192})
        for (int stages : {2, 3, 4})
            if (ws_layout::legal(block_n, head_dim, stages)) out.push_back(ws_tile(block_n, stages, variant));
    return out;
}

}  // namespace fa_jit::families
