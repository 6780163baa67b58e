// attention() on a GPU against a float64 host reference, over shapes no tile divides, GQA/MQA, causal both ways,
// BSHD, BHSD and padded strides, head dims 16..256 (powers of two or not), in fp32, fp16 and bf16. Outputs are
// poisoned before each run.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <tuple>

#include "attention/family.hpp"
#include "attention/metadata_check.hpp"
#include "common/element_types.hpp"
#include "fa_jit/fa_jit.h"
#include "fa_jit/tuning.hpp"
#include "support/gpu_cases.hpp"

using namespace fa_jit;
using namespace fa_jit::testing;

TEST_CASE("attention matches a float64 reference over a grid of shapes in fp32, fp16 and bf16", "[attention]") {
    current_device();
    with_kernels_precompiled([&] {
        std::mt19937 rng(2026);
        const std::vector<Case> cases = {
            {1, 1, 1, 1, 1, 16, false, Layout::bhsd},
            {2, 3, 3, 77, 77, 64, false, Layout::bshd},
            {2, 4, 2, 100, 300, 64, true, Layout::bhsd},   // GQA; causal with Nq < Nk
            {1, 2, 1, 300, 100, 128, true, Layout::bshd},  // MQA; causal with Nq > Nk: the first 200 rows see no key
            {1, 8, 1, 129, 257, 96, false, Layout::padded},
            {3, 2, 2, 513, 513, 128, true, Layout::bhsd},
            {1, 2, 2, 200, 333, 256, false, Layout::bshd},
            {1, 2, 2, 190, 190, 256, true, Layout::padded},
            {1, 3, 3, 65, 65, 40, true, Layout::bhsd},
            {1, 2, 2, 70, 90, 72, false, Layout::bshd},
            {1, 2, 1, 111, 64, 160, true, Layout::bshd},
            {1, 2, 2, 64, 200, 192, false, Layout::padded},
            {1, 1, 1, 33, 47, 7, false, Layout::bhsd},     // head_dim below 16 and odd: 4-byte copies
            {1, 2, 2, 20, 0, 64, false, Layout::bshd},     // no keys at all: O = 0, LSE = -inf
            {4, 64, 8, 64, 64, 32, false, Layout::bhsd},   // 256 (batch, head) pairs
            {2, 96, 96, 40, 40, 16, true, Layout::bshd},   // 192 pairs, tiny head dim
            {1, 2, 2, 64, 8192, 64, false, Layout::bhsd},  // many keys: accumulation error must not grow with seqlen_k
            {1, 2, 1, 48, 6000, 128, true, Layout::bshd},
            {2, 4, 2, 256, 512, 128, true, Layout::bhsd},  // every tile divides both lengths: no bounds checks
            {1, 4, 4, 128, 128, 64, false, Layout::padded},
            {1, 2, 2, 512, 512, 256, false, Layout::bshd},
        };
        for (const Case& c : cases) check_case_all_dtypes(c, rng);
    });
}

// A few shapes that together reach every code path (edges, causal both ways, GQA, odd head dims, no keys), small
// enough to run under compute-sanitizer memcheck and racecheck (scripts/gpu-check).
TEST_CASE("attention on the sanitizer subset", "[attention][sanitize]") {
    current_device();
    with_kernels_precompiled([&] {
        std::mt19937 rng(11);
        const std::vector<Case> cases = {
            {1, 2, 1, 70, 45, 64, true, Layout::bshd},    // Nq > Nk causal: rows without keys
            {1, 2, 2, 45, 70, 128, true, Layout::bhsd},   // Nq < Nk causal
            {1, 2, 1, 33, 47, 7, false, Layout::padded},  // 4-byte copies
            {1, 1, 1, 40, 90, 256, false, Layout::bshd},
            {1, 1, 1, 10, 0, 32, false, Layout::bshd},
            {1, 2, 2, 128, 192, 96, true, Layout::bhsd},    // fp16/bf16 without bounds checks
            {1, 4, 2, 200, 330, 256, true, Layout::bshd},   // sm_90: the warp-specialized kernel, ragged, GQA
            {1, 2, 1, 300, 200, 128, false, Layout::bshd},  // and its persistent blocks
            // Score modifiers: a window crossing tile borders with rows that see no key, softcap and ALiBi with GQA.
            {1, 4, 2, 150, 100, 128, true, Layout::bshd, {}, {}, 0, false, Mods{30, 5, 6.f, true}},
            {1, 2, 1, 90, 140, 64, false, Layout::bhsd, {}, {}, 0, false, Mods{20, 10}},
        };
        for (const Case& c : cases) check_case_all_dtypes(c, rng);
        // Packed sequences (fp16 / bf16 families only).
        Case packed{1, 4, 2, 200, 150, 128, true, Layout::bshd};
        packed.seqlens_q = {0, 200, 1, 70}, packed.seqlens_k = {5, 150, 0, 129};
        for (DType dtype : {DType::bf16, DType::f16}) check_case(packed, dtype, rng);
        // sm_90: the warp-specialized kernel's 192-key tile (one S instruction of 192 columns) on ragged keys; three
        // consumer warpgroups (192 rows), ragged and causal.
        if (current_device().cc() == 90) {
            check_case({1, 2, 1, 150, 500, 64, false, Layout::bshd, {128, 192, 12, 3, "ws"}}, DType::bf16, rng);
            check_case({1, 4, 2, 400, 300, 64, false, Layout::bshd, {192, 128, 16, 3, "ws"}}, DType::bf16, rng);
            check_case({1, 4, 2, 300, 300, 64, true, Layout::bshd, {256, 64, 20, 2, "ws"}}, DType::bf16, rng);  // four
            check_case({1, 2, 1, 250, 330, 96, true, Layout::bhsd, {192, 96, 16, 3, "ws"}}, DType::f16, rng);
            // More tiles than SMs: blocks that loop, O in 16-byte stores from the registers (d 128; d 160 at 64 keys).
            check_case({1, 140, 140, 100, 150, 128, false, Layout::bshd, {128, 128, 12, 3, "ws"}}, DType::bf16, rng);
            check_case({1, 140, 70, 130, 90, 160, false, Layout::bhsd, {128, 64, 12, 3, "ws"}}, DType::f16, rng);
            // Under the causal mask, pairs of tiles; Nq > Nk: the first tile of each head has no keys.
            check_case({1, 50, 10, 300, 100, 128, true, Layout::bshd, {128, 128, 12, 3, "ws"}}, DType::bf16, rng);
            // Past 8k keys under the causal mask, one tile per block, the heads in two groups of 5.
            check_case({1, 10, 5, 200, 8300, 64, true, Layout::bshd}, DType::bf16, rng);
            // Logits hundreds above each row's first maxima: the settled max recomputes its rows from global memory.
            check_case({1, 2, 1, 250, 8300, 64, true, Layout::padded, {}, {}, 0, false, Mods{-1, -1, 0.f, false, 40.f}},
                       DType::bf16, rng);
        }
    });
}

TEST_CASE("every tile configuration of a head dim computes the same function", "[attention]") {
    current_device();
    with_kernels_precompiled([&] {
        std::mt19937 rng(7);
        for (bool causal : {false, true})
            for (const TileConfig& tile : tile_configs(DType::f32, 64)) {
                if (tile.block_m > 64 && tile.warps < 4) continue;  // slow and never chosen; still compiled in CI
                check_case({1, 2, 2, 150, 170, 64, causal, Layout::bshd, tile}, DType::f32, rng);
            }
        // fp16/bf16 (every prefill family where the GPU runs it; the decode family's tiles are in test_decode_gpu.cpp):
        // the bounds-checked variant on ragged lengths, the unchecked one on lengths every tile divides.
        const int cc = current_device().cc();
        REQUIRE(tile_configs(DType::bf16, 64) == tile_configs(DType::f16, 64));
        for (const TileConfig& tile : tile_configs({DType::bf16, 64, true, 150, 170}, cc)) {
            check_case({1, 2, 1, 150, 170, 64, true, Layout::bshd, tile}, DType::bf16, rng);
            check_case({1, 2, 2, 256, 384, 64, false, Layout::bhsd, tile}, DType::f16, rng);
        }
    });
}

// On sm_90 attention() picks the wgmma kernel for head dims that are multiples of 64, so the shape grid above no
// longer reaches the mma.sync kernel there: run both families at those head dims, every wgmma tile included.
TEST_CASE("both fp16/bf16 kernels at the head dims the wgmma kernel serves", "[attention]") {
    const int cc = current_device().cc();
    with_kernels_precompiled([&] {
        std::mt19937 rng(64);
        for (int d : {64, 128, 192, 256}) {
            std::vector<TileConfig> tiles = {default_tile_config(80, {DType::bf16, d, true, 4096, 4096})};  // mma.sync
            for (const TileConfig& tile : tile_configs(DType::bf16, d))
                if (tile.variant == "wgmma" && tile_runs_on(tile, cc)) tiles.push_back(tile);
            for (const TileConfig& tile : tiles) {
                check_case({1, 2, 1, 150, 170, d, true, Layout::bshd, tile}, DType::bf16, rng);
                check_case({2, 2, 2, 256, 384, d, false, Layout::bhsd, tile}, DType::f16, rng);
                check_case({1, 2, 2, 200, 130, d, true, Layout::padded, tile}, DType::f16, rng);  // Nq > Nk: empty rows
            }
        }
    });
}

namespace {
// Whether this GPU runs the warp-specialized Hopper family (sm_90); says so where it does not.
bool runs_ws_family() {
    if (current_device().cc() == 90) return true;
    WARN("the warp-specialized kernel runs on sm_90 only: not tested on this GPU");
    return false;
}
}  // namespace

// The warp-specialized Hopper family for forced tiles, in three test cases (each compiles its own few dozen kernels, so
// scripts/gpu-check runs them in parallel processes). On ragged lengths, GQA, causal both ways (Nq > Nk: rows without
// keys), BSHD, BHSD and padded strides, and sequences without keys: every legal tile at the multiples of 64;
TEST_CASE("the warp-specialized kernel matches the reference for forced tiles (sm_90)", "[attention]") {
    if (!runs_ws_family()) return;
    with_kernels_precompiled([&] {
        std::mt19937 rng(90);
        for (int d : {64, 128, 192, 256})
            for (int block_m : {128, 192, 256})  // two, three or four consumer warpgroups
                for (int block_n : {64, 80, 96, 112, 128, 160, 176, 192})
                    for (int stages : {2, 3}) {
                        const TileConfig tile{block_m, block_n, block_m / 16 + 4, stages, "ws"};
                        if (!tile_is_legal(DType::bf16, d, tile)) continue;
                        INFO(tile.to_string());
                        check_case({2, 4, 2, 300, 517, d, true, Layout::bshd, tile}, DType::bf16, rng);
                        check_case({1, 2, 2, 200, 130, d, true, Layout::padded, tile}, DType::f16, rng);
                        check_case({2, 2, 1, 128, 256, d, false, Layout::bhsd, tile}, DType::bf16, rng);
                    }
        check_case({1, 2, 2, 70, 0, 128, false, Layout::bshd, {128, 128, 12, 2, "ws"}}, DType::bf16, rng);
    });
}

// one tile at every other multiple of 8 (padded in shared memory), and the wide tiles of those head dims;
TEST_CASE("the warp-specialized kernel matches the reference for forced tiles at padded head dims (sm_90)",
          "[attention]") {
    if (!runs_ws_family()) return;
    with_kernels_precompiled([&] {
        std::mt19937 rng(91);
        for (int d = 8; d <= 256; d += 8) {
            if (d % 64 == 0) continue;
            const TileConfig tile{128, d <= 128 ? 128 : 64, 12, 2, "ws"};
            INFO("d " << d);
            check_case({2, 4, 2, 300, 211, d, true, Layout::bshd, tile}, DType::bf16, rng);
            check_case({1, 2, 1, 150, 260, d, false, Layout::padded, tile}, DType::f16, rng);
            if (d > 128) continue;
            const TileConfig rows192{192, d <= 80 ? 80 : d <= 96 ? 96 : 64, 16, 3, "ws"};  // three consumer warpgroups
            check_case({2, 4, 2, 300, 211, d, true, Layout::bshd, rows192}, DType::bf16, rng);
            check_case({1, 2, 1, 450, 260, d, false, Layout::padded, rows192}, DType::f16, rng);
            if (d <= 64) {  // four consumer warpgroups
                const TileConfig rows256{256, 64, 20, 3, "ws"};
                check_case({2, 4, 2, 300, 211, d, true, Layout::bshd, rows256}, DType::bf16, rng);
                check_case({1, 2, 1, 512, 260, d, false, Layout::padded, rows256}, DType::f16, rng);
            }
            if (d < 88 || d > 96) continue;
            // d 88-96 past 2k keys: 192 x 112, also with a window and ALiBi without the mask.
            const TileConfig keys112{192, 112, 16, 3, "ws"};
            check_case({2, 4, 2, 300, 517, d, true, Layout::bshd, keys112}, DType::bf16, rng);
            check_case({1, 2, 1, 450, 260, d, false, Layout::padded, keys112}, DType::f16, rng);
            check_case({1, 4, 2, 400, 700, d, false, Layout::bshd, keys112, {}, 0, false, Mods{150, 90, 0.f, true}},
                       DType::bf16, rng);
        }
        check_case({1, 2, 2, 70, 0, 96, false, Layout::bhsd, {128, 128, 12, 2, "ws"}}, DType::bf16, rng);
        // The wide tiles of padded head dims: 112 keys at d 136..184, 80 keys at d 200..248.
        for (int d : {136, 160, 184, 200, 224, 248}) {
            const TileConfig tile{128, d <= 192 ? 112 : 80, 12, 2, "ws"};
            INFO("d " << d << " " << tile.to_string());
            check_case({2, 4, 2, 300, 211, d, true, Layout::bshd, tile}, DType::bf16, rng);
            check_case({1, 2, 1, 650, 700, d, false, Layout::padded, tile}, DType::f16, rng);
        }
    });
}

// and blocks that loop over tiles, blocks that start at their own key tile, and tiles over pages.
TEST_CASE("the warp-specialized kernel matches the reference for forced tiles in looping blocks (sm_90)",
          "[attention]") {
    if (!runs_ws_family()) return;
    with_kernels_precompiled([&] {
        std::mt19937 rng(92);
        // More tiles than SMs: the persistent blocks (no causal mask; the looping variant at d 65-256, every kernel at
        // d <= 64) loop over several tiles each, the K/V ring and the warpgroups' turns running on from one tile to the
        // next.
        check_case({2, 8, 2, 2200, 300, 128, false, Layout::bshd, {128, 128, 12, 3, "ws"}}, DType::bf16, rng);
        check_case({1, 8, 8, 4200, 200, 64, false, Layout::bhsd, {128, 64, 12, 2, "ws"}}, DType::f16, rng);
        check_case({1, 8, 4, 4200, 200, 160, false, Layout::bshd, {128, 64, 12, 3, "ws"}}, DType::bf16, rng);
        check_case({1, 8, 8, 4200, 500, 64, false, Layout::bshd, {128, 192, 12, 3, "ws"}}, DType::bf16, rng);
        check_case({1, 8, 8, 4200, 500, 64, false, Layout::bshd, {192, 128, 16, 3, "ws"}}, DType::bf16, rng);
        check_case({1, 8, 8, 4200, 500, 64, false, Layout::bshd, {256, 64, 20, 3, "ws"}}, DType::bf16, rng);
        // 256 rows: the chosen tile at N 512 (GQA), and one tile per block past 2k keys (the stagger).
        check_case({2, 32, 8, 512, 512, 64, false, Layout::bhsd, {256, 64, 20, 3, "ws"}}, DType::f16, rng);
        check_case({1, 2, 2, 6244, 2100, 64, false, Layout::bshd, {256, 64, 20, 2, "ws"}}, DType::bf16, rng);
        check_case({2, 8, 2, 2200, 300, 96, false, Layout::bhsd, {192, 96, 16, 3, "ws"}}, DType::f16, rng);
        check_case({1, 8, 4, 4200, 300, 256, false, Layout::bshd, {128, 64, 12, 2, "ws"}}, DType::bf16, rng);
        check_case({2, 8, 2, 2200, 400, 224, false, Layout::bhsd, {128, 64, 12, 2, "ws"}}, DType::f16, rng);
        // d 136-192 past 64 keys: d 160 at 112 keys, d 176 / 192 at 96 (d 168-192 at 112 never loop).
        check_case({2, 8, 2, 2200, 300, 160, false, Layout::bshd, {128, 112, 12, 2, "ws"}}, DType::bf16, rng);
        check_case({1, 8, 4, 4200, 500, 176, false, Layout::bhsd, {128, 96, 12, 2, "ws"}}, DType::f16, rng);
        check_case({1, 8, 8, 2200, 2048, 192, false, Layout::padded, {128, 96, 12, 2, "ws"}}, DType::bf16, rng);
        // Under the causal mask looping blocks take pairs of tiles, a head's heaviest with its lightest; Nq > Nk: tiles
        // without keys, some a block's last; Nq < Nk; an odd number of tiles per head (the heaviest paired with a tile
        // without rows) and fewer than two per SM (half as many blocks as tiles); 192 rows at 96 keys, 12 and 11 tiles
        // per head.
        check_case({2, 8, 2, 2200, 300, 128, true, Layout::bshd, {128, 128, 12, 3, "ws"}}, DType::bf16, rng);
        check_case({1, 8, 8, 4200, 200, 64, true, Layout::bhsd, {128, 64, 12, 2, "ws"}}, DType::f16, rng);
        check_case({1, 140, 70, 130, 1500, 160, true, Layout::bshd, {128, 64, 12, 3, "ws"}}, DType::bf16, rng);
        check_case({2, 8, 2, 2200, 1800, 96, true, Layout::padded, {128, 128, 12, 3, "ws"}}, DType::f16, rng);
        check_case({1, 60, 20, 300, 300, 128, true, Layout::bshd, {128, 128, 12, 3, "ws"}}, DType::bf16, rng);
        check_case({2, 8, 2, 2200, 1800, 96, true, Layout::bshd, {192, 96, 16, 3, "ws"}}, DType::f16, rng);
        check_case({1, 21, 21, 2000, 2000, 96, true, Layout::bhsd, {192, 96, 16, 3, "ws"}}, DType::bf16, rng);
        // Two Q buffers (128 rows in 2 stages at d 113-128: ws_layout::q_buffers), each tile's O staged in its own
        // buffer and the buffer released after the stores; tiles without keys (Nq > Nk, a head's odd tile count) store
        // from the registers while the producer may be filling their buffer; fewer tiles than SMs (one each); ALiBi's
        // columns behind the second buffer's barriers.
        check_case({2, 8, 2, 2200, 300, 128, false, Layout::bshd, {128, 128, 12, 2, "ws"}}, DType::bf16, rng);
        check_case({2, 8, 2, 2200, 300, 128, true, Layout::bshd, {128, 128, 12, 2, "ws"}}, DType::f16, rng);
        check_case({1, 140, 70, 130, 500, 120, true, Layout::padded, {128, 128, 12, 2, "ws"}}, DType::bf16, rng);
        check_case({1, 60, 20, 300, 300, 128, true, Layout::bhsd, {128, 128, 12, 2, "ws"}}, DType::bf16, rng);
        check_case({1, 6, 2, 300, 1000, 128, false, Layout::bshd, {128, 128, 12, 2, "ws"}}, DType::f16, rng);
        Case alibi_two_q{2, 8, 2, 1100, 900, 128, true, Layout::bshd, {128, 128, 12, 2, "ws"}};
        alibi_two_q.mods = Mods{-1, -1, 0.f, true};
        check_case(alibi_two_q, DType::bf16, rng);
        // d 200-256 at 64 keys (their tile up to 512 keys): Nq > Nk, and 2 tiles per head of 130 rows.
        check_case({2, 8, 2, 2200, 300, 256, true, Layout::bshd, {128, 64, 12, 2, "ws"}}, DType::bf16, rng);
        check_case({1, 140, 70, 130, 500, 200, true, Layout::padded, {128, 64, 12, 2, "ws"}}, DType::f16, rng);
        // The same tile at d 40-64 (its default there from 2k to 8k keys), padded d 48 with Nq < Nk.
        check_case({2, 8, 2, 2200, 1800, 64, true, Layout::bhsd, {192, 96, 16, 3, "ws"}}, DType::bf16, rng);
        check_case({1, 12, 4, 1000, 2500, 48, true, Layout::bshd, {192, 96, 16, 3, "ws"}}, DType::f16, rng);
        // 256 rows under the mask (d 40-64's tile at 257-2048 keys), each warpgroup from its own rows' diagonal on:
        // Nq < Nk, Nq > Nk (warpgroups whose rows see no keys), the chosen N 1k row with GQA.
        check_case({4, 16, 4, 1000, 1500, 64, true, Layout::bshd, {256, 64, 20, 3, "ws"}}, DType::bf16, rng);
        check_case({2, 16, 16, 1500, 700, 48, true, Layout::bhsd, {256, 64, 20, 3, "ws"}}, DType::f16, rng);
        check_case({4, 32, 8, 1024, 1024, 64, true, Layout::bshd, {256, 64, 20, 3, "ws"}}, DType::bf16, rng);
        // Without the causal mask a block with one tile starts at its group's key tile (tile::first_visit; groups of
        // one query tile at d <= 64, of 16 past it: kStaggerGroup): query tiles of several groups over ragged keys put
        // the tile that holds the last keys first, in the middle or last of a block's visits. At each head dim's
        // default tile at d 64 (5 groups); past it 49 query tiles a head (groups 0-3, fewer tiles than SMs: one each)
        // over 3 or 4 key tiles; with more than 2k keys (d 64: in a kernel that may loop, one block per tile, more
        // tiles than SMs); with softcap and ALiBi, whose scores depend on the key tile's position.
        check_case({1, 2, 2, 600, 700, 64, false, Layout::bshd}, DType::bf16, rng);
        for (const auto& [d, tile] : {std::pair<int, TileConfig>{128, {128, 128, 12, 3, "ws"}},
                                      {192, {128, 96, 12, 2, "ws"}},
                                      {256, {128, 80, 12, 2, "ws"}}}) {
            INFO("staggered, d " << d);
            check_case({1, 2, 2, 6244, 300, d, false, Layout::bshd, tile}, DType::bf16, rng);
        }
        check_case({1, 8, 8, 4200, 2100, 64, false, Layout::bhsd, {128, 128, 12, 3, "ws"}}, DType::f16, rng);
        check_case({1, 4, 4, 4200, 2100, 128, false, Layout::bhsd, {128, 128, 12, 3, "ws"}}, DType::f16, rng);
        Case softcap_alibi{1, 2, 1, 6244, 700, 128, false, Layout::bshd, {128, 128, 12, 3, "ws"}};
        softcap_alibi.mods = Mods{-1, -1, 5.f, true, 1.f};
        check_case(softcap_alibi, DType::bf16, rng);
        Case alibi{1, 2, 1, 6244, 700, 256, false, Layout::bshd, {128, 80, 12, 2, "ws"}};
        alibi.mods = Mods{-1, -1, 0.f, true};
        check_case(alibi, DType::bf16, rng);
        // 192 keys per tile over pages: boxes of gcd(page size, 192) rows, 12 of them at page size 16.
        for (int page : {16, 64}) {
            Case paged{3, 4, 2, 200, 450, 64, true, Layout::bshd, {128, 192, 12, 3, "ws"}, {450, 193, 0}};
            paged.page_size = page, paged.share_pages = true;
            check_case(paged, DType::bf16, rng);
        }
        // The same at d 128 (its paged tile past 4k keys; row-grouped maps), both masks, pages of 48: boxes of 48 rows.
        for (int page : {16, 48, 256}) {
            Case paged{3, 4, 2, 300, 600, 128, page != 48, Layout::bshd, {128, 192, 12, 2, "ws"}, {600, 401, 0}};
            paged.page_size = page, paged.share_pages = true;
            check_case(paged, DType::bf16, rng);
        }
        // 80 keys per tile (d 256's tile) over pages: boxes of 16 rows, runs that end inside a page.
        for (int page : {16, 64}) {
            Case paged{3, 4, 2, 150, 333, 256, true, Layout::bshd, {128, 80, 12, 2, "ws"}, {333, 97, 0}};
            paged.page_size = page, paged.share_pages = true;
            check_case(paged, DType::bf16, rng);
        }
        // Paged without the mask over many query tiles a head (33 at d 64, 49 at d 128; one block each), a ragged last
        // key tile whose V tail is NaN past the keys, pages of 48 rows.
        for (const auto& [d, tile] :
             {std::pair<int, TileConfig>{64, {192, 128, 16, 3, "ws"}}, {128, {128, 192, 12, 2, "ws"}}}) {
            INFO("paged, staggered, d " << d);
            Case paged{1, 2, 1, 6244, 1000, d, false, Layout::bshd, tile, {900}};
            paged.page_size = 48;
            check_case(paged, DType::bf16, rng);
        }
    });
}

// Past 8k keys under the causal mask the warp-specialized kernel takes one tile per block (it loops over pairs of
// tiles up to 8k: ws_layout::loops_over_causal_tiles), the chosen kernel of long causal rows. At d <= 96 the heads run
// in groups of 8 (tile/head_groups.cuh): heads that divide into groups of equal and unequal sizes, two sequences,
// softcap and ALiBi. GQA, Nq < Nk, ragged last tiles.
TEST_CASE("the warp-specialized kernel matches the reference past 8k keys under the causal mask (sm_90)",
          "[attention]") {
    if (!runs_ws_family()) return;
    with_kernels_precompiled([&] {
        std::mt19937 rng(8);
        const Mods softcap{-1, -1, 5.f, false, 1.f}, alibi{-1, -1, 0.f, true};
        const std::vector<Case> cases = {
            {1, 12, 4, 400, 8500, 64, true, Layout::bshd},  // two groups of 6
            {2, 21, 7, 300, 8300, 96, true, Layout::bhsd},  // three groups of 7, two sequences
            {1, 10, 10, 200, 8250, 64, true, Layout::padded, {}, {}, 0, false, softcap},  // groups of 5
            {1, 9, 3, 250, 8400, 96, true, Layout::bshd, {}, {}, 0, false, alibi},        // groups of 4 and 5
            {1, 4, 2, 300, 8450, 128, true, Layout::bshd},  // one head at a time from here on
            {1, 4, 1, 200, 8300, 192, true, Layout::bhsd},
            {1, 2, 2, 150, 8250, 256, true, Layout::padded},
        };
        for (const Case& c : cases)
            for (DType dtype : {DType::bf16, DType::f16}) check_case(c, dtype, rng);
    });
}

// The settled max (attention_f16_ws.cu, kSettledMax; ws_layout::settled_max says which kernels take it): each key step
// after the first 16 takes its exponentials against the row's max from before the tile and settles it afterwards.
// Logits far above a row's first maxima, past the first 16 key steps too: scale 2 moves maxima by tens in log2 units (P
// rescaled after P V), scale 40 by hundreds (P overflows fp32: the row again from global memory); rows with no key
// (more queries than keys, under the mask) and a ragged last tile. Chosen tiles and forced ones, both dtypes; every
// case launches a settled kernel.
TEST_CASE("the settled max matches the reference on logits far above each row's first maxima (sm_90)",
          "[attention][settled]") {
    if (!runs_ws_family()) return;
    const auto cases = [] {
        std::mt19937 rng(16);
        for (float scale : {2.f, 40.f}) {
            const Mods big{-1, -1, 0.f, false, scale};
            const std::vector<Case> cases = {
                {1, 2, 1, 300, 8400, 64, false, Layout::bshd, {}, {}, 0, false, big},
                {1, 2, 2, 400, 8300, 64, true, Layout::bhsd, {}, {}, 0, false, big},
                {1, 4, 2, 8400, 8300, 64, true, Layout::padded, {}, {}, 0, false, big},  // rows without keys
                {1, 3, 3, 300, 8500, 96, true, Layout::bshd, {}, {}, 0, false, big},
                {1, 2, 2, 200, 8300, 96, false, Layout::padded, {}, {}, 0, false, big},
                {1, 2, 1, 260, 8400, 128, false, Layout::bhsd, {}, {}, 0, false, big},
                {1, 2, 2, 200, 8300, 128, false, Layout::bshd, {192, 80, 16, 2, "ws"}, {}, 0, false, big},
                {1, 2, 2, 300, 8300, 64, false, Layout::bshd, {128, 128, 12, 3, "ws"}, {}, 0, false, big},
                {1, 2, 1, 200, 8300, 128, true, Layout::bshd, {}, {}, 0, false, big},
                {1, 2, 2, 200, 8400, 160, true, Layout::bhsd, {}, {}, 0, false, big},
                {1, 2, 2, 300, 3000, 96, false, Layout::bshd, {}, {}, 0, false, big},
                // ALiBi (without the mask the visits start at the diagonal's tile; more keys than queries moves it)
                // and windows whose rows see more than 4k keys: the exact row takes the bias and the window too.
                {1, 4, 2, 300, 8400, 64, false, Layout::bshd, {}, {}, 0, false, Mods{-1, -1, 0.f, true, scale}},
                {1, 2, 1, 1500, 8400, 128, false, Layout::bhsd, {}, {}, 0, false, Mods{-1, -1, 0.f, true, scale}},
                {1, 2, 1, 200, 8300, 128, false, Layout::padded, {}, {}, 0, false, Mods{2048, 2048, 0.f, false, scale}},
                {1, 2, 2, 300, 8400, 128, true, Layout::bshd, {}, {}, 0, false, Mods{5000, 0, 0.f, false, scale}},
                // Windows on 192 rows (each warpgroup to its own window): d 64, d 96, causal with ALiBi.
                {1, 2, 2, 400, 8300, 64, false, Layout::bshd, {}, {}, 0, false, Mods{3000, 1500, 0.f, false, scale}},
                {1, 2, 1, 300, 8400, 64, true, Layout::bhsd, {}, {}, 0, false, Mods{5000, 0, 0.f, true, scale}},
                {1, 2, 2, 250, 8300, 96, true, Layout::padded, {}, {}, 0, false, Mods{4500, 0, 0.f, false, scale}},
                {1, 4, 2, 300, 8400, 64, true, Layout::bshd, {}, {}, 0, false, Mods{-1, -1, 0.f, true, scale}},
                {1, 2, 1, 200, 8300, 128, true, Layout::bhsd, {}, {}, 0, false, Mods{-1, -1, 0.f, true, scale}},
            };
            for (const Case& c : cases)
                for (DType dtype : {DType::bf16, DType::f16}) {
                    INFO("scale " << scale);
                    check_case(c, dtype, rng);
                }
        }
    };
    for (const AttentionKernelSpec& spec : specs_launched_by(cases)) {
        INFO(spec.name_expression());
        CHECK(spec.settled_max);
    }
    with_kernels_precompiled(cases);
}

// Score modifiers in every prefill family (one tile each, forced) and on the chosen path: sliding windows crossing
// tile borders (both sides, left only with causal, right only, Nq != Nk with rows that see no key), softcap on large
// logits (scale 1), ALiBi with GQA, and all three with the causal mask. Softcap at kSoftcapNoMaxLimit on saturated
// logits (scale 8 at d 128, grown with sqrt(d)'s spread of q.k elsewhere: p up to 2^79 in the bf16 kernels that take
// no running max, and tanh.approx exact on the rows' largest scores) and just above it (the running max; default scale:
// tanh.approx's error times a cap of 60 on scale-1 logits exceeds the LSE tolerance in every family).
TEST_CASE("score modifiers match the reference in every prefill family", "[attention][mods]") {
    const int cc = current_device().cc();
    with_kernels_precompiled([&] {
        std::mt19937 rng(12);
        const Mods window{37, 21}, window_left{50, -1}, window_right{-1, 70}, softcap{-1, -1, 5.f, false, 1.f},
            alibi{-1, -1, 0.f, true}, all{40, 3, 8.f, true}, softcap_limit{-1, -1, kSoftcapNoMaxLimit, false, 8.f},
            softcap_above{-1, -1, kSoftcapNoMaxLimit + 5.f};
        const auto saturated = [](Mods m, int d) {
            if (m.scale) *m.scale *= static_cast<float>(std::sqrt(128.0 / d));
            return m;
        };
        const auto cases = [&](int d, const TileConfig& tile) {
            return std::vector<Case>{
                {2, 4, 2, 150, 300, d, false, Layout::bshd, tile, {}, 0, false, window},
                {1, 4, 1, 200, 130, d, true, Layout::padded, tile, {}, 0, false, window_left},  // rows without keys
                {1, 2, 2, 230, 90, d, false, Layout::bhsd, tile, {}, 0, false, window_right},   // right only, Nq > Nk
                {1, 2, 2, 190, 250, d, true, Layout::bhsd, tile, {}, 0, false, softcap},
                {2, 4, 2, 140, 333, d, false, Layout::bshd, tile, {}, 0, false, alibi},
                {1, 4, 2, 260, 200, d, true, Layout::bshd, tile, {}, 0, false, all},
                {2, 2, 1, 170, 270, d, false, Layout::bshd, tile, {}, 0, false, saturated(softcap_limit, d)},
                {1, 2, 2, 150, 150, d, true, Layout::bshd, tile, {}, 0, false, softcap_above},
            };
        };
        ProblemClass f16{DType::bf16, 128, true, 256, 256};
        f16.mods = ScoreMods{true, true, true};
        std::vector<TileConfig> tiles = tile_per_family(f16, cc);
        tiles.push_back({});  // the chooser's
        for (const TileConfig& tile : tiles)
            for (const Case& c : cases(128, tile)) {
                check_case(c, DType::bf16, rng);
                if (tile.empty()) check_case(c, DType::f16, rng);
            }
        for (const Case& c : cases(64, {})) check_case(c, DType::f32, rng);
        // d 64 on the chooser's tiles: on sm_90, softcap in bf16 takes a quarter of its exponentials on the FMA pipe.
        for (const Case& c : cases(64, {})) check_case(c, DType::bf16, rng);
        for (const Case& c : cases(96, {})) check_case(c, DType::bf16, rng);  // a padded head dim
        // Each warpgroup to its own window (kTrimWindow): 192- and 256-row tiles whose warpgroups' windows begin and
        // end in different key tiles, causal and not, Nq != Nk both ways.
        if (cc == 90)
            for (const TileConfig& tile : {TileConfig{192, 128, 16, 3, "ws"}, TileConfig{256, 64, 20, 3, "ws"}}) {
                check_case({1, 4, 2, 600, 700, 64, false, Layout::bshd, tile, {}, 0, false, Mods{150, 90}}, DType::bf16,
                           rng);
                check_case({1, 2, 1, 700, 500, 64, true, Layout::bhsd, tile, {}, 0, false, Mods{300, -1}}, DType::f16,
                           rng);
            }
    });
}

// ALiBi's column term on the tensor cores (f16-ws tiles with room for its operands: ws_layout::alibi_on_tensor_cores):
// key tiles below, above and across the diagonal (Nq != Nk both ways, causal and not), GQA, windows on 128 rows,
// blocks that loop over tiles of several heads (a slope per tile), rows of more than 16 key tiles, 128 and 192 rows,
// bf16 and fp16.
TEST_CASE("ALiBi on the tensor cores matches the reference", "[attention][mods]") {
    if (current_device().cc() != 90) return;  // f16-ws kernels: sm_90 only
    with_kernels_precompiled([&] {
        std::mt19937 rng(15);
        const Mods alibi{-1, -1, 0.f, true}, alibi_window{300, 90, 0.f, true};
        const TileConfig d128{128, 128, 12, 2, "ws"}, d128_wide{128, 176, 12, 2, "ws"}, d64{192, 128, 16, 2, "ws"};
        const std::vector<Case> cases = {
            {1, 4, 2, 500, 700, 128, false, Layout::bshd, d128, {}, 0, false, alibi},
            {1, 4, 2, 700, 500, 128, true, Layout::bhsd, d128, {}, 0, false, alibi},
            {1, 4, 1, 256, 2400, 64, false, Layout::bshd, d64, {}, 0, false, alibi},
            {2, 4, 4, 500, 800, 64, true, Layout::padded, d64, {}, 0, false, alibi},
            {1, 2, 2, 256, 3200, 128, true, Layout::bshd, d128_wide, {}, 0, false, alibi},
            {5, 32, 8, 64, 256, 64, false, Layout::bshd, d64, {}, 0, false, alibi},  // 160 tiles: blocks loop
            {1, 4, 2, 700, 600, 128, true, Layout::bshd, d128, {}, 0, false, alibi_window},
            {1, 4, 2, 600, 700, 128, false, Layout::bshd, d128, {}, 0, false, alibi_window},
        };
        for (std::size_t i = 0; i < cases.size(); ++i) {
            check_case(cases[i], DType::bf16, rng);
            if (i < 4) check_case(cases[i], DType::f16, rng);
        }
        Case packed{3, 4, 2, 300, 300, 128, true, Layout::bshd, d128, {}, 0, false, alibi};  // packed sequences
        packed.seqlens_q = {300, 17, 129}, packed.seqlens_k = {250, 170, 1};
        check_case(packed, DType::bf16, rng);
        Case paged{3, 4, 2, 200, 450, 128, true, Layout::bshd, d128, {450, 193, 0}, 0, false, alibi};  // pages
        paged.page_size = 64, paged.share_pages = true;
        check_case(paged, DType::bf16, rng);
    });
}

// Packed variable-length sequences in the prefill families (f16-ws and f16-wgmma on sm_90, f16-mma, fp32; one tile
// each, forced, and the chosen path): sequences of length 0 and 1, lengths straddling tile borders, more keys than
// queries and fewer, causal and not, GQA, BSHD and padded rows, with score modifiers; each sequence sees only its own
// keys.
TEST_CASE("packed variable-length sequences match the reference", "[attention][varlen]") {
    const int cc = current_device().cc();
    with_kernels_precompiled([&] {
        std::mt19937 rng(14);
        const std::vector<int> lens_q = {0, 1, 127, 128, 129, 300, 5}, lens_k = {7, 1, 127, 200, 129, 0, 64};
        ProblemClass varlen{DType::bf16, 128, true, 300, 300};
        varlen.varlen = true;
        std::vector<TileConfig> tiles = tile_per_family(varlen, cc);
        REQUIRE(!tiles.empty());
        tiles.push_back({});
        for (const TileConfig& tile : tiles)
            for (bool causal : {false, true}) {
                Case c{1, 4, 2, 300, 200, 128, causal, Layout::bshd, tile};
                c.seqlens_q = lens_q, c.seqlens_k = lens_k;
                check_case(c, DType::bf16, rng);
                Case padded{1, 2, 1, 512, 512, 64, causal, Layout::padded, tile};  // bounds above every length
                padded.seqlens_q = {260, 3, 64}, padded.seqlens_k = {90, 333, 64};
                check_case(padded, DType::f16, rng);
            }
        // Many causal packed sequences on the chosen tiles: 24 of 0 to 1000 rows (one at the bound, one with Nq !=
        // Nk) over 16 query heads in groups of 4, thousands of tiles, most sequences ending inside one.
        for (const auto& [d, dtype] : {std::pair{128, DType::bf16}, std::pair{64, DType::f16}}) {
            Case many{1, 16, 4, 1000, 1000, d, true, Layout::bshd};
            std::uniform_int_distribution<int> len(0, 1000);
            for (int b = 0; b < 24; ++b) many.seqlens_q.push_back(b == 5 ? 1000 : len(rng));
            many.seqlens_k = many.seqlens_q;
            many.seqlens_k[3] += many.seqlens_k[3] < 1000 ? 1 : -1;
            check_case(many, dtype, rng);
        }
        Case mods{1, 4, 2, 300, 300, 96, true, Layout::bshd, {}, {}, 0, false, Mods{40, 8, 6.f, true}};
        mods.seqlens_q = {300, 17, 129}, mods.seqlens_k = {250, 170, 1};
        check_case(mods, DType::bf16, rng);
        // sm_90: packed sequences on 192 x 112 at d 96 (the tile of long unpacked rows), both masks.
        if (cc == 90)
            for (bool causal : {false, true}) {
                Case keys112{1, 4, 2, 300, 200, 96, causal, Layout::bshd, {192, 112, 16, 3, "ws"}};
                keys112.seqlens_q = lens_q, keys112.seqlens_k = lens_k;
                check_case(keys112, DType::bf16, rng);
            }
        // fp32 (its own family), a head dim that is not a multiple of 8.
        Case fp32{1, 3, 1, 300, 200, 72, true, Layout::padded};
        fp32.seqlens_q = {0, 150, 1, 300}, fp32.seqlens_k = {4, 200, 33, 129};
        check_case(fp32, DType::f32, rng);
        fp32.causal = false, fp32.head_dim = 33;
        check_case(fp32, DType::f32, rng);
    });
}

namespace {

// Which rows of the packed tensors a malformed prefix sum leaves to well-formed sequences (+1: they attend as usual)
// and to malformed ones (-1: O = 0, LSE = -inf), clamped as the kernels clamp them (tile::seq_rows); 0: no sequence,
// or both kinds (two sequences write the row: either result may land).
std::vector<int> row_kinds(const std::vector<int>& cu, int total, int bound) {
    std::vector<int> good(total), bad(total);
    for (std::size_t b = 0; b + 1 < cu.size(); ++b) {
        const int s = cu[b], e = cu[b + 1];
        const bool ok = 0 <= s && s <= e && e <= total && e - s <= bound;
        const int start = std::min(std::max(s, 0), total), end = std::min(std::max(e, start), total);
        for (int r = start; r < start + std::min(end - start, bound); ++r) ++(ok ? good : bad)[r];
    }
    std::vector<int> kind(total);
    for (int r = 0; r < total; ++r) kind[r] = good[r] && !bad[r] ? 1 : bad[r] && !good[r] ? -1 : 0;
    return kind;
}

}  // namespace

// Malformed prefix sums (decreasing, negative, past the end, a step above the bound): the kernels clamp them, so a
// call reads and writes inside the tensors (compute-sanitizer's memcheck runs this case: [sanitize]), and a sequence
// whose own entries are malformed attends to nothing (O = 0, LSE = -inf) while the others come out right; with
// FA_JIT_CHECK=1 the first bad entry is an InvalidArgument instead.
TEST_CASE("malformed cu_seqlens stay inside the tensors, and FA_JIT_CHECK=1 names them",
          "[attention][varlen][sanitize]") {
    const int cc = current_device().cc();
    const int heads = 2, d = 64, total = 200, batch = 3;
    AttentionArgs a;
    a.dtype = DType::bf16, a.batch = batch, a.heads_q = a.heads_kv = heads, a.head_dim = d, a.causal = true;
    a.seqlen_q = a.seqlen_k = 128, a.total_q = a.total_k = total;
    a.q_strides = a.k_strides = a.v_strides = a.o_strides = {0, d, heads * d};
    DeviceBuffer q(total * heads * d * 2), k(total * heads * d * 2), v(total * heads * d * 2), o(total * heads * d * 2),
        lse(heads * total * 4), cu(4 * (batch + 1));
    // Scores all 0, every V element 0x3F3F (bf16 0.746): a row that attends to its keys comes out 0.746 everywhere,
    // LSE log(visible keys).
    q.fill_bytes(0), k.fill_bytes(0), v.fill_bytes(0x3F);
    const float v_value = tools::decode(std::string(2, '\x3F'), DType::bf16)[0];
    a.q = q.get(), a.k = k.get(), a.v = v.get(), a.o = o.get(), a.lse = static_cast<float*>(lse.get());
    a.cu_seqlens_q = a.cu_seqlens_k = static_cast<const int*>(cu.get());
    const std::vector<std::pair<std::vector<int>, std::string>> malformed = {
        {{0, 90, 40, 200}, "'cu_seqlens_q[2]'"},    // decreasing
        {{-5, 10, 20, 30}, "'cu_seqlens_q[0]'"},    // negative
        {{0, 100, 150, 900}, "'cu_seqlens_q[3]'"},  // past total
        {{0, 10, 180, 200}, "'cu_seqlens_q[2]'"}};  // a sequence of 170 rows, above seqlen_q = 128
    ProblemClass p{DType::bf16, d, true, 128, 128};
    p.varlen = true;
    std::vector<TileConfig> tiles = tile_per_family(p, cc);
    tiles.push_back({});
    for (const TileConfig& tile : tiles)
        for (const auto& [entries, name] : malformed) {
            INFO(tile.to_string() << " " << name);
            cu.upload(entries.data(), entries.size() * 4);
            o.fill_bytes(0xFF), lse.fill_bytes(0xFF);  // NaN
            CHECK_NOTHROW(attention(a, nullptr, tile));
            synchronize();
            std::string o_bytes(o.size(), '\0');
            o.download(o_bytes.data(), o_bytes.size());
            const std::vector<float> out = tools::decode(o_bytes, DType::bf16);
            std::vector<float> lse_out(heads * total);
            lse.download(lse_out.data(), lse_out.size() * 4);
            const std::vector<int> kind = row_kinds(entries, total, 128);
            int zero_rows = 0, attended_rows = 0, wrong = 0;
            for (int r = 0; r < total; ++r) {
                if (kind[r] == 0) continue;
                (kind[r] < 0 ? zero_rows : attended_rows) += 1;
                for (int h = 0; h < heads; ++h) {
                    const float l = lse_out[h * total + r];
                    bool ok = kind[r] < 0 ? std::isinf(l) && l < 0 : std::isfinite(l);
                    for (int c = 0; c < d; ++c) {
                        const float x = out[(static_cast<std::size_t>(r) * heads + h) * d + c];
                        ok = ok && (kind[r] < 0 ? x == 0.f : std::abs(x - v_value) < 1e-2f);
                    }
                    if (!ok && wrong++ < 3)
                        UNSCOPED_INFO("row " << r << " head " << h << (kind[r] < 0 ? " (malformed)" : " (well-formed)")
                                             << ": LSE " << l << ", O[0] " << out[(r * heads + h) * d]);
                }
            }
            CHECK(wrong == 0);
            CHECK(zero_rows > 0);      // every case has a malformed sequence with rows inside the tensor
            CHECK(attended_rows > 0);  // and a well-formed one
        }
    set_metadata_checks(true);
    for (const auto& [entries, name] : malformed) {
        cu.upload(entries.data(), entries.size() * 4);
        CHECK_THROWS_WITH(attention(a, nullptr), Catch::Contains(name) && Catch::Contains("total_q = 200"));
    }
    const std::vector<int> good = {0, 0, 128, 200};
    cu.upload(good.data(), good.size() * 4);
    CHECK_NOTHROW(attention(a, nullptr));
    set_metadata_checks(false);
    synchronize();
}

// A paged KV cache in every prefill family (one forced tile each, and the chooser): pages in random order, sizes 16
// to 256 (48: not a power of two), shared between sequences, ragged seqused_k with garbage in the table entries past
// the used keys and NaN in every row no sequence uses, page layouts BSHD, BHSD and padded, packed queries over pages
// (chunked prefill), modifiers.
TEST_CASE("a paged KV cache matches the reference in every prefill family", "[attention][paged]") {
    const int cc = current_device().cc();
    with_kernels_precompiled([&] {
        std::mt19937 rng(16);
        for (DType dtype : {DType::bf16, DType::f32}) {
            ProblemClass p{dtype, 128, true, 300, 300};
            p.paged = true;
            std::vector<TileConfig> tiles = tile_per_family(p, cc);
            REQUIRE(!tiles.empty());
            tiles.push_back({});
            for (const TileConfig& tile : tiles) {
                for (int page : {16, 48, 64, 256}) {
                    Case c{3, 4, 2, 200, 300, 128, page != 48, Layout::bshd, tile, {300, 129, 0}};
                    c.page_size = page, c.share_pages = true;
                    check_case(c, dtype, rng);
                }
                // Pages a whole number of 8-row groups apart ([pages][heads][page rows][d]) and not (padded rows: 19
                // rows from one page to the next), the two forms of f16-ws's row-grouped maps.
                Case heads_major{2, 4, 2, 130, 300, 128, true, Layout::bhsd, tile, {300, 77}};
                heads_major.page_size = 32;
                check_case(heads_major, dtype, rng);
                Case wide{2,   8, 1, 130, 70, 128, false, Layout::padded,
                          tile};  // more queries than keys, MQA, no lengths
                wide.page_size = 16;
                check_case(wide, dtype, rng);
                // Chunked prefill: each sequence's new queries (packed) against its cache, bottom-right causal.
                Case chunk{1, 4, 2, 300, 600, 128, true, Layout::bshd, tile, {600, 310, 45, 7}};
                chunk.seqlens_q = {200, 300, 45, 0}, chunk.page_size = 64, chunk.share_pages = true;
                check_case(chunk, dtype, rng);
                if (dtype == DType::bf16 && tile.empty() && cc == 90) {  // and on 192 keys, paged d 128's long tile
                    chunk.tile = {128, 192, 12, 2, "ws"}, chunk.page_size = 48;
                    check_case(chunk, dtype, rng);
                }
                Case mods{
                    2, 4, 2, 150, 400, 128, true, Layout::bshd, tile, {400, 222}, 0, false, Mods{40, 8, 6.f, true}};
                mods.page_size = 16;
                check_case(mods, dtype, rng);
            }
        }
        // d 64, one column block: f16-ws loads it through (d, page rows, heads, pages) maps, not the row-grouped
        // ones of d 128 (ws_layout::kv_row_groups).
        ProblemClass p64{DType::bf16, 64, true, 300, 300};
        p64.paged = true;
        for (const TileConfig& tile : tile_per_family(p64, cc))
            for (Layout layout : {Layout::bshd, Layout::bhsd, Layout::padded})
                for (int page : {16, 48, 256}) {
                    Case c{3, 4, 2, 200, 300, 64, page != 48, layout, tile, {300, 129, 0}};
                    c.page_size = page, c.share_pages = layout == Layout::bshd;
                    check_case(c, DType::bf16, rng);
                }
        // d <= 64 without the mask past 4k keys on pages of whole half key tiles: f16-ws reads the block table by TMA
        // (AttentionKernelSpec::table_map), from a 16-byte boundary at or before the table (table_offset: 1-3 ints
        // past one), a window of 64 entries fetched again where a tile leaves it (79 pages of 64 hold 5000 keys),
        // the V rows of a ragged last tile past the keys (NaN here) zeroed by the producer.
        ProblemClass full64{DType::bf16, 64, false, 64, 4500};
        full64.paged = true;
        std::vector<TileConfig> full_tiles = tile_per_family(full64, cc);
        full_tiles.push_back({});
        if (cc == 90) full_tiles.push_back({128, 64, 12, 3, "ws"});  // pages of 32 are half its key tile
        for (const TileConfig& tile : full_tiles) {
            for (int page : {32, 64, 128, 256}) {
                Case c{3, 4, 2, 64, 4500, 64, false, Layout::bshd, tile, {4500, 4229, 0}};
                c.page_size = page, c.share_pages = true, c.table_offset = page / 32 % 4;
                check_case(c, DType::bf16, rng);
            }
            if (tile.empty() || tile.variant == "ws") {  // the other families' d 64 tiles need not fit d 40
                Case d40{2, 4, 1, 130, 4200, 40, false, Layout::padded, tile, {4200, 4111}};
                d40.page_size = 64, d40.table_offset = 3;
                check_case(d40, DType::f16, rng);
            }
            Case long_rows{1, 2, 2, 256, 5000, 64, false, Layout::bhsd, tile, {4999}};
            long_rows.page_size = 64, long_rows.table_offset = 1;
            check_case(long_rows, DType::bf16, rng);
        }
        // f16-mma at a head dim without a wgmma kernel, fp32 at one that is not a multiple of 8 (4-byte copies).
        Case d96{2, 4, 4, 100, 333, 96, true, Layout::padded, {}, {333, 200}};
        d96.page_size = 32;
        check_case(d96, DType::f16, rng);
        Case d33{2, 3, 1, 100, 150, 33, true, Layout::padded, {}, {150, 16}};
        d33.page_size = 16;
        check_case(d33, DType::f32, rng);
    });
}

// Block-table entries outside [0, num_pages) among the pages a sequence uses: that sequence's rows come out O = 0,
// LSE = -inf, the others are unaffected, nothing is read outside the pages (memcheck runs this: [sanitize]); with
// FA_JIT_CHECK=1 the first bad entry is an InvalidArgument instead. Entries past the used keys may hold anything.
TEST_CASE("a malformed block table empties its sequences, and FA_JIT_CHECK=1 names the entry",
          "[attention][paged][sanitize]") {
    const int cc = current_device().cc();
    std::mt19937 rng(17);
    // Prefill, decode, and prefill past 4k keys on pages of 64 without the mask (f16-ws reads the table by TMA).
    for (const auto& [seqlen_q, causal, page, keys] :
         {std::tuple{200, true, 16, 300}, std::tuple{1, false, 16, 300}, std::tuple{64, false, 64, 4500}}) {
        ProblemClass p{DType::bf16, 64, causal, seqlen_q, keys};
        p.paged = true, p.seqused_k = true;
        std::vector<TileConfig> tiles = tile_per_family(p, cc);
        tiles.push_back({});
        for (const TileConfig& tile : tiles) {
            Case c{3, 4, 2, seqlen_q, keys, 64, causal, Layout::bshd, tile, {keys, 100, keys - 50}};
            c.page_size = page, c.corrupt = {1};
            check_case(c, DType::bf16, rng);
            c.corrupt = {0, 2};
            if (tile.empty()) check_case(c, DType::f32, rng);
        }
    }

    const int batch = 3, heads = 2, d = 64, page = 16, pages = 30, per_seq = 8;
    AttentionArgs a;
    a.dtype = DType::bf16, a.batch = batch, a.heads_q = a.heads_kv = heads, a.head_dim = d;
    a.seqlen_k = 100;
    DeviceBuffer q(batch * 64 * heads * d * 2), kv(pages * page * heads * d * 2), o(batch * 64 * heads * d * 2),
        used(batch * 4), table(batch * per_seq * 4);
    q.fill_bytes(0), kv.fill_bytes(0);
    const std::vector<int> lengths = {100, 40, 0};
    used.upload(lengths.data(), lengths.size() * 4);
    a.q = q.get(), a.k = a.v = kv.get(), a.o = o.get(), a.seqused_k = static_cast<const int*>(used.get());
    a.block_table = static_cast<const int*>(table.get());
    a.page_size = page, a.num_pages = pages, a.pages_per_seq = per_seq;
    std::vector<int> entries = {0,  1,  2,  3,  4,  5,  6,  -1,   // 7 pages used, the last entry unused
                                7,  8,  30, 99, -3, -3, -3, -3,   // 3 pages used: [1][2] is past the end
                                -5, -5, -5, -5, -5, -5, -5, -5};  // no key
    set_metadata_checks(true);
    for (int seqlen_q : {64, 1}) {  // a prefill family, a decode family
        a.seqlen_q = seqlen_q;
        a.q_strides = a.o_strides = Strides::bshd(seqlen_q, heads, d);
        a.k_strides = a.v_strides = Strides::bshd(page, heads, d);
        table.upload(entries.data(), entries.size() * 4);
        CHECK_THROWS_WITH(attention(a, nullptr), Catch::Contains("'block_table[1][2]'") &&
                                                     Catch::Contains("num_pages = 30") && Catch::Contains("got 30"));
        std::vector<int> good = entries;
        good[10] = 29;
        table.upload(good.data(), good.size() * 4);
        CHECK_NOTHROW(attention(a, nullptr));
        synchronize();
    }
    set_metadata_checks(false);
}

TEST_CASE("the C ABI runs attention and reports bad arguments", "[attention]") {
    current_device();
    const int n = 64, d = 32;
    DeviceBuffer q(n * d * 4), o(n * d * 4);
    std::vector<float> host(n * d, 0.25f);
    q.upload(host.data(), host.size() * 4);
    o.fill_bytes(0xFF);
    fa_jit_attention_args args;
    fa_jit_attention_args_init(&args);
    args.q = args.k = args.v = q.get();
    args.o = o.get();
    args.dtype = FA_JIT_F32;
    args.batch = args.heads_q = args.heads_kv = 1;
    args.seqlen_q = args.seqlen_k = n;
    args.head_dim = d;
    fa_jit_layout_bshd(&args);
    REQUIRE(fa_jit_attention(&args, nullptr) == FA_JIT_SUCCESS);
    synchronize();
    o.download(host.data(), host.size() * 4);
    // All values equal: attention returns v's rows averaged, i.e. 0.25 everywhere.
    CHECK(std::all_of(host.begin(), host.end(), [](float x) { return std::abs(x - 0.25f) < 1e-6f; }));

    args.heads_kv = 3;  // does not divide heads_q
    CHECK(fa_jit_attention(&args, nullptr) == FA_JIT_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(fa_jit_last_error(), Catch::Contains("heads_kv"));
}
