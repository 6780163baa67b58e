// The split-KV heuristic of the decode family: how many blocks the keys of one (sequence, KV head) are split into.
#pragma once

namespace fa_jit::families {

struct SplitProblem {
    int multiprocessors = 0;  // SMs of the GPU
    int blocks_per_sm = 1;    // blocks per SM: as fit (shared memory, threads) and keep loads in flight
    long long work = 0;       // blocks without splitting: batch * heads_kv * row tiles
    long long key_steps = 0;  // block steps over the longest sequence: ceil(seqlen_k / block_n)
};

// The most splits the heuristic chooses, and the most a caller may ask for (AttentionArgs::num_splits).
constexpr int kMaxChosenSplits = 128;
constexpr int kMaxSplits = 1024;

// Decode reads every key once, so its time is the longest block's steps times the waves of blocks. For s splits:
//   waves(s) = ceil(work * s / (multiprocessors * blocks_per_sm)),  steps(s) = ceil(key_steps / s) + 2 + [s > 1],
// where 2 steps price a block's prologue and merge, and one more the combine launch. The choice is the smallest s
// whose waves(s) * steps(s) is within 5% of the minimum over s in [1, min(128, key_steps / 2)] (a split keeps at
// least two block steps).
// Pure (no device): tests check it as a table.
int choose_num_splits(const SplitProblem& problem);

}  // namespace fa_jit::families
