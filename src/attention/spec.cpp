// AttentionKernelSpec: the host-side mirror of a kernel's template arguments.
#include "attention_f16_layout.cuh"
#include "attention_fp32_layout.cuh"
#include "attention_wgmma_layout.cuh"
#include "fa_jit/attention.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace fa_jit {
namespace {
constexpr std::string_view kWgmmaSuffix = "-wgmma";
}  // namespace

std::string TileConfig::to_string() const {
    if (!stages) return fmt::format("{}x{}w{}", block_m, block_n, warps);
    return fmt::format("{}x{}w{}s{}{}", block_m, block_n, warps, stages, wgmma ? kWgmmaSuffix : "");
}

std::optional<TileConfig> parse_tile_config(std::string_view text) {
    TileConfig t;
    if (text.size() > kWgmmaSuffix.size() && text.substr(text.size() - kWgmmaSuffix.size()) == kWgmmaSuffix) {
        text.remove_suffix(kWgmmaSuffix.size());
        t.wgmma = true;
    }
    char tail = 0;
    const std::string s(text);
    const int n = std::sscanf(s.c_str(), "%dx%dw%ds%d%c", &t.block_m, &t.block_n, &t.warps, &t.stages, &tail);
    if (n == 3 && !t.wgmma) {
        // sscanf stops at the first mismatch: "64x64w4" and "64x64w4junk" both give 3. Reject anything after w<n>.
        if (s != fmt::format("{}x{}w{}", t.block_m, t.block_n, t.warps)) return std::nullopt;
        t.stages = 0;
    } else if (n != 4 || s + (t.wgmma ? std::string(kWgmmaSuffix) : "") != t.to_string()) {
        return std::nullopt;
    }
    if (t.block_m <= 0 || t.block_n <= 0 || t.warps <= 0 || t.stages < 0) return std::nullopt;
    return t;
}

bool tile_is_legal(DType dtype, int head_dim, const TileConfig& t) {
    if (dtype == DType::f32)
        return t.stages == 0 && !t.wgmma && fp32_layout::legal(t.block_m, t.block_n, t.warps, head_dim);
    if (t.wgmma) return wgmma_layout::legal(t.block_m, t.block_n, t.warps, t.stages, head_dim);
    return f16_layout::legal(t.block_m, t.block_n, t.warps, t.stages, head_dim);
}

bool tile_runs_on(const TileConfig& tile, int cc) { return !tile.wgmma || cc == 90; }

std::string AttentionKernelSpec::source_name() const {
    if (dtype == DType::f32) return "attention_fp32.cu";
    return tile.wgmma ? "attention_f16_wgmma.cu" : "attention_f16.cu";
}

std::string AttentionKernelSpec::name_expression() const {
    if (dtype == DType::f32)
        // <B_r, B_c, d, warps, causal, math, min blocks per SM>: math 1 = 3xTF32 on tensor cores (fp32 accuracy);
        // a register bound of one block per SM (a higher one makes ptxas cap registers and spill).
        return fmt::format("fa_jit::attention_fwd_fp32<{}, {}, {}, {}, {}, 1, 1>", tile.block_m, tile.block_n,
                           head_dim, tile.warps, causal ? "true" : "false");
    const char* type = dtype == DType::f16 ? "half_t" : "bf16_t";
    if (tile.wgmma)  // <T, B_r, B_c, d, stages, causal, even_mn>: one warpgroup per 64 rows
        return fmt::format("fa_jit::attention_fwd_f16_wgmma<fa_jit::{}, {}, {}, {}, {}, {}, {}>", type, tile.block_m,
                           tile.block_n, head_dim, tile.stages, causal ? "true" : "false", even_mn ? "true" : "false");
    // <T, B_r, B_c, d, warps, stages, causal, even_mn>
    return fmt::format("fa_jit::attention_fwd_f16<fa_jit::{}, {}, {}, {}, {}, {}, {}, {}>",
                       type, tile.block_m, tile.block_n, head_dim, tile.warps,
                       tile.stages, causal ? "true" : "false", even_mn ? "true" : "false");
}

int AttentionKernelSpec::threads() const { return tile.warps * 32; }

std::size_t AttentionKernelSpec::shared_bytes() const {
    if (dtype == DType::f32) return fp32_layout::smem_bytes(tile.block_m, tile.block_n, head_dim);
    if (tile.wgmma) return wgmma_layout::smem_bytes(tile.block_m, tile.block_n, head_dim, tile.stages);
    return f16_layout::smem_bytes(tile.block_m, tile.block_n, head_dim, tile.stages);
}

CompileRequest attention_compile_request(const AttentionKernelSpec& spec, const std::string& arch) {
    CompileRequest request;
    request.source = kernel_source(spec.source_name());
    request.name_expressions = {spec.name_expression()};
    request.arch = arch;
    return request;
}

}  // namespace fa_jit
