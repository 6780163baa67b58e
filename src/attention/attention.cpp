// attention(): validate -> family and tile -> in-memory table -> (miss) disk cache -> (miss) NVRTC -> load -> plan
// -> launch. The hot path (an in-memory hit) checks the arguments, plans and launches: no allocation, no global lock.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "attention/family.hpp"
#include "attention/metadata_check.hpp"
#include "attention/packed_loop.hpp"
#include "attention/params.hpp"
#include "attention/seqlen_bucket.hpp"
#include "attention/tile_alignment.hpp"
#include "attention/validate.hpp"
#include "cache/kernel_table.hpp"
#include "driver/driver_api.hpp"
#include "launch/workspace.hpp"

namespace fa_jit {
namespace {

// Everything that selects a kernel for a call. Sequence lengths enter through their buckets and their alignment
// only, so that every length of one bucket shares a kernel (two for families with an even_mn variant).
struct ProblemKey {
    CUcontext context;
    DType dtype;
    int head_dim;
    bool causal;
    int group_size;
    bool seqused_k;
    int mods;  // ScoreMods::bits()
    int varlen;  // 0: one sequence; packed sequences: 1 where packed_loop_fits(), else 2
    bool paged;
    int page_size;                         // AttentionKernelSpec::table_map depends on it (0 without pages)
    int seqlen_q_bucket, seqlen_k_bucket;  // query_length_class(), seqlen_bucket()
    int row_keys_bucket;                   // seqlen_bucket(keys_per_row()): AttentionKernelSpec::settled_max
    int seqlen_q_align, seqlen_k_align;    // tile_alignment(): even_mn, and where f16-ws takes 256-row tiles
    TileConfig tile;                       // the caller's override, or empty
    bool operator==(const ProblemKey& o) const noexcept {
        return context == o.context && dtype == o.dtype && head_dim == o.head_dim && causal == o.causal &&
               group_size == o.group_size && seqused_k == o.seqused_k && mods == o.mods && varlen == o.varlen &&
               paged == o.paged && page_size == o.page_size && seqlen_q_bucket == o.seqlen_q_bucket &&
               seqlen_k_bucket == o.seqlen_k_bucket && row_keys_bucket == o.row_keys_bucket &&
               seqlen_q_align == o.seqlen_q_align && seqlen_k_align == o.seqlen_k_align && tile == o.tile;
    }
};
struct ProblemKeyHash {
    std::size_t operator()(const ProblemKey& k) const noexcept {
        std::size_t h = reinterpret_cast<std::uintptr_t>(k.context);
        for (int v : {static_cast<int>(k.dtype), k.head_dim, static_cast<int>(k.causal), k.group_size,
                      static_cast<int>(k.seqused_k), k.mods, k.varlen, static_cast<int>(k.paged), k.page_size,
                      k.seqlen_q_bucket, k.seqlen_k_bucket, k.row_keys_bucket, k.seqlen_q_align, k.seqlen_k_align,
                      k.tile.block_m, k.tile.block_n, k.tile.warps, k.tile.stages})
            h = h * 1000003u ^ static_cast<std::size_t>(v);
        return h ^ std::hash<std::string>{}(k.tile.variant);
    }
};

// A specialization loaded for one context: its family (which plans each call) and its kernels.
struct LoadedAttention {
    std::shared_ptr<const KernelFamily> family;
    AttentionKernelSpec spec;
    std::vector<Kernel> kernels;  // the family's kernels(spec), in order
};

CUcontext current_context() {
    CUcontext context = nullptr;
    FA_JIT_CU(cuCtxGetCurrent, &context);
    if (!context) {
        current_device();  // makes device 0's primary context current
        FA_JIT_CU(cuCtxGetCurrent, &context);
    }
    return context;
}

// The family and specialization that run `a` on the current device (`forced`: the caller's tile, or empty).
// Compiles nothing.
struct Resolved {
    std::shared_ptr<const KernelFamily> family;
    AttentionKernelSpec spec;
};
Resolved resolve(const AttentionArgs& a, const TileConfig& forced) {
    validate(a);  // the full check once per problem class: every family that could run it
    const DeviceInfo& device = current_device();
    const ProblemClass problem = ProblemClass::of(a);
    Resolved r;
    if (forced.empty()) {
        r.spec = attention_spec(a, choose_tile_config(device, problem));
    } else {
        const auto owner = family_owning(forced);
        if (!owner || !owner->accepts(a.dtype, a.head_dim) || !owner->tile_is_legal(a.head_dim, forced))
            throw InvalidArgument("tile", "a configuration listed by tile_configs(dtype, head_dim)",
                                  forced.to_string());
        if (!owner->serves(problem, device.cc()))
            throw InvalidArgument("tile",
                                  fmt::format("a configuration of a family serving this problem on this GPU (sm_{}); "
                                              "{} does not",
                                              device.cc(), owner->name()),
                                  forced.to_string());
        r.spec = attention_spec(a, forced);
    }
    r.family = family_owning(r.spec.tile);
    return r;
}

LoadedAttention load(const AttentionArgs& a, const TileConfig& forced) {
    Resolved r = resolve(a, forced);
    LoadedAttention l{std::move(r.family), r.spec, {}};
    const CompileRequest request = attention_compile_request(l.spec, "");
    for (const std::string& expression : request.name_expressions)
        // Arch-specific (sm_90a on Hopper), matching attention_arch(): what warmup puts in the cache.
        l.kernels.push_back(get_kernel(request, expression, /*arch_specific=*/true));
    return l;
}

const LoadedAttention& loaded_attention(const AttentionArgs& a, const TileConfig& tile) {
    static cache::KernelTable<ProblemKey, LoadedAttention, ProblemKeyHash> table;
    const ProblemKey key{current_context(),
                         a.dtype,
                         a.head_dim,
                         a.causal,
                         a.heads_q / a.heads_kv,
                         a.seqused_k != nullptr,
                         ScoreMods::of(a).bits(),
                         a.cu_seqlens_q == nullptr ? 0 : packed_loop_fits(a) ? 1 : 2,
                         a.block_table != nullptr,
                         a.block_table != nullptr ? a.page_size : 0,
                         query_length_class(a.seqlen_q),
                         seqlen_bucket(a.seqlen_k),
                         seqlen_bucket(keys_per_row(a)),
                         tile_alignment(a.seqlen_q),
                         tile_alignment(a.seqlen_k),
                         tile};
    return table.get(key, [&] { return load(a, tile); });
}

// Throws unless `tile` is legal for the problem. The last (dtype, head_dim, tile) found legal is remembered per
// thread: fa-jit-bench forces one tile in its timed loop, which then takes no lock and allocates nothing.
void check_forced_tile(const AttentionArgs& a, const TileConfig& tile) {
    struct Checked {
        DType dtype;
        int head_dim;
        TileConfig tile;
    };
    thread_local std::optional<Checked> last;
    if (last && last->dtype == a.dtype && last->head_dim == a.head_dim && last->tile == tile) return;
    if (!tile_is_legal(a.dtype, a.head_dim, tile))
        throw InvalidArgument("tile", "a configuration listed by tile_configs(dtype, head_dim)", tile.to_string());
    last = Checked{a.dtype, a.head_dim, tile};
}

bool empty_problem(const AttentionArgs& a) {
    return a.batch == 0 || a.heads_q == 0 || a.seqlen_q == 0;
}

}  // namespace

void validate(const AttentionArgs& a) {
    validate_problem(a);
    const auto families = registered_families();
    const bool served =
        std::any_of(families.begin(), families.end(), [&](const auto& f) { return f->accepts(a.dtype, a.head_dim); });
    if (!served) {
        // No family runs this head dim: the families of the dtype say why (e.g. fp16/bf16 need a multiple of 8).
        for (const auto& f : families)
            if (f->accepts_dtype(a.dtype)) f->check_args(a);
        throw InvalidArgument("head_dim", "a head dim some kernel family runs for " + to_string(a.dtype),
                              std::to_string(a.head_dim));
    }
    validate_tensors(a);
    for (const auto& f : families)
        if (f->accepts(a.dtype, a.head_dim)) f->check_args(a);
}

void attention(const AttentionArgs& args, CUstream stream) {
    attention(args, stream, TileConfig{});
}

// The workspace a plan needs: the caller's (checked against the plan) or the stream's.
void* workspace_for(const LaunchPlan& plan, const AttentionArgs& args, CUstream stream) {
    if (plan.workspace_bytes == 0) return nullptr;
    if (args.workspace) {
        FA_JIT_REQUIRE(args.workspace_bytes >= plan.workspace_bytes, "workspace_bytes",
                       fmt::format("at least {} bytes (attention_workspace_size())", plan.workspace_bytes),
                       std::to_string(args.workspace_bytes));
        return args.workspace;
    }
    return reinterpret_cast<void*>(stream_workspace(stream, plan.workspace_bytes));
}

void attention(const AttentionArgs& args, CUstream stream, const TileConfig& tile) {
    // validate()'s checks in its order, without its allocations: argument errors come before any driver call.
    validate_problem(args);
    const AcceptingFamilies& accepting = families_accepting(args.dtype, args.head_dim);
    if (accepting.count == 0) validate(args);  // throws, naming head_dim (or why the dtype's families refuse it)
    validate_tensors(args);
    for (int i = 0; i < accepting.count; ++i) accepting.families[i]->check_args(args);
    if (!tile.empty()) check_forced_tile(args, tile);
    if (empty_problem(args)) return;
    const LoadedAttention& l = loaded_attention(args, tile);
    const LaunchPlan plan = l.family->plan(l.spec, args, l.kernels.front().device());
    AttentionParams params = make_params(args);
    params.num_splits = plan.num_splits;
    l.family->bind_workspace(params, workspace_for(plan, args, stream));
    if (metadata_checks_enabled()) check_device_metadata(args, stream);
    for (int i = 0; i < plan.count; ++i) {
        const KernelLaunch& k = plan.launches[i];
        l.family->launch_kernel(
            l.spec, k.kernel, l.kernels.at(k.kernel),
            {{k.grid[0], k.grid[1], k.grid[2]}, {k.block}, k.shared_bytes, stream, k.programmatic_dependency}, params,
            args);
    }
}

std::size_t attention_workspace_size(const AttentionArgs& args) {
    return attention_choice(args).workspace_bytes;
}

AttentionChoice attention_choice(const AttentionArgs& args, const TileConfig& tile) {
    validate(args);
    if (!tile.empty()) check_forced_tile(args, tile);
    if (empty_problem(args)) return {};
    const Resolved r = resolve(args, tile);
    const LaunchPlan plan = r.family->plan(r.spec, args, current_device());
    return {r.family->name(), r.spec.tile, plan.num_splits, plan.workspace_bytes};
}

void attention_release_workspace(CUstream stream) {
    release_stream_workspace(stream);
}

void attention_reference(const AttentionArgs& args, CUstream stream) {
    validate(args);
    if (empty_problem(args)) return;
    constexpr unsigned kThreads = 128;  // kReferenceThreads in attention_reference.cu
    CompileRequest request;
    request.source = kernel_source("attention_reference.cu");
    const std::string expression = std::string("fa_jit::attention_reference<") + kernel_element_type(args.dtype) +
                                   (args.causal ? ", true>" : ", false>");
    request.name_expressions = {expression};
    request.family = "reference";
    const Kernel kernel = get_kernel(request, expression);
    const AttentionParams params = make_params(args);
    launch(kernel,
           {{(static_cast<unsigned>(args.seqlen_q) + kThreads - 1) / kThreads, static_cast<unsigned>(args.heads_q),
             static_cast<unsigned>(args.batch)},
            {kThreads},
            0,
            stream},
           params);
}

}  // namespace fa_jit
