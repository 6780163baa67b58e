// AttentionKernelSpec: one specialization of a family's kernel, and the requests that compile it.
#include <cctype>

#include "attention/family.hpp"
#include "attention/packed_loop.hpp"
#include "attention/seqlen_bucket.hpp"
#include "attention/tile_alignment.hpp"

namespace fa_jit {
namespace {

std::shared_ptr<const KernelFamily> owner(const TileConfig& tile) {
    auto f = family_owning(tile);
    if (!f) throw InvalidArgument("tile", "a tile some kernel family owns (see tile_configs())", tile.to_string());
    return f;
}

}  // namespace

std::string AttentionKernelSpec::family() const {
    return owner(tile)->name();
}
std::string AttentionKernelSpec::source_name() const {
    return owner(tile)->source_name();
}
std::string AttentionKernelSpec::name_expression() const {
    return owner(tile)->kernels(*this).front();
}
int AttentionKernelSpec::threads() const {
    return owner(tile)->threads(*this);
}
std::size_t AttentionKernelSpec::shared_bytes() const {
    return owner(tile)->shared_bytes(*this);
}

int arch_cc(std::string_view arch) {
    const std::string parsed = parse_arch(arch);  // "sm_90a", "compute_80"
    int cc = 0;
    for (char c : parsed.substr(parsed.find('_') + 1))
        if (std::isdigit(static_cast<unsigned char>(c))) cc = cc * 10 + (c - '0');
    return cc;
}

std::string attention_arch(std::string_view arch) {
    std::string parsed = parse_arch(arch);
    if (parsed.rfind("sm_", 0) == 0 && std::isdigit(static_cast<unsigned char>(parsed.back())) && arch_cc(parsed) >= 90)
        parsed += "a";
    return parsed;
}

AttentionKernelSpec attention_spec(const AttentionArgs& a, const TileConfig& tile) {
    if (tile.block_m <= 0 || tile.block_n <= 0)
        throw InvalidArgument("tile", "a chosen configuration (e.g. from choose_tile_config())", tile.to_string());
    AttentionKernelSpec spec{a.dtype, a.head_dim, a.causal, tile};
    spec.seqused_k = a.seqused_k != nullptr;
    spec.mods = ScoreMods::of(a);
    spec.varlen = a.cu_seqlens_q != nullptr;
    spec.paged = a.block_table != nullptr;
    // Decided from tile_alignment(), which the kernel table keys on, so that one table entry means one kernel.
    // Packed sequences and paged caches have lengths of their own: bounds-checked.
    spec.even_mn = owner(tile)->has_even_variant() && !spec.varlen && !spec.paged &&
                   tile_alignment(a.seqlen_q) % tile.block_m == 0 && tile_alignment(a.seqlen_k) % tile.block_n == 0;
    // One per length bucket, as the kernel table keys; packed sequences only where their tile table fits.
    spec.tile_loop = owner(tile)->tile_loop(spec, a.seqlen_k) && (!spec.varlen || packed_loop_fits(a));
    // The kernel table keys page_size and the length bucket.
    spec.table_map = spec.paged && owner(tile)->table_map(spec, a.page_size, a.seqlen_k);
    spec.settled_max = owner(tile)->settled_max(spec, keys_per_row(a));
    return spec;
}

CompileRequest attention_compile_request(const AttentionKernelSpec& spec, const std::string& arch) {
    const auto family = owner(spec.tile);
    CompileRequest request;
    request.source = kernel_source(family->source_name());
    request.name_expressions = family->kernels(spec);
    request.arch = arch;
    request.family = family->name();
    return request;
}

Kernel attention_kernel(const AttentionKernelSpec& spec) {
    const auto family = owner(spec.tile);
    if (!family->accepts(spec.dtype, spec.head_dim) || !family->tile_is_legal(spec.head_dim, spec.tile))
        throw InvalidArgument("tile", "a configuration listed by tile_configs(dtype, head_dim)", spec.tile.to_string());
    const CompileRequest request = attention_compile_request(spec, "");
    // Arch-specific (sm_90a on Hopper), matching attention_arch(): what warmup puts in the cache.
    return get_kernel(request, request.name_expressions.front(), /*arch_specific=*/true);
}

std::vector<AttentionKernelSpec> warmup_specs(const ProblemClass& problem, int cc, bool all_tiles) {
    const TileConfig chosen = default_tile_config(cc, problem);
    std::vector<AttentionKernelSpec> specs;
    for (const TileConfig& tile : all_tiles ? tile_configs(problem, cc) : std::vector<TileConfig>{chosen}) {
        // The bounds-checked kernel, and the one for lengths that are multiples of the tile where there is one.
        for (bool even : {false, true}) {
            if (even && (!owner(tile)->has_even_variant() || problem.varlen || problem.paged)) continue;
            AttentionKernelSpec spec{problem.dtype,     problem.head_dim, problem.causal, tile,         even,
                                     problem.seqused_k, problem.mods,     problem.varlen, problem.paged};
            spec.tile_loop = owner(tile)->tile_loop(spec, problem.seqlen_k);
            spec.settled_max = owner(tile)->settled_max(spec, problem.seqlen_k);
            specs.push_back(spec);
            // A sliding window's rows may see fewer keys than the bucket's (keys_per_row): the kernel for those too.
            if (spec.settled_max && spec.mods.window) {
                spec.settled_max = false;
                specs.push_back(spec);
                spec.settled_max = true;
            }
            // Packed sequences loop only where their tile table fits (packed_loop_fits): the kernel for more too.
            if (spec.varlen && spec.tile_loop) {
                spec.tile_loop = false;
                specs.push_back(spec);
                spec.tile_loop = true;
            }
            // A paged cache: the kernel for pages a whole key tile long too, where the family has a variant for them.
            if (problem.paged && owner(tile)->table_map(spec, tile.block_n, problem.seqlen_k)) {
                spec.table_map = true;
                specs.push_back(spec);
            }
        }
    }
    return specs;
}

}  // namespace fa_jit
