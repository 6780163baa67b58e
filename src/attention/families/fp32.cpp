// Family "fp32": fp32 in and out, 3xTF32 tensor-core mma.sync (kernel_sources/attention_fp32.cu), any head dim
// 1..256, sm_80 and newer, per-sequence KV lengths included. Tiles are spelled "64x64w4" (no pipeline stages).
#include <fmt/format.h>

#include "attention/family.hpp"
#include "attention_fp32_layout.cuh"

namespace fa_jit::families {
namespace {

class Fp32Family final : public KernelFamily {
public:
    const char* name() const override { return "fp32"; }
    int priority() const override { return 30; }
    int score_mods() const override { return mods::kAll; }  // window, softcap, ALiBi
    bool serves_varlen() const override { return true; }
    bool serves_paged() const override { return true; }
    // Per-sequence KV lengths too (fp32 has no split-KV family: decode runs here, one block per query tile).
    bool serves_seqused_k() const override { return true; }

    bool accepts(DType dtype, int head_dim) const override {
        return dtype == DType::f32 && head_dim >= 1 && head_dim <= 256;
    }
    bool accepts_dtype(DType dtype) const override { return dtype == DType::f32; }
    bool runs_on(int cc) const override { return cc >= 80; }  // cp.async, TF32 mma
    void check_args(const AttentionArgs&) const override {}  // any element-aligned pointer and stride

    bool owns(const TileConfig& t) const override { return t.variant.empty() && t.stages == 0; }
    bool tile_is_legal(int head_dim, const TileConfig& t) const override {
        return owns(t) && fp32_layout::legal(t.block_m, t.block_n, t.warps, head_dim);
    }
    std::vector<TileConfig> sweep_tiles(int head_dim) const override {
        std::vector<TileConfig> out;
        for (int block_m : {16, 32, 64, 128})
            for (int block_n : {16, 32, 64, 128})
                for (int warps : {1, 2, 4, 8})
                    if (fp32_layout::legal(block_m, block_n, warps, head_dim)) out.push_back({block_m, block_n, warps});
        return out;
    }
    // TFLOP/s of the 3xTF32 kernel measured on an H200 at 16k tokens (bench/NOTES.md).
    std::vector<TileConfig> preferred_tiles(int, const ProblemClass& p) const override {
        if (p.head_dim <= 64)
            // 128 query rows x 64 keys: 77 KB, 230 registers, 61 TFLOP/s. Causal prefers 64-row tiles (53 TFLOP/s):
            // the diagonal tile wastes half its work, and smaller tiles waste less.
            return p.causal ? std::vector<TileConfig>{{64, 64, 4}, {64, 32, 4}}
                            : std::vector<TileConfig>{{128, 64, 4}, {64, 64, 4}, {64, 32, 4}};
        if (p.head_dim <= 128)
            // Non-causal: 128 x 32 over 4 warps (107 KB, 254 registers, 60 TFLOP/s). Causal: 8 warps on 128 x 64
            // (141 KB, 196 registers, 53 TFLOP/s); <128, 32, 128, 4, causal> spills.
            return p.causal ? std::vector<TileConfig>{{128, 64, 8}, {64, 64, 4}, {64, 32, 4}}
                            : std::vector<TileConfig>{{128, 32, 4}, {64, 64, 4}, {64, 32, 4}};
        // d > 128: 8 warps on 128 x 32 needs 203 KB (sm_90: 57 TFLOP/s); 64 x 32 over 4 warps (135 KB) elsewhere.
        return {{128, 32, 8}, {64, 32, 4}, {32, 32, 2}, {16, 16, 1}};
    }
    bool has_even_variant() const override { return false; }

    std::string source_name() const override { return "attention_fp32.cu"; }
    std::vector<std::string> kernels(const AttentionKernelSpec& s) const override {
        // <B_r, B_c, d, warps, causal, math, min blocks per SM[, seqused_k[, mods[, varlen[, paged]]]]>: math 1 =
        // 3xTF32 on tensor cores (fp32 accuracy); a register bound of one block per SM (a higher one makes ptxas cap
        // registers and spill).
        const std::string features = s.mods.any() || s.varlen || s.paged
                                         ? fmt::format(", {}{}", s.seqused_k, mods_argument(s))
                                         : (s.seqused_k ? ", true" : "");
        return {fmt::format("fa_jit::attention_fwd_fp32<{}, {}, {}, {}, {}, 1, 1{}>", s.tile.block_m, s.tile.block_n,
                            s.head_dim, s.tile.warps, s.causal, features)};
    }
    std::size_t shared_bytes(const AttentionKernelSpec& s) const override {
        return fp32_layout::smem_bytes(s.tile.block_m, s.tile.block_n, s.head_dim);
    }
};

const bool registered = register_family(std::make_shared<Fp32Family>());

}  // namespace
}  // namespace fa_jit::families
