// Where a block's tile sits: plain structs of the tile layer, without device code, so that host tests of the tile
// numberings (tests/cpu/test_packed_tiles.cpp) can include what uses them.
#pragma once

namespace fa_jit::tile {

struct BlockIndex {
    int m0;    // first query row of the tile
    int head;  // query head
    int batch;
    int head_kv;  // key / value head: head / group_size
};

// A sequence's first rows in the packed tensors and its lengths (tile/coords.cuh's seq_rows says how they are read).
struct SeqRows {
    int q0, k0;
    int seqlen_q, seqlen_k;
};

}  // namespace fa_jit::tile
