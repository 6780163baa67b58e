// Family "f16-mma": fp16/bf16 with fp32 accumulation on mma.sync m16n8k16 (kernel_sources/attention_f16.cu), head
// dims that are multiples of 8 up to 256, sm_80 and newer. Tiles are spelled "128x64w4s2" (s: K/V pipeline depth).
#include <fmt/format.h>

#include "attention/families/f16_args.hpp"
#include "attention/family.hpp"
#include "attention_f16_layout.cuh"

namespace fa_jit::families {
namespace {

class F16MmaFamily final : public KernelFamily {
public:
    const char* name() const override { return "f16-mma"; }
    int priority() const override { return 20; }
    int score_mods() const override { return mods::kAll; }  // window, softcap, ALiBi
    bool serves_varlen() const override { return true; }
    bool serves_paged() const override { return true; }

    bool accepts(DType dtype, int head_dim) const override {
        return accepts_dtype(dtype) && head_dim % 8 == 0 && head_dim >= 8 && head_dim <= 256;
    }
    bool accepts_dtype(DType dtype) const override { return dtype == DType::f16 || dtype == DType::bf16; }
    bool runs_on(int cc) const override { return cc >= 80; }  // cp.async, ldmatrix, bf16 mma
    void check_args(const AttentionArgs& args) const override { check_f16_args(args); }

    bool owns(const TileConfig& t) const override { return t.variant.empty() && t.stages > 0; }
    bool tile_is_legal(int head_dim, const TileConfig& t) const override {
        return owns(t) && f16_layout::legal(t.block_m, t.block_n, t.warps, t.stages, head_dim);
    }
    // 4 or 8 warps (fewer cannot hide the mma and cp.async latency), 1 or 2 16-row m-tiles per warp, 32..128 keys
    // per step, single K/V buffers or a 2- or 3-deep K/V ring.
    std::vector<TileConfig> sweep_tiles(int head_dim) const override {
        std::vector<TileConfig> out;
        for (int block_m : {64, 128})
            for (int block_n : {32, 64, 128})
                for (int warps : {4, 8})
                    for (int stages : {1, 2, 3})
                        if (f16_layout::legal(block_m, block_n, warps, stages, head_dim))
                            out.push_back({block_m, block_n, warps, stages});
        return out;
    }
    // bf16 TFLOP/s on an H100 at 16k tokens (bench/NOTES.md). mma.sync on Hopper runs short of shared-memory
    // bandwidth unless each K/V fragment feeds two 16-row m-tiles: 128 rows over 4 warps wins wherever the
    // registers allow it (Q is then re-read from shared memory).
    std::vector<TileConfig> preferred_tiles(int, const ProblemClass& p) const override {
        if (p.head_dim <= 64)
            // 128 x 128 over 4 warps (80 KB at d 64): the fastest of the 27 tiles at every length swept (N 512..16k,
            // causal or not): 286-340 TFLOP/s full, 191-322 causal, 2-7% ahead of 128 x 64 (the fallback).
            return {{128, 128, 4, 2}, {128, 64, 4, 2}};
        if (p.head_dim <= 128)
            // 128 x 64 over 4 warps (96 KB at d 128): 287-378 TFLOP/s, 1.04-1.20x FA2; 64 x 64 was 10-15% slower.
            return {{128, 64, 4, 2}, {64, 64, 4, 2}};
        // d > 128: the O accumulator alone takes 128 registers at d 256, so one m-tile per warp. 64 x 64 over 4
        // warps with single K/V buffers (96 KB at d 256: two CTAs per SM, each hiding the other's prologue and
        // epilogue): 275-323 TFLOP/s, 3-12% ahead of 128 x 64 over 8 warps with a 2-deep ring (192 KB).
        return {{64, 64, 4, 1}, {64, 32, 4, 1}};
    }
    bool has_even_variant() const override { return true; }

    std::string source_name() const override { return "attention_f16.cu"; }
    std::vector<std::string> kernels(const AttentionKernelSpec& s) const override {
        // <T, B_r, B_c, d, warps, stages, causal, even_mn[, mods]>
        return {fmt::format("fa_jit::attention_fwd_f16<{}, {}, {}, {}, {}, {}, {}, {}{}>", kernel_element_type(s.dtype),
                            s.tile.block_m, s.tile.block_n, s.head_dim, s.tile.warps, s.tile.stages, s.causal,
                            s.even_mn, mods_argument(s))};
    }
    std::size_t shared_bytes(const AttentionKernelSpec& s) const override {
        return f16_layout::smem_bytes(s.tile.block_m, s.tile.block_n, s.head_dim, s.tile.stages);
    }
};

const bool registered = register_family(std::make_shared<F16MmaFamily>());

}  // namespace
}  // namespace fa_jit::families
