// kernel_sources/tile/packed_tiles.cuh on the host: its warp code runs on 32 threads, one per lane, whose shuffles meet
// at a barrier, so the table a kernel's first warp builds and the tiles every block then takes are checked here
// without a GPU: every query tile of every sequence and head exactly once, over all blocks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <tuple>
#include <vector>

namespace {

// One emulated warp: lane ids per thread, and the exchange every shuffle goes through.
class Warp {
public:
    int exchange(int lane, int value, int source) {
        values_[lane] = value;
        wait();
        const int got = values_[source];
        wait();
        return got;
    }

private:
    void wait() {  // all 32 lanes arrive (a reusable barrier)
        std::unique_lock<std::mutex> lock(mutex_);
        const unsigned long long generation = generation_;
        if (++arrived_ == 32) {
            arrived_ = 0, ++generation_;
            changed_.notify_all();
        } else {
            changed_.wait(lock, [&] { return generation_ != generation; });
        }
    }
    int values_[32] = {};
    std::mutex mutex_;
    std::condition_variable changed_;
    int arrived_ = 0;
    unsigned long long generation_ = 0;
};

thread_local Warp* t_warp = nullptr;
thread_local int t_lane = 0;

}  // namespace

// What packed_tiles.cuh uses of CUDA, for the host.
#define __device__
#define __forceinline__ inline
struct int4 {
    int x, y, z, w;
};
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline int max(int a, int b) { return a > b ? a : b; }
inline int __shfl_sync(unsigned, int v, int source) { return t_warp->exchange(t_lane, v, source); }
inline int __shfl_xor_sync(unsigned, int v, int mask) { return t_warp->exchange(t_lane, v, t_lane ^ mask); }
inline int __shfl_up_sync(unsigned, int v, int delta) {
    return t_warp->exchange(t_lane, v, t_lane >= delta ? t_lane - delta : t_lane);
}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunknown-pragmas"
#include "tile/packed_tiles.cuh"
#pragma GCC diagnostic pop

namespace pt = fa_jit::tile::packed_tiles;
using fa_jit::tile::SeqRows;

namespace {

// The table one warp builds for these sequences' rows.
template <int kBlockM>
pt::Table build_table(const std::vector<SeqRows>& rows, int heads) {
    fa_jit::AttentionParams p{};
    p.batch = static_cast<int>(rows.size()), p.heads_q = heads, p.group_size = 1;
    pt::Table table{};
    Warp warp;
    std::vector<std::thread> lanes;
    for (int lane = 0; lane < 32; ++lane)
        lanes.emplace_back([&, lane] {
            t_warp = &warp, t_lane = lane;
            pt::build<kBlockM>(p, table, lane, [&](int b) { return rows[b]; });
        });
    for (auto& l : lanes) l.join();
    return table;
}

// Every block's tiles: each (sequence, head, query tile) with rows must come exactly once, a pair's empty second has
// no rows, and the sequence's rows come with each tile.
template <int kBlockM>
void check_cover(const std::vector<SeqRows>& rows, const pt::Table& table, int heads, int blocks) {
    fa_jit::AttentionParams p{};
    p.batch = static_cast<int>(rows.size()), p.heads_q = heads, p.group_size = 1;
    std::map<std::tuple<int, int, int>, int> seen;
    const int end = pt::count(table);
    for (int block = 0; block < blocks; ++block) {
        int previous = -1;
        for (int n = 0, id = pt::tile_of(0, block, blocks); id < end;
             id = pt::tile_of(++n, block, blocks)) {
            REQUIRE(id > previous);  // a block's ids grow: "is there a next tile" is tile_of(n + 1) < end
            previous = id;
            SeqRows seq{};
            const fa_jit::tile::BlockIndex b = pt::tile_at<kBlockM>(p, table, id, seq);
            REQUIRE(b.batch >= 0);
            REQUIRE(b.batch < p.batch);
            CHECK(seq.q0 == rows[b.batch].q0);
            CHECK(seq.k0 == rows[b.batch].k0);
            CHECK(seq.seqlen_q == rows[b.batch].seqlen_q);
            CHECK(seq.seqlen_k == rows[b.batch].seqlen_k);
            if (b.m0 >= seq.seqlen_q) continue;  // a middle tile's second
            ++seen[{b.batch, b.head, b.m0 / kBlockM}];
        }
    }
    std::size_t expected = 0;
    for (int s = 0; s < p.batch; ++s)
        for (int h = 0; h < heads; ++h)
            for (int m = 0; m * kBlockM < rows[s].seqlen_q; ++m) {
                ++expected;
                INFO("sequence " << s << " head " << h << " query tile " << m);
                CHECK(seen[{s, h, m}] == 1);
            }
    CHECK(seen.size() == expected);
}

// A position pairs query tiles j and tiles - 1 - j of one head (cost about even within a sequence), positions come
// longest sequence first, and a middle tile's second is empty.
template <int kBlockM>
void check_pairs(const std::vector<SeqRows>& rows, const pt::Table& table, int heads) {
    fa_jit::AttentionParams p{};
    p.batch = static_cast<int>(rows.size()), p.heads_q = heads, p.group_size = 1;
    int last_tiles = 1 << 30;
    for (int id = 0; id < pt::count(table); id += 2) {
        SeqRows seq{};
        const fa_jit::tile::BlockIndex a = pt::tile_at<kBlockM>(p, table, id, seq);
        const fa_jit::tile::BlockIndex b = pt::tile_at<kBlockM>(p, table, id + 1, seq);
        const int tiles = (seq.seqlen_q + kBlockM - 1) / kBlockM;
        INFO("position " << id / 2 << ": sequence " << a.batch << " head " << a.head);
        CHECK(b.batch == a.batch);
        CHECK(b.head == a.head);
        CHECK(tiles <= last_tiles);
        last_tiles = tiles;
        const int j = a.m0 / kBlockM;
        CHECK(2 * j < tiles);
        CHECK(b.m0 / kBlockM == (tiles - 1 - j == j ? tiles : tiles - 1 - j));
    }
}

std::vector<SeqRows> packed(const std::vector<int>& lengths) {
    std::vector<SeqRows> rows;
    int start = 0;
    for (int n : lengths) rows.push_back({start, start, n, n}), start += n;
    return rows;
}

}  // namespace

TEST_CASE("packed tiles: every query tile of every sequence once, over every block", "[packed_tiles]") {
    std::mt19937 rng(7);
    for (int batch : {1, 2, 14, 31, 33, 64}) {
        std::uniform_int_distribution<int> len(0, 8192);
        std::vector<int> lengths(batch);
        for (int& n : lengths) n = len(rng);
        lengths[0] = 8192;  // one at the bound: 64 query tiles of 128 rows
        const std::vector<SeqRows> rows = packed(lengths);
        const pt::Table t128 = build_table<128>(rows, 4), t192 = build_table<192>(rows, 2);
        for (int blocks : {1, 7, 132}) {
            INFO("batch " << batch << " blocks " << blocks);
            check_cover<128>(rows, t128, 4, blocks);
            check_cover<192>(rows, t192, 2, blocks);
        }
        check_pairs<128>(rows, t128, 4);
        check_pairs<192>(rows, t192, 2);
    }
}

TEST_CASE("packed tiles: empty and one-row sequences, ties, and rows without keys", "[packed_tiles]") {
    // Empty sequences have no tiles; equal lengths rank by index; a sequence with rows but no keys (malformed
    // entries: seq_rows gives it seqlen_k 0) keeps its tiles, which write O = 0 and LSE = -inf.
    std::vector<SeqRows> rows = packed({0, 1, 128, 129, 0, 128, 255, 256, 1});
    rows[3].seqlen_k = 0;
    const pt::Table table = build_table<128>(rows, 5);
    for (int blocks : {1, 3, 132}) check_cover<128>(rows, table, 5, blocks);
    check_pairs<128>(rows, table, 5);
    CHECK(pt::count(table) == 2 * 5 * 7);  // a pair for each of the 7 sequences with rows (2 tiles at most), 5 heads
    std::vector<int> order(table.order, table.order + 9);
    CHECK(std::vector<int>(order.begin(), order.begin() + 7) == std::vector<int>{3, 6, 7, 1, 2, 5, 8});
    // No sequence has rows: no tiles at all.
    const pt::Table none = build_table<128>(packed({0, 0, 0}), 4);
    CHECK(pt::count(none) == 0);
}
