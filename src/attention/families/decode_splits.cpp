#include "attention/families/decode_splits.hpp"

#include <algorithm>

namespace fa_jit::families {

int choose_num_splits(const SplitProblem& p) {
    constexpr long long kOverheadSteps = 2;  // a block's prologue and merge
    constexpr long long kCombineSteps = 1;   // the combine launch, with more than one split
    constexpr long long kMinStepsPerSplit = 2;
    const long long slots = std::max(1LL, static_cast<long long>(p.multiprocessors) * std::max(1, p.blocks_per_sm));
    if (p.work <= 0 || p.key_steps <= 0) return 1;
    const long long max_splits = std::clamp<long long>(p.key_steps / kMinStepsPerSplit, 1, kMaxChosenSplits);
    const auto cost = [&](long long s) {
        const long long waves = (p.work * s + slots - 1) / slots;
        const long long steps = (p.key_steps + s - 1) / s + kOverheadSteps + (s > 1 ? kCombineSteps : 0);
        return waves * steps;
    };
    long long best = cost(1);
    for (long long s = 2; s <= max_splits; ++s) best = std::min(best, cost(s));
    // The fewest splits within 5% of the best: the model does not see the combine's traffic or a wave's tail
    // finishing early, so a few percent are not worth more splits.
    for (long long s = 1;; ++s)
        if (cost(s) * 100 <= best * 105) return static_cast<int>(s);
}

}  // namespace fa_jit::families
