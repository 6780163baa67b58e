// Which kernels warmup compiles: archs x dtypes x head dims x causal x (default config | every config).
#include <fmt/format.h>

#include <algorithm>

#include "commands.hpp"
#include "common/text.hpp"
#include "fa_jit/tuning.hpp"
#include "warmup.hpp"

namespace fa_jit::tools {
namespace {

// Rejects archs this NVRTC cannot compile for, before any work; skipped when NVRTC is missing (every item then
// fails with NVRTC's own message).
void check_supported(const std::string& arch) {
    std::vector<int> supported;
    try {
        supported = nvrtc_supported_archs();
    } catch (const CompileError&) {
        return;
    }
    if (supported.empty() || std::find(supported.begin(), supported.end(), arch_cc(arch)) != supported.end()) return;
    std::string list;
    for (int a : supported) list += fmt::format("{}sm_{}", list.empty() ? "" : " ", a);
    throw UsageError(fmt::format("--arch {}: NVRTC {}.{} cannot compile for it (it supports: {})", arch,
                                 nvrtc_version() / 1000, nvrtc_version() % 1000 / 10, list));
}

std::vector<DType> parse_dtypes(const std::string& text) {
    std::vector<DType> out;
    for (const std::string& name : split_list(text)) {
        try {
            const DType d = parse_dtype(name);
            if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
        } catch (const InvalidArgument&) {
            throw UsageError(fmt::format("--dtype '{}': expected fp32, fp16 or bf16", name));
        }
    }
    if (out.empty()) throw UsageError("--dtype: expected at least one of fp32, fp16, bf16");
    return out;
}

std::vector<int> parse_head_dims(const std::string& text) {
    std::vector<int> out;
    for (const std::string& item : split_list(text)) {
        std::size_t used = 0;
        int d = 0;
        try {
            d = std::stoi(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != item.size() || d <= 0)
            throw UsageError(fmt::format("--head-dim '{}': expected positive integers such as 64,128", item));
        if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
    }
    if (out.empty()) throw UsageError("--head-dim: expected at least one head dimension");
    return out;
}

std::vector<bool> parse_causal(const std::string& text) {
    if (text == "both") return {false, true};
    if (text == "yes") return {true};
    if (text == "no") return {false};
    throw UsageError(fmt::format("--causal '{}': expected both, yes or no", text));
}

}  // namespace

std::vector<std::string> warmup_archs(const std::string& archs_option) {
    std::vector<std::string> archs;
    const auto add = [&](std::string a) {
        if (std::find(archs.begin(), archs.end(), a) == archs.end()) archs.push_back(std::move(a));
    };
    if (archs_option.empty()) {
        const int n = device_count();
        if (n == 0)
            throw UsageError(fmt::format(
                "no CUDA device found ({}), so there is no arch to compile for: name them with --arch, e.g. "
                "--arch sm_80,sm_90a",
                driver_version() ? "the driver reports 0 devices" : "no CUDA driver"));
        for (int i = 0; i < n; ++i) {
            const DeviceInfo& d = use_device(i);
            add(target_arch(d.cc_major, d.cc_minor, /*arch_specific=*/true));
        }
        return archs;
    }
    for (const std::string& given : split_list(archs_option)) {
        std::string arch;
        try {
            arch = parse_arch(given);
        } catch (const InvalidArgument& e) {
            throw UsageError(
                fmt::format("--arch '{}': invalid arch; expected e.g. sm_80, sm_90a or compute_90", given));
        }
        check_supported(arch);
        add(attention_arch(arch));  // what attention() looks up on such a GPU (sm_90 -> sm_90a)
    }
    if (archs.empty()) throw UsageError("--arch: expected at least one arch, e.g. sm_80");
    return archs;
}

// Whether some family serves `problem` without packed sequences and pages.
bool family_for_plain(ProblemClass problem, int cc) {
    problem.varlen = problem.paged = false;
    try {
        kernel_family_for(problem, cc);
        return true;
    } catch (const InvalidArgument&) {
        return false;
    }
}

std::vector<WarmupItem> plan_warmup(const WarmupOptions& options, const std::vector<std::string>& archs) {
    std::vector<int> seqlens;
    try {
        seqlens = parse_lengths(options.seqlens);
    } catch (const std::invalid_argument& e) {
        throw UsageError(fmt::format("--seqlen '{}': expected positive lengths, e.g. 512,2k,16k", e.what()));
    }
    if (seqlens.empty()) throw UsageError("--seqlen: expected at least one length, e.g. 4096");
    const std::vector<DType> dtypes = parse_dtypes(options.dtypes);
    const std::vector<int> head_dims = parse_head_dims(options.head_dims);
    const std::vector<bool> causals = parse_causal(options.causal);
    // Each set: score modifiers, "varlen" for packed sequences, "paged" for a paged KV cache (with per-sequence
    // lengths, as a serving engine's cache has them).
    struct FeatureSet {
        ScoreMods mods;
        bool varlen = false, paged = false;
    };
    std::vector<FeatureSet> feature_sets;
    for (const std::string& set : options.features) {
        std::string mods;
        FeatureSet f;
        for (const std::string& name : split_list(set)) {
            if (name == "varlen")
                f.varlen = true;
            else if (name == "paged")
                f.paged = true;
            else
                mods += (mods.empty() ? "" : ",") + name;
        }
        try {
            f.mods = ScoreMods::parse(mods, "--features");
        } catch (const InvalidArgument&) {
            throw UsageError(fmt::format(
                "--features '{}': expected window, softcap, alibi, varlen, paged (comma-separated) or none", set));
        }
        feature_sets.push_back(f);
    }
    if (feature_sets.empty()) throw UsageError("--features: expected at least one set, e.g. none or window,softcap");

    std::vector<WarmupItem> items;
    const auto add = [&](WarmupItem item) {
        for (const auto& i : items)
            if (i.arch == item.arch && i.spec == item.spec) return;
        items.push_back(std::move(item));
    };
    for (const std::string& arch : archs)
        for (DType dtype : dtypes)
            for (int d : head_dims) {
                if (tile_configs(dtype, d).empty())
                    throw UsageError(
                        fmt::format("no attention kernel for --dtype {} with --head-dim {}{}", fa_jit::to_string(dtype),
                                    d, dtype == DType::f32 ? "" : " (fp16/bf16 need a multiple of 8 up to 256)"));
                for (bool causal : causals)
                    // Prefill at each --seqlen, and decode against a cache of that many keys with 16, 32, 64 and 128
                    // packed query rows per KV head (one token; 4 tokens x groups of 8, 16 and 32): the decode
                    // families' tiles differ by those rows only.
                    for (const FeatureSet& features : feature_sets)
                        for (int n : seqlens)
                            for (ProblemClass problem :
                                 {ProblemClass{dtype, d, causal, n, n}, ProblemClass{dtype, d, causal, 1, n, 1},
                                  ProblemClass{dtype, d, causal, 4, n, 8}, ProblemClass{dtype, d, causal, 4, n, 16},
                                  ProblemClass{dtype, d, causal, 4, n, 32}}) {
                                problem.mods = features.mods, problem.varlen = features.varlen;
                                problem.paged = problem.seqused_k = features.paged;
                                const int cc = arch_cc(arch);
                                std::vector<AttentionKernelSpec> specs;
                                TileConfig chosen;
                                try {
                                    chosen = default_tile_config(cc, problem);
                                    specs = warmup_specs(problem, cc, options.all_configs);
                                } catch (const InvalidArgument& e) {
                                    // Packed sequences or pages where no family reads them: nothing to warm.
                                    if ((problem.varlen || problem.paged) && family_for_plain(problem, cc)) continue;
                                    throw UsageError(fmt::format("--arch {}: {}", arch, e.what()));
                                }
                                for (AttentionKernelSpec& spec : specs) {
                                    const bool is_default = spec.tile == chosen;
                                    add({arch, std::move(spec), is_default});
                                }
                            }
            }
    return items;
}

std::string describe(const WarmupItem& item) {
    return fmt::format("{} {} d{} {} {}{}{}{}{}{}{}", item.arch, fa_jit::to_string(item.spec.dtype), item.spec.head_dim,
                       item.spec.causal ? "causal" : "full", item.spec.tile.to_string(),
                       item.spec.even_mn ? " even" : "", item.spec.mods.any() ? " " + item.spec.mods.to_string() : "",
                       item.spec.varlen ? " varlen" : "", item.spec.paged ? " paged" : "",
                       item.spec.table_map ? " table-map" : "", item.spec.settled_max ? " settled-max" : "");
}

const char* to_string(WarmupStatus status) {
    switch (status) {
        case WarmupStatus::compiled:
            return "compiled";
        case WarmupStatus::cached:
            return "cached";
        case WarmupStatus::failed:
            return "failed";
    }
    return "?";
}

}  // namespace fa_jit::tools
