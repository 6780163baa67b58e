// AttentionKernelSpec: the host-side mirror of a kernel's template arguments.
#include "attention_fp32_layout.cuh"
#include "fa_jit/attention.hpp"

#include <fmt/format.h>

namespace fa_jit {

std::string TileConfig::to_string() const { return fmt::format("{}x{}w{}", block_m, block_n, warps); }

std::string AttentionKernelSpec::source_name() const { return "attention_fp32.cu"; }

std::string AttentionKernelSpec::name_expression() const {
    // <B_r, B_c, d, warps, causal, math, min blocks per SM>: math 1 = 3xTF32 on tensor cores (fp32 accuracy);
    // a register bound of one block per SM (a higher one makes ptxas cap registers and spill).
    return fmt::format("fa_jit::attention_fwd_fp32<{}, {}, {}, {}, {}, 1, 1>", tile.block_m, tile.block_n, head_dim,
                       tile.warps, causal ? "true" : "false");
}

int AttentionKernelSpec::threads() const { return tile.warps * 32; }

std::size_t AttentionKernelSpec::shared_bytes() const {
    return fp32_layout::smem_bytes(tile.block_m, tile.block_n, head_dim);
}

CompileRequest attention_compile_request(const AttentionKernelSpec& spec, const std::string& arch) {
    CompileRequest request;
    request.source = kernel_source(spec.source_name());
    request.name_expressions = {spec.name_expression()};
    request.arch = arch;
    return request;
}

}  // namespace fa_jit
