// The kernel-family registry: which family serves which problem, in the documented order; tile spellings; and a
// family registered from outside the library, picked up by the chooser, warm-up and the sweep unchanged.
#include <algorithm>
#include <catch2/catch.hpp>

#include "attention/families/decode_splits.hpp"
#include "attention/families/f16_ws_tiles.hpp"
#include "attention/families/ws_tiles.hpp"
#include "attention/family.hpp"
#include "fa_jit/tuning.hpp"

using namespace fa_jit;

TEST_CASE("families are asked in the documented priority order", "[families]") {
    CHECK(kernel_families() ==
          std::vector<std::string>{"decode-ws", "decode-wgmma", "decode", "f16-ws", "f16-wgmma", "f16-mma", "fp32"});
}

TEST_CASE("the decode family serves few query rows and per-sequence KV lengths", "[families][decode]") {
    const auto family = [](DType dtype, int d, int seqlen_q, int group, bool seqused_k, int cc = 90) {
        return kernel_family_for({dtype, d, false, seqlen_q, 32768, group, seqused_k}, cc);
    };
    // Up to 32 packed rows (query tokens x group) on mma.sync; more on sm_90 take warpgroup MMA where the head dim is
    // a multiple of 64, from 97 rows (most of a 128-row tile) the warp-specialized kernel.
    for (int cc : {80, 90})
        for (int seqlen_q : {1, 3, 4, 16})
            for (int group : {1, 4, 8, 32}) {
                const int rows = seqlen_q * group;
                const char* expected = cc != 90 || rows <= 32 ? "decode" : rows < 97 ? "decode-wgmma" : "decode-ws";
                CHECK(family(DType::bf16, 128, seqlen_q, group, false, cc) == expected);
            }
    // decode-ws has score modifiers and reads packed sequences and paged caches.
    ProblemClass modified{DType::bf16, 128, true, 4, 32768, 32};
    modified.mods.softcap = true;
    CHECK(kernel_family_for(modified, 90) == "decode-ws");
    for (bool paged : {false, true}) {
        ProblemClass p = modified;
        p.varlen = true;
        p.paged = p.seqused_k = paged;
        CHECK(kernel_family_for(p, 90) == "decode-ws");
    }
    CHECK(family(DType::f16, 96, 1, 4, false) == "decode");  // any multiple of 8 up to 256
    CHECK(family(DType::f16, 96, 4, 32, false) == "decode");
    CHECK(family(DType::f16, 64, 1, 33, false) == "decode-wgmma");
    CHECK(family(DType::f16, 64, 1, 32, false) == "decode");
    CHECK(family(DType::bf16, 128, 17, 1, false) == "f16-ws");
    CHECK(family(DType::bf16, 96, 17, 1, false) == "f16-ws");
    CHECK(family(DType::bf16, 96, 17, 1, false, 80) == "f16-mma");
    // Per-sequence KV lengths are read only by the decode family: it serves every query length then.
    CHECK(family(DType::bf16, 128, 4096, 1, true) == "decode-ws");
    CHECK(family(DType::bf16, 128, 4096, 1, true, 80) == "decode");
    CHECK(family(DType::bf16, 96, 4096, 1, true) == "decode");
    CHECK(family(DType::bf16, 128, 4096, 1, false) == "f16-ws");
    CHECK(family(DType::bf16, 128, 4096, 1, false, 80) == "f16-mma");
    CHECK(family(DType::f32, 64, 1, 1, false) == "fp32");
    CHECK(family(DType::f32, 64, 1, 1, true) == "fp32");  // fp32 reads them in its prefill kernel
}

TEST_CASE("decode tiles pack every query row of a KV head where the registers allow", "[families][decode]") {
    const auto tile = [](int d, int seqlen_q, int group) {
        return default_tile_config(90, {DType::bf16, d, true, seqlen_q, 8192, group});
    };
    CHECK(tile(128, 1, 1) == TileConfig{16, 64, 4, 3, "split"});  // one row warp: 3 stages, two blocks per SM
    CHECK(tile(128, 1, 8) == TileConfig{16, 64, 4, 3, "split"});
    // One row warp past 8k keys on sm_90: 32 keys per key warp at d 113-128, 2 stages at d 256.
    for (int group : {1, 4, 8})
        CHECK(default_tile_config(90, {DType::bf16, 128, true, 1, 16384, group}) == TileConfig{16, 128, 4, 2, "split"});
    CHECK(default_tile_config(90, {DType::bf16, 120, true, 4, 16384, 4}) == TileConfig{16, 128, 4, 2, "split"});
    CHECK(default_tile_config(90, {DType::bf16, 96, true, 1, 16384, 4}) == TileConfig{16, 64, 4, 4, "split"});
    CHECK(default_tile_config(90, {DType::bf16, 256, true, 4, 16384, 4}) == TileConfig{16, 64, 4, 2, "split"});
    // d 193-256 take 2 stages up to 8k keys too; sm_80 fits no more.
    CHECK(default_tile_config(90, {DType::bf16, 256, true, 1, 8192, 4}) == TileConfig{16, 64, 4, 2, "split"});
    CHECK(default_tile_config(90, {DType::bf16, 200, true, 4, 4096, 4}) == TileConfig{16, 64, 4, 2, "split"});
    CHECK(default_tile_config(90, {DType::bf16, 192, true, 1, 4096, 4}) == TileConfig{16, 64, 4, 3, "split"});
    CHECK(default_tile_config(80, {DType::bf16, 256, true, 1, 4096, 4}) == TileConfig{16, 64, 4, 2, "split"});
    // d 64: 8 key warps of 32 keys in 2 stages there; the general rule's 4 in 4 up to 8k keys and on sm_80.
    CHECK(default_tile_config(90, {DType::bf16, 64, false, 1, 16384, 1}) == TileConfig{16, 256, 8, 2, "split"});
    CHECK(default_tile_config(90, {DType::bf16, 64, false, 1, 8192, 1}) != TileConfig{16, 256, 8, 2, "split"});
    CHECK(default_tile_config(80, {DType::bf16, 64, false, 1, 16384, 1}) == TileConfig{16, 128, 4, 4, "split"});
    CHECK(default_tile_config(80, {DType::bf16, 128, true, 1, 16384, 8}) == TileConfig{16, 64, 4, 4, "split"});
    CHECK(default_tile_config(80, {DType::bf16, 128, true, 1, 4096, 8}) == TileConfig{16, 64, 4, 4, "split"});
    CHECK(tile(128, 4, 8) == TileConfig{32, 64, 8, 4, "split"});           // 32 rows: 2 row warps x 4 key warps
    CHECK(tile(128, 1, 32) == TileConfig{32, 64, 8, 4, "split"});
    // One token of MQA (32 rows) at d 113-128 past 8k keys on sm_90: 2 key warps of 32 keys.
    for (int d : {120, 128})
        CHECK(default_tile_config(90, {DType::bf16, d, false, 1, 16384, 32}) == TileConfig{32, 64, 4, 4, "split"});
    CHECK(default_tile_config(80, {DType::bf16, 128, false, 1, 16384, 32}) == TileConfig{32, 64, 8, 4, "split"});
    // At d 256: 2 key warps of 16 keys in 4 stages; 4 causal tokens of 8-head groups (32 rows) keep the general rule.
    CHECK(default_tile_config(90, {DType::bf16, 256, false, 1, 16384, 32}) == TileConfig{32, 32, 4, 4, "split"});
    CHECK(default_tile_config(90, {DType::bf16, 256, true, 4, 16384, 8}) == TileConfig{32, 64, 8, 3, "split"});
    CHECK(default_tile_config(90, {DType::bf16, 96, false, 1, 16384, 32}) == TileConfig{32, 64, 8, 4, "split"});
    CHECK(default_tile_config(90, {DType::bf16, 128, true, 4, 16384, 8}) != TileConfig{32, 64, 4, 4, "split"});
    CHECK(tile(96, 4, 32) == TileConfig{128, 32, 8, 4, "split"});          // MQA: 8 row warps of 16 rows, 1 key warp
    CHECK(tile(96, 4, 16) == TileConfig{64, 64, 8, 4, "split"});           // 4 row warps x 2 key warps
    CHECK(tile(128, 4, 32) == TileConfig{128, 128, 12, 2, "ws-split"});    // decode-ws: f16-ws's long-row tiles
    CHECK(tile(256, 4, 32) == TileConfig{128, 80, 12, 2, "ws-split"});
    CHECK(tile(128, 4, 16) == TileConfig{64, 64, 4, 4, "wgmma-split"});  // one warpgroup
    const auto rows = [](int d, int seqlen_q) {  // 32 query heads of MQA, 2 or 3 tokens: decode-wgmma
        return default_tile_config(90, {DType::bf16, d, true, seqlen_q, 8192, 32});
    };
    CHECK(rows(128, 3) == TileConfig{128, 128, 8, 2, "wgmma-split"});  // 96 rows: two warpgroups, 161 KB
    CHECK(rows(256, 3) == TileConfig{128, 64, 8, 2, "wgmma-split"});
    CHECK(rows(128, 2) == TileConfig{64, 64, 4, 4, "wgmma-split"});  // 64 rows: one warpgroup
    CHECK(parse_tile_config("128x80w12s2-ws-split") == TileConfig{128, 80, 12, 2, "ws-split"});
    CHECK_FALSE(tile_is_legal(DType::bf16, 96, {128, 64, 12, 3, "ws-split"}));  // multiples of 64 only
    CHECK(parse_tile_config("128x128w8s3-wgmma-split") == TileConfig{128, 128, 8, 3, "wgmma-split"});
    CHECK_FALSE(tile_is_legal(DType::bf16, 128, {128, 128, 4, 3, "wgmma-split"}));  // warps = rows / 16
    CHECK_FALSE(tile_is_legal(DType::bf16, 96, {64, 64, 4, 2, "wgmma-split"}));     // multiples of 64 only
    CHECK(tile(256, 4, 8) == TileConfig{32, 64, 8, 3, "split"});                    // d 256: 2 row warps x 4 key warps
    CHECK(parse_tile_config("16x64w4s4-split") == TileConfig{16, 64, 4, 4, "split"});
    CHECK(tile_is_legal(DType::f16, 128, {32, 128, 8, 2, "split"}));        // 2 row warps x 4 key warps of 32 keys
    CHECK(tile_is_legal(DType::f16, 128, {64, 64, 8, 2, "split"}));         // 4 row warps x 2 key warps of 32 keys
    CHECK_FALSE(tile_is_legal(DType::f16, 128, {64, 64, 4, 2, "split"}));   // 4 row warps, 1 key warp of 64 keys
    CHECK_FALSE(tile_is_legal(DType::f16, 128, {32, 64, 1, 2, "split"}));   // 32 rows need 2 row warps
    CHECK_FALSE(tile_is_legal(DType::f16, 128, {128, 64, 4, 2, "split"}));  // 128 rows need 8 row warps
    CHECK_FALSE(tile_is_legal(DType::f16, 128, {16, 48, 4, 2, "split"}));   // 12 keys per warp
    CHECK_FALSE(tile_is_legal(DType::f32, 128, {16, 64, 4, 2, "split"}));
}

TEST_CASE("the split heuristic fills the GPU and keeps splits whole", "[families][decode]") {
    using families::choose_num_splits;
    // {SMs, blocks per SM, blocks without splitting, block steps of keys} -> splits.
    struct Row {
        families::SplitProblem problem;
        int splits;
    };
    const Row table[] = {
        {{132, 1, 2048, 2048}, 1},  // batch 64 x 32 KV heads: 15.5 waves already
        {{132, 1, 512, 512}, 1},    // batch 16 x 32 KV heads at 32k keys: 3.9 waves
        {{132, 1, 128, 2048}, 1},   // batch 16 x 8 KV heads: one wave of 128 blocks
        {{132, 1, 8, 2048}, 16},    // batch 1 x 8 KV heads at 128k keys: 128 blocks
        {{132, 1, 1, 2048}, 128},   // one KV head, 128k keys: as many splits as allowed
        {{132, 2, 8, 2048}, 32},    // two blocks per SM: 264 slots
        {{132, 1, 8, 16}, 8},       // 1k keys: a split keeps two block steps
        {{132, 1, 8, 1}, 1},        // fewer keys than one step
        {{132, 1, 0, 100}, 1},      // nothing to do
    };
    for (const Row& r : table) {
        INFO(r.problem.multiprocessors << " SMs x " << r.problem.blocks_per_sm << ", " << r.problem.work << " blocks, "
                                       << r.problem.key_steps << " steps");
        CHECK(choose_num_splits(r.problem) == r.splits);
    }
}

namespace {

// The limits a plan reads, as an H100 / H200 reports them (132 SMs, 227 KB of shared memory per block).
DeviceInfo hopper_device() {
    DeviceInfo d;
    d.multiprocessors = 132, d.max_shared_per_block_optin = 227 * 1024, d.cc_major = 9;
    return d;
}

}  // namespace

TEST_CASE("the decode plan splits the keys, combines, and sizes its workspace", "[families][decode]") {
    AttentionArgs a;
    a.dtype = DType::bf16, a.batch = 1, a.heads_q = 32, a.heads_kv = 8, a.seqlen_q = 1, a.seqlen_k = 131072;
    a.head_dim = 128;
    const DeviceInfo h100 = hopper_device();
    const AttentionKernelSpec spec{a.dtype, 128, false, {16, 64, 4, 4, "split"}};
    const auto family = family_owning(spec.tile);
    REQUIRE(family);
    LaunchPlan plan = family->plan(spec, a, h100);
    CHECK(plan.num_splits == 16);
    REQUIRE(plan.count == 2);
    CHECK(plan.launches[0].grid[0] == 16);  // 1 row tile x 16 splits
    CHECK(plan.launches[0].grid[1] == 8);
    CHECK(plan.launches[0].grid[2] == 1);
    CHECK(plan.launches[1].kernel == 1);
    CHECK(plan.launches[1].grid[0] == 8);  // 32 rows, 4 per block: 2 warps share each row's 16 splits
    CHECK(plan.launches[1].block == 256);
    // Both launches are programmatic dependents: the split kernel of the kernel before it (the previous call's
    // combine releases it as it starts), the combine of the split kernel.
    CHECK(plan.launches[0].programmatic_dependency);
    CHECK(plan.launches[1].programmatic_dependency);
    CHECK(plan.workspace_bytes == 16 * 32 * 4 + 16 * 32 * 128 * 4);  // LSEs (256-byte aligned), then O
    // Two 3-stage blocks fit an SM, but one 4-stage ring already keeps the SM's loads in flight: the heuristic counts
    // one block per SM for both, and splits alike.
    const AttentionKernelSpec three_stages{a.dtype, 128, false, {16, 64, 4, 3, "split"}};
    CHECK(family->plan(three_stages, a, h100).num_splits == 16);
    a.batch = 16, a.seqlen_k = 4096;  // 128 blocks of 4k keys: one wave without splitting
    CHECK(family->plan(spec, a, h100).num_splits == 1);
    CHECK(family->plan(three_stages, a, h100).num_splits == 1);
    a.batch = 1, a.seqlen_k = 131072;
    a.num_splits = 7;  // the caller's count wins
    plan = family->plan(spec, a, h100);
    CHECK(plan.num_splits == 7);
    CHECK(plan.launches[0].grid[0] == 7);
    a.num_splits = 1;  // one split: no combine, no workspace
    plan = family->plan(spec, a, h100);
    CHECK(plan.count == 1);
    CHECK(plan.workspace_bytes == 0);
}

TEST_CASE(
    "the warp-specialized plan loops over tiles for short rows (under the causal mask in pairs), else one block per "
    "tile",
    "[families]") {
    AttentionArgs a;
    a.dtype = DType::bf16, a.batch = 4, a.heads_q = 16, a.heads_kv = 4, a.seqlen_q = 4000, a.seqlen_k = 4096;
    a.head_dim = 128;
    const DeviceInfo h200 = hopper_device();
    const auto family = family_owning({128, 128, 12, 3, "ws"});
    REQUIRE(family);
    // The grid; no plan needs a workspace.
    const auto grid = [&](bool causal, int d, const TileConfig& tile) {
        AttentionKernelSpec spec{a.dtype, d, causal, tile};
        spec.tile_loop = family->tile_loop(spec, a.seqlen_k);
        const LaunchPlan plan = family->plan(spec, a, h200);
        REQUIRE(plan.count == 1);
        CHECK(plan.workspace_bytes == 0);
        CHECK(plan.launches[0].block == 32u * tile.warps);
        return std::vector<unsigned>(plan.launches[0].grid, plan.launches[0].grid + 3);
    };
    // 32 query tiles x 16 heads x 4 sequences = 2048 tiles. 4k keys: without the mask one block per tile, (query
    // tile, head, sequence), in a kernel without the loop; causal: pairs of tiles up to 8k keys.
    CHECK(grid(false, 128, {128, 128, 12, 3, "ws"}) == std::vector<unsigned>{32, 16, 4});
    CHECK(grid(true, 128, {128, 128, 12, 3, "ws"}) == std::vector<unsigned>{132, 1, 1});
    CHECK(grid(true, 192, {128, 112, 12, 2, "ws"}) == std::vector<unsigned>{132, 1, 1});  // every tile loops
    CHECK(grid(false, 192, {128, 64, 12, 3, "ws"}) == std::vector<unsigned>{32, 16, 4});
    // d <= 64 keeps the loop in every kernel without the mask: 21 query tiles of 192 rows x 16 x 4, a 1-d grid.
    CHECK(grid(false, 64, {192, 128, 16, 3, "ws"}) == std::vector<unsigned>{1344, 1, 1});
    CHECK(grid(false, 192, {128, 112, 12, 2, "ws"}) == std::vector<unsigned>{32, 16, 4});
    CHECK(grid(false, 160, {128, 112, 12, 2, "ws"}) == std::vector<unsigned>{32, 16, 4});
    CHECK(grid(false, 192, {128, 96, 12, 2, "ws"}) == std::vector<unsigned>{32, 16, 4});
    CHECK(grid(false, 256, {128, 80, 12, 2, "ws"}) == std::vector<unsigned>{32, 16, 4});
    CHECK(grid(false, 256, {128, 64, 12, 2, "ws"}) == std::vector<unsigned>{32, 16, 4});
    a.seqlen_k = 16384;  // past 8k keys causal blocks take one tile each
    CHECK(grid(true, 128, {128, 128, 12, 3, "ws"}) == std::vector<unsigned>{32, 16, 4});
    // Up to 2k keys the blocks loop: 2048 tiles over 132 blocks.
    a.seqlen_k = 2048;
    CHECK(grid(false, 128, {128, 128, 12, 3, "ws"}) == std::vector<unsigned>{132, 1, 1});
    CHECK(grid(false, 96, {128, 128, 12, 3, "ws"}) == std::vector<unsigned>{132, 1, 1});  // padded to 128
    CHECK(grid(false, 160, {128, 64, 12, 3, "ws"}) == std::vector<unsigned>{132, 1, 1});  // padded to 192
    CHECK(grid(false, 160, {128, 112, 12, 2, "ws"}) == std::vector<unsigned>{132, 1, 1});  // d 136-160 loop at 112
    CHECK(grid(false, 168, {128, 112, 12, 2, "ws"}) == std::vector<unsigned>{32, 16, 4});  // d 168-192 only at 96
    CHECK(grid(false, 192, {128, 96, 12, 2, "ws"}) == std::vector<unsigned>{132, 1, 1});
    CHECK(grid(false, 256, {128, 64, 12, 2, "ws"}) == std::vector<unsigned>{132, 1, 1});
    CHECK(grid(true, 224, {128, 64, 12, 2, "ws"}) == std::vector<unsigned>{132, 1, 1});   // padded to 256, in pairs
    CHECK(grid(true, 128, {128, 128, 12, 3, "ws"}) == std::vector<unsigned>{132, 1, 1});  // pairs of tiles
    CHECK(grid(true, 160, {128, 64, 12, 3, "ws"}) == std::vector<unsigned>{132, 1, 1});
    CHECK(grid(true, 64, {192, 128, 16, 3, "ws"}) == std::vector<unsigned>{132, 1, 1});  // 192 rows, in pairs
    a.batch = 1, a.heads_q = a.heads_kv = 2, a.seqlen_q = 300;  // fewer tiles than SMs: one block each
    CHECK(grid(false, 128, {128, 128, 12, 3, "ws"}) == std::vector<unsigned>{6, 1, 1});
    // The looping variant: 3 query tiles per head, and a fourth without rows that keeps pairs within a head.
    CHECK(grid(true, 128, {128, 128, 12, 3, "ws"}) == std::vector<unsigned>{8, 1, 1});
    a.heads_q = a.heads_kv = 60;  // 180 tiles (240 with the extra ones): under the causal mask 120 blocks of a pair
    CHECK(grid(false, 128, {128, 128, 12, 3, "ws"}) == std::vector<unsigned>{132, 1, 1});
    CHECK(grid(true, 128, {128, 128, 12, 3, "ws"}) == std::vector<unsigned>{120, 1, 1});
    // Packed sequences: under the causal mask plain rows loop over the sequences' tiles (at most 8 x 4 heads x 20 =
    // 640 with batch 20 and max_seqlen_q 1000: 132 blocks); without the mask, with a score modifier or past 8k keys,
    // a block per tile.
    a.batch = 20, a.heads_q = 4, a.heads_kv = 2, a.seqlen_q = a.seqlen_k = 1000;
    const auto packed_grid = [&](bool causal, int d, const TileConfig& tile, bool softcap = false) {
        AttentionKernelSpec spec{a.dtype, d, causal, tile};
        spec.varlen = true, spec.mods.softcap = softcap;
        spec.tile_loop = family->tile_loop(spec, a.seqlen_k);
        CHECK(spec.tile_loop == (causal && !softcap && a.seqlen_k <= 8192));
        const LaunchPlan plan = family->plan(spec, a, h200);
        return std::vector<unsigned>(plan.launches[0].grid, plan.launches[0].grid + 3);
    };
    CHECK(packed_grid(true, 128, {128, 128, 12, 3, "ws"}) == std::vector<unsigned>{132, 1, 1});
    CHECK(packed_grid(true, 64, {192, 128, 16, 3, "ws"}) == std::vector<unsigned>{132, 1, 1});
    CHECK(packed_grid(false, 128, {128, 128, 12, 3, "ws"}) == std::vector<unsigned>{8, 4, 20});
    CHECK(packed_grid(true, 128, {128, 128, 12, 3, "ws"}, true) == std::vector<unsigned>{8, 4, 20});
    a.batch = 2;  // 64 tiles, fewer than SMs: a block each
    CHECK(packed_grid(true, 128, {128, 128, 12, 3, "ws"}) == std::vector<unsigned>{64, 1, 1});
    a.seqlen_q = a.seqlen_k = 8193;
    CHECK(packed_grid(true, 128, {128, 128, 12, 3, "ws"}) == std::vector<unsigned>{65, 4, 2});
    // Tiles are numbered in an int on the device.
    a.batch = 1 << 16, a.heads_q = a.heads_kv = 256, a.seqlen_q = 1 << 16;
    AttentionKernelSpec looping{a.dtype, 128, false, {128, 128, 12, 3, "ws"}};
    looping.tile_loop = true;
    CHECK_THROWS_WITH(family->plan(looping, a, h200), Catch::Contains("'seqlen_q'") && Catch::Contains("2^31"));
}

TEST_CASE("each family serves its problems and refuses the rest", "[families]") {
    const auto family = [](DType dtype, int d, int cc) { return kernel_family_for({dtype, d, false, 4096, 4096}, cc); };
    // Hopper: the warp-specialized family where it measured faster, the wgmma family where it serves (fp16/bf16,
    // multiples of 64), else mma.sync.
    for (int d : {64, 128, 192}) {
        CHECK(family(DType::bf16, d, 90) == "f16-ws");
        CHECK(family(DType::f16, d, 90) == "f16-ws");
    }
    CHECK(family(DType::bf16, 256, 90) == "f16-ws");  // not causal: 80 keys, staggered
    CHECK(kernel_family_for({DType::bf16, 256, true, 4096, 4096}, 90) == "f16-ws");
    CHECK(kernel_family_for({DType::bf16, 64, true, 256, 256}, 90) == "f16-wgmma");  // causal, short keys
    CHECK(kernel_family_for({DType::bf16, 64, true, 1024, 1024}, 90) == "f16-ws");   // 256-row tiles
    ProblemClass capped{DType::bf16, 64, true, 1024, 1024};
    capped.mods.softcap = true;
    CHECK(kernel_family_for(capped, 90) == "f16-wgmma");  // with a modifier below 2k keys
    CHECK(kernel_family_for({DType::bf16, 64, false, 1024, 1024}, 90) == "f16-ws");
    // Head dims that are multiples of 8 but not of 64 run padded in the warp-specialized kernel.
    CHECK(tile_is_legal(DType::bf16, 96, {128, 128, 12, 3, "ws"}));
    CHECK(tile_is_legal(DType::f16, 8, {128, 128, 12, 2, "ws"}));
    CHECK(tile_is_legal(DType::bf16, 248, {128, 64, 12, 2, "ws"}));
    CHECK_FALSE(tile_is_legal(DType::bf16, 100, {128, 128, 12, 2, "ws"}));  // not a multiple of 8
    CHECK_FALSE(tile_is_legal(DType::bf16, 160, {128, 128, 12, 2, "ws"}));  // 245 KB of shared memory (d padded to 192)
    // An input repeated along a dimension (zero stride) cannot be a TMA map: the wgmma family takes it.
    AttentionArgs shared_kv;
    shared_kv.dtype = DType::bf16;
    shared_kv.batch = 2, shared_kv.heads_q = shared_kv.heads_kv = 4, shared_kv.head_dim = 128;
    shared_kv.seqlen_q = shared_kv.seqlen_k = 4096;
    shared_kv.layout_bshd();
    CHECK(kernel_family_for(ProblemClass::of(shared_kv), 90) == "f16-ws");
    shared_kv.k_strides.batch = shared_kv.v_strides.batch = 0;  // one K/V for both sequences
    CHECK(ProblemClass::of(shared_kv).repeated_input);
    CHECK(kernel_family_for(ProblemClass::of(shared_kv), 90) == "f16-wgmma");
    shared_kv.batch = 1;  // a zero stride over one element repeats nothing
    CHECK_FALSE(ProblemClass::of(shared_kv).repeated_input);
    AttentionArgs no_keys = shared_kv;  // BHSD strides of a tensor without keys are zero: nothing repeats
    no_keys.batch = 2, no_keys.seqlen_k = 0;
    no_keys.layout_bhsd();
    CHECK(no_keys.k_strides.head == 0);
    CHECK_FALSE(ProblemClass::of(no_keys).repeated_input);
    CHECK(kernel_family_for(ProblemClass::of(no_keys), 90) == "f16-ws");
    // A forced or tuned tile runs wherever its family serves the problem, chosen or not.
    CHECK(tile_configs({DType::bf16, 64, true, 1024, 1024}, 90).front().variant == "ws");
    for (int d : {40, 96, 160, 248}) CHECK(family(DType::bf16, d, 90) == "f16-ws");  // padded in shared memory
    for (int d : {8, 24, 32}) CHECK(family(DType::bf16, d, 90) == "f16-mma");
    // Other GPUs of sm_80 and newer: mma.sync for every fp16/bf16 head dim.
    for (int cc : {80, 86, 89, 100, 120}) CHECK(family(DType::f16, 128, cc) == "f16-mma");
    for (int d : {1, 33, 64, 255}) CHECK(family(DType::f32, d, 90) == "fp32");
    // Refused: head dims no kernel takes, GPUs older than sm_80.
    CHECK_THROWS_WITH(family(DType::bf16, 36, 90), Catch::Contains("'head_dim'"));
    CHECK_THROWS_WITH(family(DType::f16, 264, 80), Catch::Contains("'head_dim'"));
    CHECK_THROWS_AS(family(DType::f32, 64, 75), InvalidArgument);

    // Every family owns its tiles and only those.
    CHECK(AttentionKernelSpec{DType::f32, 64, false, {64, 64, 4}}.family() == "fp32");
    CHECK(AttentionKernelSpec{DType::bf16, 64, false, {128, 64, 4, 2}}.family() == "f16-mma");
    CHECK(AttentionKernelSpec{DType::bf16, 64, false, {64, 64, 4, 2, "wgmma"}}.family() == "f16-wgmma");
    CHECK_THROWS_WITH(AttentionKernelSpec({DType::bf16, 64, false, {64, 64, 4, 2, "nope"}}).family(),
                      Catch::Contains("'tile'"));
    CHECK_FALSE(tile_is_legal(DType::bf16, 64, {64, 64, 4}));     // an fp32 tile
    CHECK_FALSE(tile_is_legal(DType::f32, 64, {128, 64, 4, 2}));  // an fp16/bf16 tile
    CHECK(kernel_family_has_even_variant("f16-mma"));
    CHECK(kernel_family_has_even_variant("f16-wgmma"));
    CHECK_FALSE(kernel_family_has_even_variant("fp32"));
}

TEST_CASE("every tile of every family prints and parses back to itself", "[families]") {
    std::size_t count = 0;
    for (DType dtype : {DType::f32, DType::bf16})
        for (int d : {8, 64, 96, 128, 256})
            for (const TileConfig& t : tile_configs(dtype, d)) {
                INFO(t.to_string());
                const std::optional<TileConfig> parsed = parse_tile_config(t.to_string());
                REQUIRE(parsed.has_value());
                CHECK(*parsed == t);
                CHECK(tile_is_legal(dtype, d, t));
                ++count;
            }
    CHECK(count > 200);
    // The spellings of each family stay as they were.
    CHECK(parse_tile_config("64x64w4") == TileConfig{64, 64, 4});
    CHECK(parse_tile_config("128x64w4s2") == TileConfig{128, 64, 4, 2});
    CHECK(parse_tile_config("128x64w8s2-wgmma") == TileConfig{128, 64, 8, 2, "wgmma"});
}

TEST_CASE("validation rejects strides whose last element lies beyond what a GPU addresses", "[families][validation]") {
    alignas(16) static float storage[64];
    AttentionArgs a;
    a.q = storage, a.k = storage + 16, a.v = storage + 32, a.o = storage + 48;
    a.batch = 2, a.heads_q = 4, a.heads_kv = 4, a.seqlen_q = 64, a.seqlen_k = 64, a.head_dim = 64;
    a.layout_bshd();
    CHECK_NOTHROW(validate(a));
    const auto rejected = [](const AttentionArgs& args) {
        try {
            validate(args);
        } catch (const InvalidArgument& e) {
            return e.argument();
        }
        return std::string("(accepted)");
    };
    AttentionArgs huge = a;
    huge.k_strides.batch = std::int64_t{1} << 62;  // (batch - 1) * 2^62 elements * 4 bytes overflows 64 bits
    CHECK(rejected(huge) == "k strides");
    huge = a;
    huge.v_strides.row = std::int64_t{1} << 41;  // 63 rows * 2^41 * 4 bytes: past 2^48 bytes without overflowing
    CHECK(rejected(huge) == "v strides");
    huge = a;
    huge.o_strides.head = std::numeric_limits<std::int64_t>::max();
    CHECK(rejected(huge) == "o strides");
    huge = a;
    huge.q_strides.batch = (std::int64_t{1} << 44);  // 2^44 elements * 4 bytes = 2^46: addressable, accepted
    CHECK(rejected(huge) == "(accepted)");
    // A stride that only matters for an extent of one is never multiplied: batch 1 accepts any batch stride.
    huge = a;
    huge.batch = 1, huge.q_strides.batch = std::int64_t{1} << 62;
    CHECK(rejected(huge) == "(accepted)");
    CHECK_THROWS_WITH(validate([&] {
                          AttentionArgs b = a;
                          b.k_strides.row = std::int64_t{1} << 62;
                          return b;
                      }()),
                      Catch::Contains("within 2^48 bytes"));
}

TEST_CASE("a head dim no family runs is named before the tensors are looked at", "[families][validation]") {
    for (DType dtype : {DType::f16, DType::bf16}) {
        AttentionArgs a;  // no tensors at all
        a.dtype = dtype, a.batch = 1, a.heads_q = a.heads_kv = 2, a.seqlen_q = a.seqlen_k = 16, a.head_dim = 100;
        CHECK_THROWS_WITH(validate(a), "invalid argument 'head_dim': expected a multiple of 8 for fp16/bf16, got 100");
        CHECK_THROWS_WITH(attention(a, nullptr), Catch::Contains("'head_dim'"));
        a.head_dim = 96;  // served: now the missing tensors are the problem
        CHECK_THROWS_WITH(validate(a), Catch::Contains("'q'"));
    }
}

namespace {

// A family defined in this test binary: fp32 at head dim 24 on sm_86 only, compiled from sample.cu.
class FakeFamily final : public KernelFamily {
public:
    const char* name() const override { return "fake"; }
    int priority() const override { return 1; }  // asked before every built-in family
    bool accepts(DType dtype, int head_dim) const override { return dtype == DType::f32 && head_dim == 24; }
    bool accepts_dtype(DType dtype) const override { return dtype == DType::f32; }
    bool runs_on(int cc) const override { return cc == 86; }
    void check_args(const AttentionArgs&) const override {}
    bool owns(const TileConfig& t) const override { return t.variant == "fake"; }
    bool tile_is_legal(int, const TileConfig& t) const override { return owns(t) && t.block_m == 32 * t.warps; }
    std::vector<TileConfig> sweep_tiles(int) const override { return {{32, 32, 1, 0, "fake"}, {64, 32, 2, 0, "fake"}}; }
    std::vector<TileConfig> preferred_tiles(int, const ProblemClass&) const override {
        return {{64, 32, 2, 0, "fake"}};
    }
    bool has_even_variant() const override { return false; }
    std::string source_name() const override { return "sample.cu"; }
    std::vector<std::string> kernels(const AttentionKernelSpec& s) const override {
        return {"fa_jit::sample::scale_add<" + std::to_string(s.tile.block_m) + ">"};
    }
    std::size_t shared_bytes(const AttentionKernelSpec&) const override { return 0; }
};

// Registers the fake family for the lifetime of a test case.
struct ScopedFakeFamily {
    ScopedFakeFamily() { register_family(std::make_shared<FakeFamily>()); }
    ~ScopedFakeFamily() { unregister_family("fake"); }
};

}  // namespace

TEST_CASE("a family registered outside the library is used by the chooser, warm-up and the sweep", "[families]") {
    const ProblemClass problem{DType::f32, 24, false, 4096, 4096};
    REQUIRE(kernel_family_for(problem, 86) == "fp32");
    REQUIRE_FALSE(parse_tile_config("64x32w2-fake").has_value());
    {
        ScopedFakeFamily fake;
        CHECK(kernel_families().front() == "fake");
        // The chooser: the fake family runs the problem it serves, the built-in ones the rest.
        CHECK(kernel_family_for(problem, 86) == "fake");
        CHECK(default_tile_config(86, problem) == TileConfig{64, 32, 2, 0, "fake"});
        CHECK(kernel_family_for(problem, 80) == "fp32");
        CHECK(kernel_family_for({DType::f32, 32, false, 4096, 4096}, 86) == "fp32");
        // Its tiles parse, and belong to it.
        CHECK(parse_tile_config("64x32w2-fake") == TileConfig{64, 32, 2, 0, "fake"});
        CHECK(tile_is_legal(DType::f32, 24, {32, 32, 1, 0, "fake"}));
        CHECK_FALSE(tile_is_legal(DType::f32, 24, {32, 32, 2, 0, "fake"}));
        CHECK(tile_runs_on({32, 32, 1, 0, "fake"}, 86));
        // The sweep: its tiles first, then the fp32 family's.
        const std::vector<TileConfig> sweep = tile_configs(problem, 86);
        REQUIRE(sweep.size() > 2);
        CHECK(sweep[0] == TileConfig{32, 32, 1, 0, "fake"});
        CHECK(sweep[1] == TileConfig{64, 32, 2, 0, "fake"});
        CHECK(sweep[2].variant.empty());
        // Warm-up: its default, compiled from its source into a request that names it.
        const std::vector<AttentionKernelSpec> warm = warmup_specs(problem, 86, false);
        REQUIRE(warm.size() == 1);
        CHECK(warm[0].tile == TileConfig{64, 32, 2, 0, "fake"});
        CHECK(warm[0].family() == "fake");
        const CompileRequest request = attention_compile_request(warm[0], "sm_86");
        CHECK(request.family == "fake");
        CHECK(request.name_expressions == std::vector<std::string>{"fa_jit::sample::scale_add<64>"});
        const Compiled compiled = compile(request);
        CHECK(!compiled.binary.empty());
        CHECK(warmup_specs(problem, 86, true).size() == sweep.size());
        // Its launch plan is the default one: query tiles x heads x batch.
        AttentionArgs args;
        args.dtype = DType::f32, args.batch = 3, args.heads_q = 5, args.seqlen_q = 100, args.head_dim = 24;
        const LaunchPlan plan = family_owning(warm[0].tile)->plan(warm[0], args, DeviceInfo{});
        CHECK(plan.count == 1);
        CHECK(plan.launches[0].grid[0] == 2);
        CHECK(plan.launches[0].grid[1] == 5);
        CHECK(plan.launches[0].grid[2] == 3);
        CHECK(plan.launches[0].block == 64);
        CHECK(plan.workspace_bytes == 0);
    }
    CHECK(kernel_family_for(problem, 86) == "fp32");
    CHECK_FALSE(parse_tile_config("64x32w2-fake").has_value());
}

// The f16-ws tile choice leads with a tile that fits at every head dim it takes, for every feature combination and
// length bucket, and the looping variant exists only where its rule says (up to 2k keys, 8k under the causal mask).
TEST_CASE("the f16-ws tile choice leads with a legal tile everywhere", "[families]") {
    int checked = 0;
    for (DType dtype : {DType::f16, DType::bf16})
        for (int d = 8; d <= 256; d += 8)
            for (bool causal : {false, true})
                for (int n : {1, 512, 2048, 4096, 8192, 16384, 131072})
                    for (int bits = 0; bits < 8; ++bits)
                        for (int features = 0; features < 4; ++features) {
                            ProblemClass p{dtype, d, causal, n, n};
                            p.mods.window = bits & 1, p.mods.softcap = bits & 2, p.mods.alibi = bits & 4;
                            p.varlen = features & 1, p.paged = features & 2;
                            const std::vector<TileConfig> tiles = families::f16_ws_preferred_tiles(p);
                            INFO("d " << d << " causal " << causal << " N " << n << " mods " << bits << " features "
                                      << features);
                            REQUIRE(!tiles.empty());
                            CHECK(families::ws_tile_fits(d, tiles.front()));
                            AttentionKernelSpec s{dtype, d, causal, tiles.front()};
                            s.mods = p.mods, s.varlen = p.varlen, s.paged = p.paged;
                            if (families::f16_ws_tile_loop(s, n)) CHECK(n <= (causal ? 8192 : 2048));
                            ++checked;
                        }
    CHECK(checked == 2 * 32 * 2 * 7 * 8 * 4);
}
