// attention(): validate -> kernel spec -> in-memory table -> (miss) disk cache -> (miss) NVRTC -> load -> launch.
// The hot path (an in-memory hit) fills a params struct and launches: no allocation, no global lock.
#include "attention/seqlen_bucket.hpp"
#include "attention_params.cuh"
#include "cache/kernel_table.hpp"
#include "driver/driver_api.hpp"
#include "fa_jit/attention.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace fa_jit {
namespace {

// The largest power of two <= kMaxTile dividing n: whether a tile of any size up to kMaxTile divides n.
constexpr int kMaxTile = 128;
int tile_alignment(int n) { return n == 0 ? kMaxTile : std::min(n & -n, kMaxTile); }

// Everything that selects a kernel for a call. Sequence lengths enter through their buckets and their alignment
// only, so that every length of one bucket shares a kernel (two for fp16/bf16: with and without bounds checks).
struct ProblemKey {
    CUcontext context;
    DType dtype;
    int head_dim;
    bool causal;
    int seqlen_q_bucket, seqlen_k_bucket;
    int seqlen_q_align, seqlen_k_align;  // tile_alignment(): decides AttentionKernelSpec::even_mn
    TileConfig tile;  // the caller's override, or empty
    bool operator==(const ProblemKey& o) const noexcept {
        return context == o.context && dtype == o.dtype && head_dim == o.head_dim && causal == o.causal &&
               seqlen_q_bucket == o.seqlen_q_bucket && seqlen_k_bucket == o.seqlen_k_bucket &&
               seqlen_q_align == o.seqlen_q_align && seqlen_k_align == o.seqlen_k_align && tile == o.tile;
    }
};
struct ProblemKeyHash {
    std::size_t operator()(const ProblemKey& k) const noexcept {
        std::size_t h = reinterpret_cast<std::uintptr_t>(k.context);
        for (int v : {static_cast<int>(k.dtype), k.head_dim, static_cast<int>(k.causal), k.seqlen_q_bucket,
                      k.seqlen_k_bucket, k.seqlen_q_align, k.seqlen_k_align, k.tile.block_m, k.tile.block_n,
                      k.tile.warps, k.tile.stages, static_cast<int>(k.tile.wgmma)})
            h = h * 1000003u ^ static_cast<std::size_t>(v);
        return h;
    }
};

struct LoadedAttention {
    AttentionKernelSpec spec;
    Kernel kernel;
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

const LoadedAttention& loaded_attention(const AttentionArgs& a, const TileConfig& tile) {
    static cache::KernelTable<ProblemKey, LoadedAttention, ProblemKeyHash> table;
    const ProblemKey key{current_context(),         a.dtype,
                         a.head_dim,                a.causal,
                         seqlen_bucket(a.seqlen_q), seqlen_bucket(a.seqlen_k),
                         tile_alignment(a.seqlen_q), tile_alignment(a.seqlen_k),
                         tile};
    return table.get(key, [&] {
        const DeviceInfo& device = current_device();
        if (!tile.empty() && !tile_runs_on(tile, device.cc()))
            throw InvalidArgument("tile", "a configuration this GPU runs (wgmma tiles need sm_90)", tile.to_string());
        LoadedAttention l;
        l.spec = attention_spec(
            a,
            tile.empty() ? choose_tile_config(device, {a.dtype, a.head_dim, a.causal, a.seqlen_q, a.seqlen_k}) : tile);
        l.kernel = attention_kernel(l.spec);
        return l;
    });
}

AttentionParams make_params(const AttentionArgs& a) {
    AttentionParams p{};
    p.q = a.q;
    p.k = a.k;
    p.v = a.v;
    p.o = a.o;
    p.lse = a.lse;
    p.q_batch_stride = a.q_strides.batch, p.q_head_stride = a.q_strides.head, p.q_row_stride = a.q_strides.row;
    p.k_batch_stride = a.k_strides.batch, p.k_head_stride = a.k_strides.head, p.k_row_stride = a.k_strides.row;
    p.v_batch_stride = a.v_strides.batch, p.v_head_stride = a.v_strides.head, p.v_row_stride = a.v_strides.row;
    p.o_batch_stride = a.o_strides.batch, p.o_head_stride = a.o_strides.head, p.o_row_stride = a.o_strides.row;
    p.batch = a.batch;
    p.heads_q = a.heads_q;
    p.heads_kv = a.heads_kv;
    p.group_size = a.heads_q / a.heads_kv;
    p.seqlen_q = a.seqlen_q;
    p.seqlen_k = a.seqlen_k;
    p.head_dim = a.head_dim;
    p.scale = a.scale ? *a.scale : 1.0f / std::sqrt(static_cast<float>(a.head_dim));
    p.scale_log2 = p.scale * 1.4426950408889634f;  // log2(e)
    p.causal_offset = a.seqlen_k - a.seqlen_q;
    return p;
}

bool empty_problem(const AttentionArgs& a) { return a.batch == 0 || a.heads_q == 0 || a.seqlen_q == 0; }

void check_tile(const TileConfig& tile, DType dtype, int head_dim) {
    if (!tile.empty() && !tile_is_legal(dtype, head_dim, tile))
        throw InvalidArgument("tile", "a configuration listed by tile_configs(dtype, head_dim)", tile.to_string());
}

const char* element_type_name(DType dtype) {
    switch (dtype) {
        case DType::f32: return "float";
        case DType::f16: return "fa_jit::half_t";
        case DType::bf16: return "fa_jit::bf16_t";
    }
    return "?";
}

}  // namespace

std::string attention_arch(std::string_view arch) {
    std::string parsed = parse_arch(arch);
    if (parsed.rfind("sm_", 0) == 0 && std::isdigit(static_cast<unsigned char>(parsed.back())) &&
        std::stoi(parsed.substr(3)) >= 90)
        parsed += "a";
    return parsed;
}

AttentionKernelSpec attention_spec(const AttentionArgs& a, const TileConfig& tile) {
    if (tile.block_m <= 0 || tile.block_n <= 0)
        throw InvalidArgument("tile", "a chosen configuration (e.g. from choose_tile_config())", tile.to_string());
    AttentionKernelSpec spec{a.dtype, a.head_dim, a.causal, tile};
    // Decided by what ProblemKey holds (tile_alignment), so that one table entry always means one kernel.
    spec.even_mn = a.dtype != DType::f32 && tile_alignment(a.seqlen_q) % tile.block_m == 0 &&
                   tile_alignment(a.seqlen_k) % tile.block_n == 0;
    return spec;
}

Kernel attention_kernel(const AttentionKernelSpec& spec) {
    check_tile(spec.tile, spec.dtype, spec.head_dim);
    const std::string expression = spec.name_expression();
    // Arch-specific (sm_90a on Hopper), matching attention_arch(): what warmup puts in the cache.
    return get_kernel(attention_compile_request(spec, ""), expression, /*arch_specific=*/true);
}

void attention(const AttentionArgs& args, CUstream stream, const TileConfig& tile) {
    validate(args);
    check_tile(tile, args.dtype, args.head_dim);
    if (empty_problem(args)) return;
    const LoadedAttention& l = loaded_attention(args, tile);
    const unsigned query_tiles = static_cast<unsigned>((args.seqlen_q + l.spec.tile.block_m - 1) / l.spec.tile.block_m);
    const AttentionParams params = make_params(args);
    launch(l.kernel,
           {{query_tiles, static_cast<unsigned>(args.heads_q), static_cast<unsigned>(args.batch)},
            {static_cast<unsigned>(l.spec.threads())},
            l.spec.shared_bytes(),
            stream},
           params);
}

void attention_reference(const AttentionArgs& args, CUstream stream) {
    validate(args);
    if (empty_problem(args)) return;
    constexpr unsigned kThreads = 128;  // kReferenceThreads in attention_reference.cu
    CompileRequest request;
    request.source = kernel_source("attention_reference.cu");
    const std::string expression = std::string("fa_jit::attention_reference<") + element_type_name(args.dtype) +
                                   (args.causal ? ", true>" : ", false>");
    request.name_expressions = {expression};
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
