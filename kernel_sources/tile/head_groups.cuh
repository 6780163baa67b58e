// Head groups: the order in which a grid of one block per query tile visits a sequence's (query tile, head) pairs
// when its heads run in groups (tile/coords.cuh, block_index_head_groups). The GPU starts a grid's blocks in order;
// under the causal mask a query tile's cost grows with its rows, so each head's tiles run heaviest first, and with one
// head at a time the last head's heavy tiles start only a head's worth of blocks before the end of the grid and then
// run on alone (bench/block_order_model.py). In groups, each group's tiles run heaviest first over its heads: a
// group's heavy tiles start its size in heads' worth of blocks before its end.
//
// The heads split into ceil(heads / group) groups of as equal sizes as they divide into, the smaller first, so that
// the last (whose heavy tiles start nearest the end) is the largest. Host and device compute it alike (a CPU test
// checks that every pair is visited once, in that order).
#pragma once

#include "host_device.cuh"

namespace fa_jit::tile {

struct HeadGroupPlace {
    int rank;  // the query tile's place in its group's order: 0 first (heaviest under the causal mask)
    int head;
};

// The n-th block of a sequence's tiles * heads blocks, for groups of at most `group` heads (group >= 1). In 32-bit
// arithmetic (tiles * heads < 2^31): with 64-bit divisions ptxas moved d 96's wait for P V to the top of its softmax
// (bench/kernel_harness/pv_overlap.py: 0 of 58 exponentials beside P V against 9).
FA_JIT_HOST_DEVICE constexpr HeadGroupPlace head_group_place(int n, int tiles, int heads, int group) {
    const int groups = (heads + group - 1) / group, small = heads / groups, larger = heads % groups;
    const int small_blocks = (groups - larger) * small * tiles;
    const bool in_larger = n >= small_blocks;
    const int size = in_larger ? small + 1 : small;
    const int first_head = in_larger ? (groups - larger) * small : 0;  // of the groups of this size
    const int m = in_larger ? n - small_blocks : n;
    const int g = m / (size * tiles);
    const int r = m - g * size * tiles;  // < size * tiles
    return {r / size, first_head + g * size + r % size};
}

}  // namespace fa_jit::tile
