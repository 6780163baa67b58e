// The warp-specialized kernel's tiles (kernel_sources/attention_f16_ws.cu), shared by the families that run it: f16-ws
// (prefill, variant "ws") and decode-ws (split-KV decode, "ws-split"). A tile is 128, 192 or 256 query rows (two,
// three or four consumer warpgroups beside the producer: 12, 16 or 20 warps), block_n keys per step and a K / V ring of
// `stages`.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "attention_ws_layout.cuh"
#include "fa_jit/tuning.hpp"

namespace fa_jit::families {

inline TileConfig ws_tile(int block_n, int stages, const std::string& variant, int block_m = 128) {
    return {block_m, block_n, ws_layout::threads(block_m) / 32, stages, variant};
}
// Whether `t` has the kernel's shape and fits shared memory and registers at head_dim (the variant is the family's to
// check).
inline bool ws_tile_fits(int head_dim, const TileConfig& t) {
    return t.warps == ws_layout::threads(t.block_m) / 32 && ws_layout::legal(t.block_m, t.block_n, head_dim, t.stages);
}
// 64 to 192 keys per step, a 2- to 4-deep ring, where shared memory and registers allow, for each of `rows`.
inline std::vector<TileConfig> ws_sweep_tiles(int head_dim, const std::string& variant,
                                              std::initializer_list<int> rows = {128}) {
    std::vector<TileConfig> out;
    for (int block_m : rows)
        for (int block_n = 64; block_n <= 192; block_n += 16)  // those ws_layout::legal admits
            for (int stages : {2, 3, 4})
                if (ws_layout::legal(block_m, block_n, head_dim, stages))
                    out.push_back(ws_tile(block_n, stages, variant, block_m));
    return out;
}

}  // namespace fa_jit::families
