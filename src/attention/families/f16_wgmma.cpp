// Family "f16-wgmma": fp16/bf16 on Hopper warpgroup MMA reading Q, K and V from shared memory
// (kernel_sources/attention_f16_wgmma.cu), head dims 64, 128, 192 and 256, sm_90 only (compiled for sm_90a).
// Tiles are spelled "128x64w8s2-wgmma": one warpgroup per 64 query rows, so warps = block_m / 16.
#include <fmt/format.h>

#include "attention/families/f16_args.hpp"
#include "attention/family.hpp"
#include "attention_wgmma_layout.cuh"

namespace fa_jit::families {
namespace {

class F16WgmmaFamily final : public KernelFamily {
public:
    const char* name() const override { return "f16-wgmma"; }
    int priority() const override { return 10; }  // ahead of f16-mma wherever it serves: 1.2-1.9x its speed
    int score_mods() const override { return mods::kAll; }  // window, softcap, ALiBi
    bool serves_varlen() const override { return true; }
    bool serves_paged() const override { return true; }

    bool accepts(DType dtype, int head_dim) const override {
        return accepts_dtype(dtype) && head_dim % 64 == 0 && head_dim >= 64 && head_dim <= 256;
    }
    bool accepts_dtype(DType dtype) const override { return dtype == DType::f16 || dtype == DType::bf16; }
    bool runs_on(int cc) const override { return cc == 90; }  // wgmma exists on sm_90a only
    void check_args(const AttentionArgs& args) const override { check_f16_args(args); }

    bool owns(const TileConfig& t) const override { return t.variant == "wgmma" && t.stages > 0; }
    bool tile_is_legal(int head_dim, const TileConfig& t) const override {
        return owns(t) && wgmma_layout::legal(t.block_m, t.block_n, t.warps, t.stages, head_dim);
    }
    // One or two warpgroups, 64 or 128 keys per step, a 2- or 3-deep K/V ring.
    std::vector<TileConfig> sweep_tiles(int head_dim) const override {
        std::vector<TileConfig> out;
        for (int block_m : {64, 128})
            for (int block_n : {64, 128})
                for (int stages : {2, 3})
                    if (wgmma_layout::legal(block_m, block_n, block_m / 16, stages, head_dim))
                        out.push_back({block_m, block_n, block_m / 16, stages, "wgmma"});
        return out;
    }
    // bf16 TFLOP/s, FlashAttention protocol (N 512..16k), H100 (bench/NOTES.md, "wgmma kernel").
    std::vector<TileConfig> preferred_tiles(int, const ProblemClass& p) const override {
        // d 64: one warpgroup on 64 x 64 (41 KB, 137-152 registers: several CTAs per SM): 327-409 full, 239-394
        // causal; 64 x 128 309-404 / 200-385; two warpgroups on 128 x 128 259-342 / 170-336.
        if (p.head_dim <= 64) return {{64, 64, 4, 2, "wgmma"}, {64, 128, 4, 2, "wgmma"}};
        // d 128: two warpgroups on 128 x 128 (161 KB): 345-488 full, 226-492 causal; 128 x 64 309-415 / 220-442;
        // 64 x 64 over one warpgroup 342-461 / 259-474 (ahead only on short causal rows).
        if (p.head_dim <= 128) return {{128, 128, 8, 2, "wgmma"}, {128, 64, 8, 2, "wgmma"}};
        // d 192 / 256: two warpgroups on 128 x 64 (193 KB at d 256): 379-562 full, 253-548 causal; 64 x 64 over one
        // warpgroup 299-398 / 223-398.
        return {{128, 64, 8, 2, "wgmma"}, {64, 64, 4, 2, "wgmma"}};
    }
    bool has_even_variant() const override { return true; }

    std::string source_name() const override { return "attention_f16_wgmma.cu"; }
    std::vector<std::string> kernels(const AttentionKernelSpec& s) const override {
        // <T, B_r, B_c, d, stages, causal, even_mn[, mods]>: the warp count follows from B_r.
        return {fmt::format("fa_jit::attention_fwd_f16_wgmma<{}, {}, {}, {}, {}, {}, {}{}>",
                            kernel_element_type(s.dtype), s.tile.block_m, s.tile.block_n, s.head_dim, s.tile.stages,
                            s.causal, s.even_mn, mods_argument(s))};
    }
    std::size_t shared_bytes(const AttentionKernelSpec& s) const override {
        return wgmma_layout::smem_bytes(s.tile.block_m, s.tile.block_n, s.head_dim, s.tile.stages);
    }
};

const bool registered = register_family(std::make_shared<F16WgmmaFamily>());

}  // namespace
}  // namespace fa_jit::families
