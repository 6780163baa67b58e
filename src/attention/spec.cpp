// AttentionKernelSpec: the host-side mirror of a kernel's template arguments.
#include "attention/fp32_traits.hpp"
#include "fa_jit/attention.hpp"

#include <fmt/format.h>

namespace fa_jit {

std::string TileConfig::to_string() const { return fmt::format("{}x{}w{}", block_m, block_n, warps); }

std::string AttentionKernelSpec::source_name() const { return "attention_fp32.cu"; }

std::string AttentionKernelSpec::name_expression() const {
    return fmt::format("fa_jit::attention_fwd_fp32<{}, {}, {}, {}, {}, {}>", tile.block_m, tile.block_n, head_dim,
                       tile.warps, causal ? "true" : "false", static_cast<int>(fp32_kernels::kMath3xTF32));
}

int AttentionKernelSpec::threads() const { return tile.warps * 32; }

std::size_t AttentionKernelSpec::shared_bytes() const {
    return fp32_kernels::smem_bytes(tile.block_m, tile.block_n, head_dim);
}

CompileRequest attention_compile_request(const AttentionKernelSpec& spec, const std::string& arch) {
    CompileRequest request;
    request.source = kernel_source(spec.source_name());
    request.name_expressions = {spec.name_expression()};
    request.arch = arch;
    return request;
}

}  // namespace fa_jit
