// The kernel-family registry: families register at load time; lookups take a snapshot in priority order.
#include "attention/family.hpp"

#include <algorithm>
#include <mutex>

namespace fa_jit {
namespace {

struct Registry {
    std::mutex mutex;
    std::vector<std::shared_ptr<const KernelFamily>> families;  // sorted by (priority, name)
};

Registry& registry() {
    static Registry r;  // function-local: families register from other files' static initializers
    return r;
}

}  // namespace

bool register_family(std::shared_ptr<const KernelFamily> family) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto& all = r.families;
    all.erase(std::remove_if(all.begin(), all.end(),
                             [&](const auto& f) { return std::string_view(f->name()) == family->name(); }),
              all.end());
    const auto before = [](const auto& a, const auto& b) {
        return a->priority() != b->priority() ? a->priority() < b->priority()
                                              : std::string_view(a->name()) < b->name();
    };
    all.insert(std::upper_bound(all.begin(), all.end(), family, before), std::move(family));
    return true;
}

void unregister_family(std::string_view name) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto& all = r.families;
    all.erase(std::remove_if(all.begin(), all.end(), [&](const auto& f) { return f->name() == name; }), all.end());
}

std::vector<std::shared_ptr<const KernelFamily>> registered_families() {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    return r.families;
}

std::shared_ptr<const KernelFamily> family_owning(const TileConfig& tile) {
    for (auto& f : registered_families())
        if (f->owns(tile)) return f;
    return nullptr;
}

std::shared_ptr<const KernelFamily> family_serving(const ProblemClass& problem, int cc) {
    for (auto& f : registered_families())
        if (f->serves(problem, cc)) return f;
    return nullptr;
}

std::size_t max_shared_bytes(int cc) {
    // Shared memory a block may opt into (CUDA programming guide, "compute capabilities").
    if (cc == 80 || cc == 87) return 163 * 1024;
    if (cc == 90 || cc == 100 || cc == 103) return 227 * 1024;
    return 99 * 1024;  // 8.6, 8.9, 12.x and anything unknown: the smallest of the sm_80+ parts
}

LaunchPlan KernelFamily::plan(const AttentionKernelSpec& spec, const AttentionArgs& args) const {
    LaunchPlan plan;
    plan.count = 1;
    KernelLaunch& l = plan.launches[0];
    l.grid[0] = static_cast<unsigned>((args.seqlen_q + spec.tile.block_m - 1) / spec.tile.block_m);
    l.grid[1] = static_cast<unsigned>(args.heads_q);
    l.grid[2] = static_cast<unsigned>(args.batch);
    l.block = static_cast<unsigned>(threads(spec));
    l.shared_bytes = shared_bytes(spec);
    return plan;
}

}  // namespace fa_jit
