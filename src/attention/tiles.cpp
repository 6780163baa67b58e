// Tiles over the registry: the legal space of every family, the built-in choice, and their spelling.
#include <fmt/format.h>

#include <cstdio>

#include "attention/family.hpp"

namespace fa_jit {
namespace {

// No family serves `problem` on `cc`: names the feature no family has for it (the argument that asks for it), else
// the head dim.
[[noreturn]] void throw_unserved(const ProblemClass& problem, int cc) {
    struct Feature {
        const char* argument;
        const char* expected;  // what the argument must be instead
        const char* given;
        bool (*used)(const ProblemClass&);
        void (*drop)(ProblemClass&);
    };
    static const Feature features[] = {
        {"window_left", "unset: no kernel family has this score modifier", "set",
         [](const ProblemClass& p) { return p.mods.window; }, [](ProblemClass& p) { p.mods.window = false; }},
        {"softcap", "0: no kernel family has this score modifier", "set",
         [](const ProblemClass& p) { return p.mods.softcap; }, [](ProblemClass& p) { p.mods.softcap = false; }},
        {"alibi_slopes", "null: no kernel family has this score modifier", "a pointer",
         [](const ProblemClass& p) { return p.mods.alibi; }, [](ProblemClass& p) { p.mods.alibi = false; }},
        {"cu_seqlens_q", "null: no kernel family reads packed sequences", "a pointer",
         [](const ProblemClass& p) { return p.varlen; }, [](ProblemClass& p) { p.varlen = false; }},
        {"block_table", "null: no kernel family reads a paged KV cache", "a pointer",
         [](const ProblemClass& p) { return p.paged; }, [](ProblemClass& p) { p.paged = false; }},
        {"seqused_k", "null: no kernel family reads per-sequence KV lengths", "a pointer",
         [](const ProblemClass& p) { return p.seqused_k; }, [](ProblemClass& p) { p.seqused_k = false; }},
    };
    for (const Feature& f : features) {
        if (!f.used(problem)) continue;
        ProblemClass without = problem;
        f.drop(without);
        if (family_serving(without, cc))
            throw InvalidArgument(f.argument,
                                  fmt::format("{} for this problem ({}, d {}) on sm_{}", f.expected,
                                              fa_jit::to_string(problem.dtype), problem.head_dim, cc),
                                  f.given);
    }
    throw InvalidArgument(
        "head_dim",
        fmt::format("a head dim some kernel family runs for {} on sm_{}", fa_jit::to_string(problem.dtype), cc),
        std::to_string(problem.head_dim));
}

}  // namespace

std::string TileConfig::to_string() const {
    std::string s = fmt::format("{}x{}w{}", block_m, block_n, warps);
    if (stages) s += fmt::format("s{}", stages);
    if (!variant.empty()) s += "-" + variant;
    return s;
}

std::optional<TileConfig> parse_tile_config(std::string_view text) {
    TileConfig t;
    const std::string s(text);
    const std::size_t dash = s.find('-');
    if (dash != std::string::npos) t.variant = s.substr(dash + 1);
    char tail = 0;
    const int n =
        std::sscanf(s.substr(0, dash).c_str(), "%dx%dw%ds%d%c", &t.block_m, &t.block_n, &t.warps, &t.stages, &tail);
    if (n != 3 && n != 4) return std::nullopt;
    if (n == 3) t.stages = 0;
    if (t.block_m <= 0 || t.block_n <= 0 || t.warps <= 0 || t.stages < 0) return std::nullopt;
    // sscanf skips spaces, takes signs and leading zeros and stops at trailing text: a tile prints back as itself.
    if (t.to_string() != s) return std::nullopt;
    if (!family_owning(t)) return std::nullopt;  // a spelling no family has (e.g. an unknown variant)
    return t;
}

std::vector<TileConfig> tile_configs(DType dtype, int head_dim) {
    std::vector<TileConfig> out;
    for (const auto& f : registered_families())
        if (f->accepts(dtype, head_dim))
            for (TileConfig& t : f->sweep_tiles(head_dim)) out.push_back(std::move(t));
    return out;
}

std::vector<TileConfig> tile_configs(const ProblemClass& problem, int cc) {
    std::vector<TileConfig> out;
    for (const auto& f : registered_families())
        if (f->serves(problem, cc))
            for (TileConfig& t : f->sweep_tiles(problem.head_dim)) out.push_back(std::move(t));
    return out;
}

bool tile_is_legal(DType dtype, int head_dim, const TileConfig& tile) {
    const auto f = family_owning(tile);
    return f && f->accepts(dtype, head_dim) && f->tile_is_legal(head_dim, tile);
}

bool tile_runs_on(const TileConfig& tile, int cc) {
    const auto f = family_owning(tile);
    return f && f->runs_on(cc);
}

TileConfig default_tile_config(int cc, const ProblemClass& problem) {
    std::vector<TileConfig> first_candidates;
    for (const auto& f : registered_families()) {
        if (!f->chosen_for(problem, cc)) continue;
        std::vector<TileConfig> candidates = f->preferred_tiles(cc, problem);
        for (const TileConfig& t : candidates) {
            const AttentionKernelSpec spec{problem.dtype, problem.head_dim, problem.causal, t};
            if (f->shared_bytes(spec) <= max_shared_bytes(cc)) return t;
        }
        if (first_candidates.empty()) first_candidates = std::move(candidates);
    }
    // Nothing fits the GPU's shared memory: the first family's smallest tile (the launch reports the limit).
    if (!first_candidates.empty()) return first_candidates.back();
    throw_unserved(problem, cc);
}

std::vector<std::string> kernel_families() {
    std::vector<std::string> names;
    for (const auto& f : registered_families()) names.emplace_back(f->name());
    return names;
}

std::string kernel_family_for(const ProblemClass& problem, int cc) {
    const auto f = family_chosen(problem, cc);
    if (!f) throw_unserved(problem, cc);
    return f->name();
}

bool kernel_family_has_even_variant(std::string_view family) {
    for (const auto& f : registered_families())
        if (f->name() == family) return f->has_even_variant();
    return false;
}

}  // namespace fa_jit
