// The kernel-family registry: families register at load time; lookups take a snapshot in priority order.
#include <algorithm>
#include <atomic>
#include <mutex>

#include "attention/family.hpp"

namespace fa_jit {
namespace {

struct Registry {
    std::mutex mutex;
    std::vector<std::shared_ptr<const KernelFamily>> families;  // sorted by (priority, name)
    std::atomic<unsigned> generation{0};                        // bumped by every change
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
        return a->priority() != b->priority() ? a->priority() < b->priority() : std::string_view(a->name()) < b->name();
    };
    all.insert(std::upper_bound(all.begin(), all.end(), family, before), std::move(family));
    ++r.generation;
    return true;
}

void unregister_family(std::string_view name) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto& all = r.families;
    all.erase(std::remove_if(all.begin(), all.end(), [&](const auto& f) { return f->name() == name; }), all.end());
    ++r.generation;
}

std::vector<std::shared_ptr<const KernelFamily>> registered_families() {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    return r.families;
}

const AcceptingFamilies& families_accepting(DType dtype, int head_dim) {
    struct Memo {
        unsigned generation = ~0u;
        DType dtype{};
        int head_dim = -1;
        std::vector<std::shared_ptr<const KernelFamily>> keep;  // keeps `result`'s families alive
        AcceptingFamilies result;
    };
    thread_local Memo memo;
    const unsigned generation = registry().generation.load(std::memory_order_acquire);
    if (memo.generation == generation && memo.dtype == dtype && memo.head_dim == head_dim) return memo.result;
    memo.keep.clear();
    memo.result = {};
    for (auto& f : registered_families())
        if (f->accepts(dtype, head_dim) && memo.result.count < AcceptingFamilies::kMax) {
            memo.result.families[memo.result.count++] = f.get();
            memo.keep.push_back(std::move(f));
        }
    memo.generation = generation, memo.dtype = dtype, memo.head_dim = head_dim;
    return memo.result;
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

std::shared_ptr<const KernelFamily> family_chosen(const ProblemClass& problem, int cc) {
    for (auto& f : registered_families())
        if (f->chosen_for(problem, cc)) return f;
    return nullptr;
}

const char* kernel_element_type(DType dtype) {
    switch (dtype) {
        case DType::f32:
            return "float";
        case DType::f16:
            return "fa_jit::half_t";
        case DType::bf16:
            return "fa_jit::bf16_t";
    }
    return "?";
}

std::size_t max_shared_bytes(int cc) {
    // Shared memory a block may opt into (CUDA programming guide, "compute capabilities").
    if (cc == 80 || cc == 87) return 163 * 1024;
    if (cc == 90 || cc == 100 || cc == 103) return 227 * 1024;
    return 99 * 1024;  // 8.6, 8.9, 12.x and anything unknown: the smallest of the sm_80+ parts
}

void KernelFamily::launch_kernel(const AttentionKernelSpec&, int, const Kernel& kernel, const LaunchConfig& config,
                                 const AttentionParams& params, const AttentionArgs&) const {
    launch(kernel, config, params);
}

LaunchPlan KernelFamily::plan(const AttentionKernelSpec& spec, const AttentionArgs& args, const DeviceInfo&) const {
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
