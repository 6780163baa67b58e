// The head-group order of a grid of one block per query tile (kernel_sources/tile/head_groups.cuh), which host and
// device compute alike: every (query tile, head) pair once, groups of as equal sizes as the heads divide into, the
// smaller first, each group's tiles in rank order over its heads.
#include <catch2/catch.hpp>
#include <set>
#include <utility>
#include <vector>

#include "../../kernel_sources/tile/head_groups.cuh"

using fa_jit::tile::head_group_place;

namespace {

// The order built by loops: ceil(heads / group) groups of as equal sizes as the heads divide into, the smaller
// first; each group rank by rank, its heads inner.
std::vector<std::pair<int, int>> order_by_loops(int tiles, int heads, int group) {
    const int groups = (heads + group - 1) / group;
    std::vector<int> sizes(groups, heads / groups);
    for (int g = groups - heads % groups; g < groups; ++g) ++sizes[g];
    std::vector<std::pair<int, int>> order;
    int first = 0;
    for (int size : sizes) {
        for (int rank = 0; rank < tiles; ++rank)
            for (int h = first; h < first + size; ++h) order.push_back({rank, h});
        first += size;
    }
    return order;
}

}  // namespace

TEST_CASE("head groups: every (query tile, head) pair once, in group order", "[head-groups]") {
    for (int tiles : {1, 2, 5, 86, 128})
        for (int heads = 1; heads <= 40; ++heads)
            for (int group : {1, 2, 3, 4, 5, 7, 8, 16, 32, 64}) {
                CAPTURE(tiles, heads, group);
                const auto expected = order_by_loops(tiles, heads, group);
                REQUIRE(expected.size() == static_cast<std::size_t>(tiles) * heads);
                std::set<std::pair<int, int>> seen;
                for (int n = 0; n < tiles * heads; ++n) {
                    const auto at = head_group_place(n, tiles, heads, group);
                    REQUIRE(std::make_pair(at.rank, at.head) == expected[n]);
                    seen.insert({at.rank, at.head});
                }
                REQUIRE(seen.size() == expected.size());  // and so every pair once
            }
}

TEST_CASE("head groups: sizes and order for 21 heads in groups of at most 4", "[head-groups]") {
    // ceil(21 / 4) = 6 groups: three of 3 heads, then three of 4; each group rank by rank over its heads.
    const int tiles = 2;
    std::vector<std::pair<int, int>> order;
    for (int n = 0; n < 2 * 21; ++n) {
        const auto at = head_group_place(n, tiles, 21, 4);
        order.push_back({at.rank, at.head});
    }
    const std::vector<std::pair<int, int>> first_two_groups = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2},
                                                               {0, 3}, {0, 4}, {0, 5}, {1, 3}, {1, 4}, {1, 5}};
    CHECK(std::vector<std::pair<int, int>>(order.begin(), order.begin() + 12) == first_two_groups);
    const std::vector<std::pair<int, int>> last_group = {{0, 17}, {0, 18}, {0, 19}, {0, 20},
                                                         {1, 17}, {1, 18}, {1, 19}, {1, 20}};
    CHECK(std::vector<std::pair<int, int>>(order.end() - 8, order.end()) == last_group);
    // One head per group is the grid's own order: head by head, ranks ascending.
    for (int n = 0; n < 2 * 21; ++n) {
        const auto at = head_group_place(n, tiles, 21, 1);
        CHECK(at.head == n / tiles);
        CHECK(at.rank == n % tiles);
    }
}
