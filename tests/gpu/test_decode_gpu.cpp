// Decode on a GPU against the float64 reference (the decode family for fp16/bf16, fp32's own family): few query rows,
// GQA groups packed into a tile, split-KV with forced and chosen split counts, per-sequence KV lengths (ragged, 0,
// full, malformed and clamped), a caller's workspace, CUDA-graph replay after the device data changes, and
// FA_JIT_CHECK=1.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <random>

#include "attention/metadata_check.hpp"
#include "driver/driver_api.hpp"
#include "fa_jit/fa_jit.h"
#include "support/gpu_cases.hpp"

using namespace fa_jit;
using namespace fa_jit::testing;

namespace {

std::vector<int> random_lengths(int batch, int seqlen_k, std::mt19937& rng) {
    std::uniform_int_distribution<int> length(0, seqlen_k);
    std::vector<int> out(batch);
    for (int& n : out) n = length(rng);
    if (batch >= 2) out[0] = 0, out[1] = seqlen_k;  // an empty sequence and a full one
    return out;
}

// One tile of each decode family that serves decode of 1 token x groups of 4 and 4 tokens x groups of 8 (with
// `wide`, also 4 tokens of MQA: 128 packed rows, all that decode-ws and decode-wgmma serve) with `feature` (packed
// sequences, pages) on this GPU, then the chooser's (an empty tile).
std::vector<TileConfig> decode_tiles(void (*feature)(ProblemClass&), bool wide = false) {
    const int cc = current_device().cc();
    std::vector<TileConfig> tiles;
    std::vector<std::pair<int, int>> shapes{{1, 4}, {4, 8}};
    if (wide) shapes.emplace_back(4, 32);
    for (const auto& [seqlen_q, group] : shapes) {
        ProblemClass p{DType::bf16, 128, true, seqlen_q, 3000, group};
        feature(p);
        for (const TileConfig& tile : tile_per_family(p, cc))
            if (AttentionKernelSpec{DType::bf16, 128, true, tile}.family().rfind("decode", 0) == 0 &&
                std::find(tiles.begin(), tiles.end(), tile) == tiles.end())
                tiles.push_back(tile);
    }
    REQUIRE(tiles.size() >= 1);
    tiles.push_back({});
    return tiles;
}

// fp16 and bf16 run the decode family; fp32 (no split-KV family) the fp32 family, per-sequence lengths included.
void check_decode(const Case& c, std::mt19937& rng) {
    for (DType dtype : {DType::bf16, DType::f16, DType::f32}) check_case(c, dtype, rng);
}

}  // namespace

TEST_CASE("decode: query lengths 1..16, every group size, causal or not", "[decode]") {
    current_device();
    with_kernels_precompiled([&] {
        std::mt19937 rng(1);
        for (int seqlen_q : {1, 2, 4, 16})
            for (bool causal : {false, true})
                for (const auto& [heads_q, heads_kv] :
                     std::vector<std::pair<int, int>>{{4, 4}, {4, 2}, {8, 2}, {16, 2}, {32, 2}, {16, 1}})
                    check_decode({2, heads_q, heads_kv, seqlen_q, 777, 128, causal, Layout::bshd}, rng);
    });
}

// Score modifiers in every decode family (one tile each, forced, and the chosen path): packed GQA rows of different
// heads (ALiBi slopes per row), windows narrowing the split runs (left only, both sides with causal, right only),
// softcap, per-sequence lengths with a window, forced and chosen splits.
TEST_CASE("decode: score modifiers in every decode family", "[decode][mods]") {
    const int cc = current_device().cc();
    with_kernels_precompiled([&] {
        std::mt19937 rng(13);
        ProblemClass problem{DType::bf16, 128, true, 4, 3000, 8};
        problem.mods = ScoreMods{true, true, true};
        std::vector<TileConfig> tiles = tile_per_family(problem, cc);
        problem.seqlen_q = 1, problem.group_size = 32;  // 32 packed rows
        for (const TileConfig& tile : tile_per_family(problem, cc))
            if (std::find(tiles.begin(), tiles.end(), tile) == tiles.end()) tiles.push_back(tile);
        problem.seqlen_q = 4;  // 128 packed rows: decode-ws and decode-wgmma on Hopper
        for (const TileConfig& tile : tile_per_family(problem, cc))
            if (std::find(tiles.begin(), tiles.end(), tile) == tiles.end()) tiles.push_back(tile);
        tiles.push_back({});
        for (const TileConfig& tile : tiles)
            for (int splits : {0, 3}) {
                // 128 packed rows: a causal window with ALiBi; softcap without a running max over a NaN cache tail;
                // both sides of a window with softcap and ALiBi in fp16.
                check_case(
                    {2, 32, 1, 4, 3000, 128, true, Layout::bshd, tile, {}, splits, false, Mods{700, 0, 0.f, true}},
                    DType::bf16, rng);
                const bool reads_seqused_k =
                    tile.empty() || AttentionKernelSpec{DType::bf16, 128, true, tile}.family().rfind("decode", 0) == 0;
                if (reads_seqused_k)
                    check_case({2,
                                32,
                                1,
                                4,
                                2000,
                                128,
                                false,
                                Layout::bhsd,
                                tile,
                                {1999, 3},
                                splits,
                                false,
                                Mods{-1, -1, 30.f}},
                               DType::bf16, rng);
                check_case(
                    {2, 64, 2, 4, 1500, 128, true, Layout::padded, tile, {}, splits, false, Mods{300, 40, 10.f, true}},
                    DType::f16, rng);
                // The cases below have at most 32 packed rows: decode-wgmma serves from 33, decode-ws from 97.
                if (tile.variant == "ws-split" || tile.variant == "wgmma-split") continue;
                check_case(
                    {2, 32, 4, 4, 3000, 128, true, Layout::bshd, tile, {}, splits, false, Mods{700, 0, 0.f, true}},
                    DType::bf16, rng);
                check_case({3, 8, 1, 1, 2000, 128, false, Layout::bhsd, tile, {}, splits, false, Mods{300, -1, 10.f}},
                           DType::f16, rng);
                check_case(
                    {2, 32, 1, 1, 1500, 128, false, Layout::bshd, tile, {}, splits, false, Mods{-1, -1, 0.f, true}},
                    DType::bf16, rng);
                if (reads_seqused_k)
                    check_case({2,
                                16,
                                2,
                                2,
                                900,
                                128,
                                true,
                                Layout::padded,
                                tile,
                                {500, 17},
                                splits,
                                false,
                                Mods{100, 40, 4.f, true, 1.f}},
                               DType::bf16, rng);
            }
        check_case({2, 4, 1, 3, 800, 64, false, Layout::bshd, {}, {}, 0, false, Mods{-1, 10}}, DType::bf16, rng);
        check_case({2, 4, 1, 3, 800, 64, false, Layout::bshd, {}, {}, 0, false, Mods{-1, 10}}, DType::f32, rng);
    });
}

// Packed sequences in every decode family (one tile each, forced, and the chosen path): 1 and 4 query tokens per
// sequence, empty sequences, GQA groups packed into rows, forced and chosen splits (the combine writes each
// sequence's rows), seqused_k cutting a packed sequence's keys, score modifiers; 128 packed rows per sequence (4 tokens
// of MQA: decode-ws and decode-wgmma on Hopper, which serve only that many), over pages as well.
TEST_CASE("decode: packed sequences in every decode family", "[decode][varlen]") {
    with_kernels_precompiled([&] {
        std::mt19937 rng(15);
        const auto packed = [](ProblemClass& p) { p.varlen = true; };
        const std::vector<TileConfig> tiles = decode_tiles(packed, /*wide=*/true);
        for (const TileConfig& tile : tiles)
            for (int splits : {0, 1, 3}) {
                Case mqa{1, 32, 1, 4, 2500, 128, true, Layout::bshd, tile, {}, splits};  // 128 packed rows per sequence
                mqa.seqlens_q = {4, 3, 0, 4}, mqa.seqlens_k = {2500, 40, 7, 1000};
                check_case(mqa, DType::bf16, rng);
                Case mqa_used{1, 32, 1, 4, 2000, 128, false, Layout::padded, tile, {1999, 0, 600}, splits};
                mqa_used.mods = Mods{700, -1, 20.f, true};
                mqa_used.seqlens_q = {4, 4, 2}, mqa_used.seqlens_k = {2000, 300, 1500};
                check_case(mqa_used, DType::f16, rng);
                Case mqa_pages{1, 32, 1, 4, 1500, 128, true, Layout::bshd, tile, {1500, 300, 0}, splits};
                mqa_pages.seqlens_q = {4, 1, 4}, mqa_pages.page_size = 64;
                check_case(mqa_pages, DType::bf16, rng);
                if (tile.variant == "ws-split" || tile.variant == "wgmma-split") continue;  // at most 32 rows below
                Case one{1, 32, 8, 1, 3000, 128, false, Layout::bshd, tile, {}, splits};
                one.seqlens_q = {1, 1, 0, 1}, one.seqlens_k = {1000, 0, 37, 3000};
                check_case(one, DType::bf16, rng);
                Case spec{1, 64, 8, 4, 2500, 128, true, Layout::padded, tile, {}, splits};  // 32 packed rows
                spec.seqlens_q = {4, 2, 4}, spec.seqlens_k = {900, 50, 2500};
                check_case(spec, DType::f16, rng);
                Case used{1, 16, 4, 4, 2000, 128, true, Layout::bshd, tile, {500, 17, 0}, splits};
                used.mods = Mods{300, -1, 0.f, true};
                used.seqlens_q = {3, 4, 1}, used.seqlens_k = {1000, 20, 10};
                check_case(used, DType::bf16, rng);
            }
    });
}

// A paged KV cache in both decode families: page sizes 16, 64, 256, pages shared and in random order, ragged seqused_k
// (0 and full included), split counts 1, 3 and chosen, packed queries over pages, modifiers; 128 packed rows (4 tokens
// of MQA: decode-ws and decode-wgmma on Hopper, which serve only that many); fp32 in its family.
TEST_CASE("decode: a paged KV cache in every decode family", "[decode][paged]") {
    with_kernels_precompiled([&] {
        std::mt19937 rng(18);
        const auto paged = [](ProblemClass& p) { p.paged = p.seqused_k = true; };
        const std::vector<TileConfig> tiles = decode_tiles(paged, /*wide=*/true);
        for (const TileConfig& tile : tiles) {
            const bool wide_only = tile.variant == "ws-split" || tile.variant == "wgmma-split";
            for (int splits : {0, 1, 3})
                for (int page : {16, 64, 256}) {
                    Case mqa{2,    32,           1,     4, 2500, 128, true, Layout::bshd,
                             tile, {2500, 1111}, splits};  // 128 packed rows
                    mqa.page_size = page, mqa.share_pages = true;
                    check_case(mqa, DType::bf16, rng);
                    if (wide_only) continue;
                    Case one{4, 32, 8, 1, 3000, 128, false, Layout::bshd, tile, random_lengths(4, 3000, rng), splits};
                    one.page_size = page, one.share_pages = true;
                    check_case(one, DType::bf16, rng);
                    Case spec{2,    64,           8,     4, 2500, 128, true, Layout::padded,
                              tile, {2500, 1111}, splits};  // 32 packed rows
                    spec.page_size = page;
                    check_case(spec, DType::f16, rng);
                }
            // 128 packed rows with modifiers over pages, a malformed block table (O = 0, LSE = -inf), d 64 and 256.
            Case mods{3,
                      32,
                      1,
                      4,
                      1500,
                      128,
                      false,
                      Layout::padded,
                      tile,
                      {1500, 700, 0},
                      0,
                      false,
                      Mods{500, 0, 20.f, true}};
            mods.page_size = 64;
            check_case(mods, DType::f16, rng);
            Case corrupt{3, 32, 1, 4, 900, 128, true, Layout::bshd, tile, {900, 450, 17}};
            corrupt.page_size = 16, corrupt.corrupt = {1};
            check_case(corrupt, DType::bf16, rng);
            for (int d : {64, 256}) {
                if (!tile.empty()) continue;  // forced tiles are for d 128
                Case dims{2, 32, 1, 4, 2000, d, true, Layout::bshd, tile, {2000, 999}};
                dims.page_size = 256;
                check_case(dims, DType::bf16, rng);
            }
            if (wide_only) continue;
            Case packed{
                1, 16, 4, 4, 2000, 128, true, Layout::bshd, tile, {500, 17, 0}, 3, false, Mods{300, -1, 0.f, true}};
            packed.seqlens_q = {3, 4, 1}, packed.page_size = 64;
            check_case(packed, DType::bf16, rng);
        }
        Case fp32{3, 8, 2, 2, 700, 64, true, Layout::bshd, {}, {700, 0, 333}};
        fp32.page_size = 16, fp32.share_pages = true;
        check_case(fp32, DType::f32, rng);
    });
}

TEST_CASE("decode: forced split counts compute the same function", "[decode]") {
    current_device();
    with_kernels_precompiled([&] {
        std::mt19937 rng(2);
        for (int splits : {1, 2, 7, 64, 0})
            for (bool causal : {false, true}) {
                check_decode({3, 8, 2, 1, 1500, 128, causal, Layout::bhsd, {}, {}, splits}, rng);
                check_decode({1, 4, 1, 4, 300, 64, causal, Layout::padded, {}, {}, splits},
                             rng);  // more splits than keys
            }
        // The combine merges a warp's splits 32 at a time with a running max: more than 8 x 32 splits per row takes
        // several chunks per warp, and with more splits than key tiles whole chunks saw no key.
        for (int splits : {300, 1024}) {
            check_case({1, 8, 1, 1, 40000, 128, false, Layout::bshd, {}, {}, splits}, DType::bf16, rng);
            check_case({2, 32, 1, 4, 3000, 128, true, Layout::bhsd, {}, {}, splits}, DType::f16, rng);  // 128 rows
            check_case({1, 4, 1, 2, 500, 256, true, Layout::padded, {}, {}, splits}, DType::bf16, rng);
        }
    });
}

TEST_CASE("decode: head dims, tiles and key lengths", "[decode]") {
    current_device();
    with_kernels_precompiled([&] {
        std::mt19937 rng(3);
        for (int d : {8, 40, 64, 96, 128, 160, 192, 256}) {
            check_decode({2, 8, 2, 1, 513, d, false, Layout::bshd}, rng);
            check_decode({1, 8, 1, 3, 100, d, true, Layout::padded}, rng);
        }
        for (int seqlen_k : {1, 15, 16, 17, 64, 4096 + 13})
            check_decode({2, 4, 1, 2, seqlen_k, 128, true, Layout::bshd}, rng);
        // Every sweep tile (each warp's ring depth, 16 or 32 keys per warp, 4 or 8 warps, 16..64 rows).
        for (const TileConfig& tile : tile_configs(DType::bf16, 64))
            if (tile.variant == "split") check_case({2, 16, 2, 4, 700, 64, true, Layout::bshd, tile}, DType::bf16, rng);
        // Large batch, few keys; one sequence with many keys (accumulation across 64+ splits).
        check_case({256, 4, 1, 1, 40, 64, false, Layout::bshd}, DType::bf16, rng);
        check_case({1, 8, 1, 1, 131072, 128, false, Layout::bshd}, DType::bf16, rng);
        check_case({1, 8, 1, 4, 131072, 128, true, Layout::bshd}, DType::f16, rng);
        // One token of MQA past 8k keys (on sm_90 two key warps of 32 keys: 32x64w4s4), chosen and forced, ragged.
        for (const TileConfig& tile : {TileConfig{}, TileConfig{32, 64, 4, 4, "split"}}) {
            check_case({3, 32, 1, 1, 20000, 128, false, Layout::bshd, tile, random_lengths(3, 20000, rng)}, DType::bf16,
                       rng);
            check_case({2, 32, 1, 1, 9000, 120, false, Layout::padded, tile}, DType::f16, rng);
        }
        // One row warp past 8k keys (on sm_90 32 keys per key warp at d 113-128: 16x128w4s2; 2 stages at d 256).
        for (const TileConfig& tile : {TileConfig{}, TileConfig{16, 128, 4, 2, "split"}}) {
            check_case({3, 32, 8, 1, 20000, 128, false, Layout::bshd, tile, random_lengths(3, 20000, rng)}, DType::bf16,
                       rng);
            check_case({2, 16, 4, 4, 9000, 120, true, Layout::padded, tile}, DType::f16, rng);
        }
        for (const TileConfig& tile : {TileConfig{}, TileConfig{16, 64, 4, 2, "split"}})
            check_case({2, 8, 2, 1, 12000, 256, false, Layout::bhsd, tile, {12000, 9001}}, DType::bf16, rng);
        // d 193-256 with one row warp take 2 stages at any length (16x64w4s2): 4 causal tokens of groups of 4, ragged.
        check_case({3, 8, 2, 4, 4000, 200, true, Layout::padded, {}, random_lengths(3, 4000, rng)}, DType::bf16, rng);
        check_case({2, 8, 2, 1, 3000, 256, false, Layout::bshd, {}, {3000, 1}}, DType::f16, rng);
        // d 64 there (16x256w8s2) and one token of MQA at d 256 (32x32w4s4), chosen and forced.
        for (const TileConfig& tile : {TileConfig{}, TileConfig{16, 256, 8, 2, "split"}})
            check_case({3, 8, 8, 1, 11000, 64, false, Layout::bshd, tile, random_lengths(3, 11000, rng)}, DType::f16,
                       rng);
        for (const TileConfig& tile : {TileConfig{}, TileConfig{32, 32, 4, 4, "split"}})
            check_case({2, 32, 1, 1, 10000, 256, false, Layout::bshd, tile, {10000, 7001}}, DType::bf16, rng);
    });
}

// On sm_90 the tiles of more than 32 packed rows run on decode-wgmma: every one of its sweep tiles, split counts,
// ragged lengths and row tiles that straddle tokens; and the mma.sync decode tiles on the same rows.
TEST_CASE("decode: the wgmma tiles and the mma.sync tiles on many packed rows", "[decode]") {
    const int cc = current_device().cc();
    with_kernels_precompiled([&] {
        std::mt19937 rng(6);
        for (int d : {64, 128, 192, 256}) {
            std::vector<TileConfig> tiles = {default_tile_config(80, {DType::bf16, d, true, 4, 4096, 16})};  // mma.sync
            for (const TileConfig& tile : tile_configs(DType::bf16, d))
                if (tile.variant == "wgmma-split" && tile_runs_on(tile, cc)) tiles.push_back(tile);
            for (const TileConfig& tile : tiles) {
                INFO(tile.to_string());
                check_case({2, 32, 1, 4, 1000, d, true, Layout::bshd, tile}, DType::bf16, rng);        // 128 rows
                check_case({3, 16, 2, 5, 300, d, false, Layout::bhsd, tile, {}, 3}, DType::f16, rng);  // 40 rows
                check_case({3, 24, 1, 3, 517, d, true, Layout::padded, tile, {0, 517, 90}, 0}, DType::bf16, rng);
            }
        }
        // The chooser: 4 tokens of MQA at long keys (splits), and a prefill with per-sequence lengths.
        check_case({1, 32, 1, 4, 65536 + 77, 128, true, Layout::bshd}, DType::bf16, rng);
        check_case({2, 8, 2, 200, 700, 128, true, Layout::bshd, {}, {650, 33}}, DType::f16, rng);
    });
}

// On sm_90 full 128-row tiles of packed rows run on decode-ws (the warp-specialized kernel): every sweep tile at each
// head dim, forced and chosen splits, ragged and malformed lengths over a NaN tail, row tiles that straddle tokens
// (5 tokens x 32 heads: a second, partial tile), GQA groups of 8 with 16 tokens.
TEST_CASE("decode: the warp-specialized split tiles", "[decode]") {
    const int cc = current_device().cc();
    if (cc != 90) {
        WARN("decode-ws runs on sm_90 only");
        return;
    }
    with_kernels_precompiled([&] {
        std::mt19937 rng(9);
        for (int d : {64, 128, 192, 256}) {
            for (const TileConfig& tile : tile_configs(DType::bf16, d)) {
                if (tile.variant != "ws-split") continue;
                INFO(tile.to_string());
                check_case({2, 32, 1, 4, 1000, d, true, Layout::bshd, tile}, DType::bf16, rng);
            }
            check_case({3, 32, 1, 5, 517, d, true, Layout::padded, {}, {0, 517, 90}, 0}, DType::bf16, rng);
            check_case({2, 32, 1, 4, 777, d, false, Layout::bhsd, {}, {}, 3}, DType::f16, rng);
        }
        for (int splits : {1, 2, 7, 64, 0})
            for (bool causal : {false, true}) {
                check_case(
                    {2, 32, 1, 4, 3000 + 13, 128, causal, Layout::bshd, {}, random_lengths(2, 3013, rng), splits},
                    DType::bf16, rng);
                check_case({2, 64, 8, 16, 1500, 128, causal, Layout::bhsd, {}, {}, splits}, DType::f16, rng);
            }
        check_case({4, 32, 1, 4, 256, 128, true, Layout::bshd, {}, {-5, 100000, 129, -2147483647 - 1}}, DType::bf16,
                   rng);
        check_case({1, 32, 1, 4, 131072, 128, true, Layout::bshd}, DType::bf16, rng);
    });
}

TEST_CASE("decode: per-sequence KV lengths, ragged and malformed", "[decode]") {
    current_device();
    with_kernels_precompiled([&] {
        std::mt19937 rng(4);
        for (bool causal : {false, true})
            for (int splits : {0, 1, 5}) {
                const int batch = 7;
                check_decode(
                    {batch, 8, 2, 1, 2000, 128, causal, Layout::bshd, {}, random_lengths(batch, 2000, rng), splits},
                    rng);
                check_decode(
                    {batch, 4, 4, 4, 333, 64, causal, Layout::bhsd, {}, random_lengths(batch, 333, rng), splits}, rng);
            }
        // Lengths shorter than the query (causal: rows that see no key) and a prefill with per-sequence lengths.
        check_decode({3, 4, 2, 16, 100, 128, true, Layout::bshd, {}, {3, 16, 0}}, rng);
        check_decode({2, 4, 2, 300, 500, 64, true, Layout::bshd, {}, {450, 120}}, rng);
        // Malformed entries are clamped to [0, seqlen_k]: negative reads nothing, too large reads seqlen_k keys.
        check_decode({4, 8, 2, 1, 256, 128, false, Layout::bshd, {}, {-5, 100000, 256, -2147483647 - 1}}, rng);
    });
}

TEST_CASE("decode on the sanitizer subset", "[decode][sanitize]") {
    current_device();
    with_kernels_precompiled([&] {
        std::mt19937 rng(5);
        check_decode({2, 8, 2, 1, 300, 128, false, Layout::bshd, {}, {}, 3}, rng);
        check_decode({3, 4, 1, 4, 200, 64, true, Layout::padded, {}, {-1, 150, 1000}, 2}, rng);  // clamped lengths
        check_decode({1, 16, 1, 2, 90, 256, true, Layout::bhsd}, rng);
        check_decode({2, 4, 4, 3, 64, 40, false, Layout::bshd, {}, {0, 64}, 0, true}, rng);  // caller workspace
        check_decode({2, 32, 1, 4, 300, 128, true, Layout::bshd, {}, {-3, 290}, 2},
                     rng);  // 128 rows: decode-ws on sm_90
        check_decode({2, 32, 1, 4, 300, 128, true, Layout::bshd, {}, {-3, 290}, 2, false, Mods{100, 0, 20.f, true}},
                     rng);
        Case paged{3, 32, 1, 4, 300, 128, true, Layout::bshd, {}, {300, 150, 7}, 2};  // pages; a malformed table
        paged.page_size = 16, paged.corrupt = {1};
        check_decode(paged, rng);
        Case packed{1, 32, 1, 4, 300, 128, true, Layout::bshd, {}, {}, 2};  // packed sequences of 128 rows and fewer
        packed.seqlens_q = {4, 2, 0}, packed.seqlens_k = {300, 30, 5};
        check_case(packed, DType::bf16, rng);
    });
}

TEST_CASE("decode: a caller's workspace, and one too small", "[decode]") {
    current_device();
    std::mt19937 rng(6);
    check_decode({2, 8, 2, 1, 3000, 128, true, Layout::bshd, {}, {}, 9, true}, rng);
    check_decode({2, 8, 2, 1, 3000, 128, true, Layout::bshd, {}, {2999, 17}, 0, true}, rng);

    AttentionArgs a;
    a.dtype = DType::bf16, a.batch = 1, a.heads_q = 8, a.heads_kv = 2, a.seqlen_q = 1, a.seqlen_k = 4096;
    a.head_dim = 128, a.num_splits = 8;
    a.layout_bshd();
    DeviceBuffer q(8 * 128 * 2), kv(2 * 4096 * 128 * 2), o(8 * 128 * 2), workspace(256);
    a.q = q.get(), a.k = a.v = kv.get(), a.o = o.get();
    const std::size_t need = attention_workspace_size(a);
    CHECK(need > 256);
    a.workspace = workspace.get(), a.workspace_bytes = 256;
    CHECK_THROWS_WITH(attention(a, nullptr),
                      Catch::Contains("'workspace_bytes'") && Catch::Contains(std::to_string(need)));
    a.num_splits = 1;  // one split needs no workspace
    CHECK(attention_workspace_size(a) == 0);
}

// Captured once with a caller's workspace, replayed after K, V and seqused_k change in device memory: the replay
// computes on the new contents (nothing about the lengths was captured on the host).
TEST_CASE("decode: a captured CUDA graph replays after the KV cache and lengths change", "[decode]") {
    current_device();
    const driver::Api& api = driver::api();
    if (!api.cuStreamBeginCapture || !api.cuGraphInstantiateWithFlags) {
        WARN("this driver has no stream capture");
        return;
    }
    std::mt19937 rng(7);
    const DType dtype = DType::bf16;
    // Groups of 4 with one token (decode), MQA with 4 tokens (128 packed rows: decode-ws on sm_90, TMA maps captured).
    const auto [heads_q, heads_kv, seqlen_q] = GENERATE(table<int, int, int>({{16, 4, 1}, {32, 1, 4}}));
    AttentionArgs a;
    a.dtype = dtype, a.batch = 4, a.heads_q = heads_q, a.heads_kv = heads_kv, a.seqlen_q = seqlen_q, a.seqlen_k = 5000;
    a.head_dim = 128;
    a.causal = true;
    a.layout_bshd();
    const std::size_t nq = a.q_strides.batch * a.batch, nk = a.k_strides.batch * a.batch;
    const std::size_t n_lse = static_cast<std::size_t>(a.batch) * a.heads_q * a.seqlen_q;
    const auto q = random_tensor(nq, dtype, rng);
    DeviceBuffer dq = upload(q, dtype), dk(nk * 2), dv(nk * 2), dout(nq * 2), dlse(n_lse * 4), dused(a.batch * 4);
    a.q = dq.get(), a.k = dk.get(), a.v = dv.get(), a.o = dout.get(), a.lse = static_cast<float*>(dlse.get());
    a.seqused_k = static_cast<const int*>(dused.get());
    DeviceBuffer workspace(std::max<std::size_t>(attention_workspace_size(a), 256));
    a.workspace = workspace.get(), a.workspace_bytes = workspace.size();
    REQUIRE(attention_choice(a).num_splits > 1);  // the graph holds the combine (a dependent launch on sm_90)

    Stream stream;
    std::vector<int> used = {5000, 1, 2500, 4999};
    dused.upload(used.data(), used.size() * 4);
    attention(a, stream.get());  // loads the kernels outside the capture
    stream.synchronize();
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    FA_JIT_CU(cuStreamBeginCapture, stream.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    attention(a, stream.get());
    FA_JIT_CU(cuStreamEndCapture, stream.get(), &graph);
    FA_JIT_CU(cuGraphInstantiateWithFlags, &exec, graph, 0);

    for (const std::vector<int>& lengths : {std::vector<int>{17, 5000, 0, 3333}, std::vector<int>{4096, 4095, 1, 64}}) {
        INFO("seqused_k " << lengths[0] << ", " << lengths[1] << ", " << lengths[2] << ", " << lengths[3]);
        const auto k = random_tensor(nk, dtype, rng), v = random_tensor(nk, dtype, rng);
        const std::string kb = tools::encode(k, dtype), vb = tools::encode(v, dtype);
        dk.upload(kb.data(), kb.size()), dv.upload(vb.data(), vb.size());
        dused.upload(lengths.data(), lengths.size() * 4);
        dout.fill_bytes(0xFF), dlse.fill_bytes(0xFF);
        FA_JIT_CU(cuGraphLaunch, exec, stream.get());
        stream.synchronize();
        std::string ob(nq * 2, '\0');
        dout.download(ob.data(), ob.size());
        const std::vector<float> o = tools::decode(ob, dtype);
        std::vector<float> lse(n_lse);
        dlse.download(lse.data(), n_lse * 4);
        std::vector<double> ref_o(nq), ref_lse(n_lse);
        reference_attention(a, q, k, v, ref_o, ref_lse, lengths);
        double max_err = 0, lse_err = 0;
        std::size_t bad = 0;
        for (std::size_t i = 0; i < nq; ++i) {
            if (!std::isfinite(o[i]))
                ++bad;
            else
                max_err = std::max(max_err, std::abs(o[i] - ref_o[i]));
        }
        for (std::size_t i = 0; i < n_lse; ++i) {
            if (std::isinf(ref_lse[i]))
                bad += !(std::isinf(lse[i]) && lse[i] < 0);
            else
                lse_err = std::max(lse_err, std::abs(lse[i] - ref_lse[i]));
        }
        CHECK(bad == 0);
        CHECK(max_err < 4.0 / 256);
        CHECK(lse_err < 1e-4);
    }
    FA_JIT_CU(cuGraphExecDestroy, exec);
    FA_JIT_CU(cuGraphDestroy, graph);
}

TEST_CASE("decode: the library's workspace cannot grow inside a capture", "[decode]") {
    current_device();
    const driver::Api& api = driver::api();
    if (!api.cuStreamBeginCapture) return;
    AttentionArgs a;
    a.dtype = DType::f16, a.batch = 4, a.heads_q = 32, a.heads_kv = 4, a.seqlen_q = 1, a.seqlen_k = 8192;
    a.head_dim = 128, a.num_splits = 32;
    a.layout_bshd();
    DeviceBuffer q(a.q_strides.batch * a.batch * 2), kv(a.k_strides.batch * a.batch * 2), o(q.size());
    a.q = q.get(), a.k = a.v = kv.get(), a.o = o.get();
    AttentionArgs small = a;
    small.num_splits = 2;
    // The pool rounds up to whole MiB plus a quarter: the small call's buffer must not fit the large one.
    REQUIRE(attention_workspace_size(small) > 0);
    REQUIRE(attention_workspace_size(small) * 2 < (std::size_t{1} << 20));
    REQUIRE(attention_workspace_size(a) > (std::size_t{2} << 20));

    // A stream destroyed without attention_release_workspace() leaves its large buffer behind; the next stream
    // often gets its handle. Its first call outside a capture must not inherit that buffer.
    {
        Stream old;
        attention(a, old.get());
        old.synchronize();
    }
    Stream stream;
    attention(small, stream.get());
    stream.synchronize();
    FA_JIT_CU(cuStreamBeginCapture, stream.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    CHECK_THROWS_WITH(attention(a, stream.get()), Catch::Contains("captured") && Catch::Contains("workspace"));
    CUgraph graph = nullptr;
    driver::api().cuStreamEndCapture(stream.get(), &graph);  // the capture is invalidated; only end it
    if (graph) driver::api().cuGraphDestroy(graph);
    // After one call outside a capture the pooled workspace is big enough, and a capture needs no allocation.
    attention(a, stream.get());
    stream.synchronize();
    FA_JIT_CU(cuStreamBeginCapture, stream.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    CHECK_NOTHROW(attention(a, stream.get()));
    graph = nullptr;
    FA_JIT_CU(cuStreamEndCapture, stream.get(), &graph);
    CHECK(graph != nullptr);
    if (graph) FA_JIT_CU(cuGraphDestroy, graph);
    attention_release_workspace(stream.get());
    stream.synchronize();
}

TEST_CASE("decode: FA_JIT_CHECK=1 names the first bad seqused_k entry", "[decode]") {
    current_device();
    AttentionArgs a;
    a.dtype = DType::bf16, a.batch = 5, a.heads_q = 4, a.heads_kv = 1, a.seqlen_q = 1, a.seqlen_k = 100;
    a.head_dim = 64;
    a.layout_bshd();
    DeviceBuffer q(5 * 4 * 64 * 2), kv(5 * 100 * 64 * 2), o(5 * 4 * 64 * 2), used(5 * 4);
    a.q = q.get(), a.k = a.v = kv.get(), a.o = o.get(), a.seqused_k = static_cast<const int*>(used.get());
    set_metadata_checks(true);
    for (const auto& [lengths, message] : std::vector<std::pair<std::vector<int>, std::string>>{
             {{1, 2, 101, -1, 5}, "'seqused_k[2]'"}, {{1, 2, 3, -1, 500}, "'seqused_k[3]'"}}) {
        used.upload(lengths.data(), lengths.size() * 4);
        CHECK_THROWS_WITH(attention(a, nullptr), Catch::Contains(message) && Catch::Contains("seqlen_k = 100"));
    }
    const std::vector<int> good = {0, 100, 50, 1, 99};
    used.upload(good.data(), good.size() * 4);
    CHECK_NOTHROW(attention(a, nullptr));
    set_metadata_checks(false);
    synchronize();
}

// The C ABI's fa_jit_attention_choice names what attention_choice() does, and refuses a buffer too small for a name.
TEST_CASE("decode: the C choice matches attention_choice", "[decode]") {
    current_device();
    // Nothing runs, so the tensors stay unwritten; they are distinct and as large as the arguments say.
    DeviceBuffer q(2 * 32 * 128 * 2), o(2 * 32 * 128 * 2), k(2 * 1000 * 8 * 128 * 2), v(2 * 1000 * 8 * 128 * 2);
    fa_jit_attention_args c;
    fa_jit_attention_args_init(&c);
    c.q = q.get(), c.k = k.get(), c.v = v.get(), c.o = o.get();
    c.dtype = FA_JIT_BF16;
    c.batch = 2, c.heads_q = 32, c.heads_kv = 8, c.seqlen_q = 1, c.seqlen_k = 1000, c.head_dim = 128;
    fa_jit_layout_bshd(&c);
    AttentionArgs a;
    a.q = q.get(), a.k = k.get(), a.v = v.get(), a.o = o.get();
    a.dtype = DType::bf16;
    a.batch = 2, a.heads_q = 32, a.heads_kv = 8, a.seqlen_q = 1, a.seqlen_k = 1000, a.head_dim = 128;
    a.layout_bshd();
    const AttentionChoice expected = attention_choice(a);
    char family[64], tile[64];
    int32_t splits = 0;
    uint64_t bytes = 0;
    REQUIRE(fa_jit_attention_choice(&c, family, tile, sizeof family, &splits, &bytes) == FA_JIT_SUCCESS);
    CHECK(family == expected.family);
    CHECK(tile == expected.tile.to_string());
    CHECK(splits == expected.num_splits);
    CHECK(bytes == expected.workspace_bytes);
    CHECK(std::string(family) == "decode");
    CHECK(fa_jit_attention_choice(&c, family, tile, 4, nullptr, nullptr) == FA_JIT_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(fa_jit_last_error(), Catch::StartsWith("invalid argument 'capacity'"));
}
