// Family "decode-ws": split-KV decode on the warp-specialized Hopper kernel (kernel_sources/attention_f16_ws.cu with
// kSplit), fp16 and bf16, head dims 64, 128, 192 and 256, sm_90 only (compiled for sm_90a). It takes the decode
// problems with a full 128-row tile of packed rows per KV head (MQA or large GQA groups with several query tokens:
// 32 query heads x 4 tokens), which are compute-bound at 128 FLOP per K/V byte: a TMA producer and two ping-pong
// consumer warpgroups do more per SM than decode-wgmma's single schedule. seqused_k, score modifiers, packed
// sequences and a paged KV cache (f16-ws's maps and page lookups) included. Tiles are spelled "128x128w12s3-ws-split",
// as f16-ws's.
#include <fmt/format.h>

#include <vector>

#include "attention/families/split_kv.hpp"
#include "attention/families/ws_maps.hpp"
#include "attention/families/ws_tiles.hpp"

namespace fa_jit::families {
namespace {

// Packed rows per KV head from which the 128-row tile is taken: from there its second warpgroup holds more than half of
// its rows. Measured only at 128 rows (bench/NOTES.md, "decode-ws"); 65-127 rows against decode-wgmma are not.
constexpr int kMinRows = 97;

class DecodeWsFamily final : public SplitKvFamily {
public:
    const char* name() const override { return "decode-ws"; }
    int priority() const override { return 3; }  // ahead of decode-wgmma, which takes what this one does not serve

    bool accepts(DType dtype, int head_dim) const override {
        return accepts_dtype(dtype) && head_dim % 64 == 0 && head_dim >= 64 && head_dim <= 256;
    }
    bool runs_on(int cc) const override { return cc == 90; }
    // TMA maps cannot repeat an input along a dimension (a zero stride).
    bool serves(const ProblemClass& p, int cc) const override {
        return SplitKvFamily::serves(p, cc) && !p.repeated_input && packed_rows(p.seqlen_q, p.group_size) >= kMinRows;
    }

    bool owns(const TileConfig& t) const override { return t.variant == "ws-split"; }
    bool tile_is_legal(int head_dim, const TileConfig& t) const override {
        return owns(t) && t.block_m == 128 && ws_tile_fits(head_dim, t);  // 128 packed rows per block
    }
    std::vector<TileConfig> sweep_tiles(int head_dim) const override { return ws_sweep_tiles(head_dim, "ws-split"); }
    // f16-ws's tiles for long rows at the same head dim (a split reads thousands of keys). H200, bf16, MQA, 4 tokens,
    // KV TB/s (bench/NOTES.md, "decode-ws"): d 128, B 64, 4k / 32k keys: 2.57 / 4.05 at 128 keys in 3 stages,
    // 2.60 / 4.13 in 2, 2.60 / 3.78 at 64 keys in 4, 2.51 / 4.07 at 192 keys; d 64, B 64, 32k / 128k: 3.34 / 3.61 at
    // 192 keys in 2 stages, 3.28 / 3.57 in 3, 3.21 / 3.46 at 128 keys in 3. Later, 4 tokens, 8 splits at 128k / 2 at
    // 32k, 3 rounds: d 128 at 128 keys, 3 -> 2 stages, B 16 128k 4.26 -> 4.35 and B 64 32k +2.1 % (bf16 and fp16
    // alike).
    std::vector<TileConfig> preferred_tiles(int, const ProblemClass& p) const override {
        const int padded = ws_layout::padded_head_dim(p.head_dim);
        if (padded == 256) return {ws_tile(80, 2, "ws-split"), ws_tile(64, 2, "ws-split")};
        if (padded == 192) return {ws_tile(112, 2, "ws-split"), ws_tile(64, 3, "ws-split")};
        if (padded == 64) return {ws_tile(192, 2, "ws-split"), ws_tile(128, 3, "ws-split")};
        return {ws_tile(128, 2, "ws-split"), ws_tile(64, 3, "ws-split")};
    }

    std::string source_name() const override { return "attention_f16_ws.cu"; }
    std::vector<std::string> kernels(const AttentionKernelSpec& s) const override {
        const char* type = kernel_element_type(s.dtype);
        // <T, B_r, B_c, d, stages, causal, mods, varlen, paged, split>, then the combine kernel <T, d[, varlen]>.
        return {
            fmt::format("fa_jit::attention_fwd_f16_ws<{}, {}, {}, {}, {}, {}, {}, {}, {}, true>", type, s.tile.block_m,
                        s.tile.block_n, s.head_dim, s.tile.stages, s.causal, s.mods.bits(), s.varlen, s.paged),
            fmt::format("fa_jit::attention_split_combine<{}, {}{}>", type, s.head_dim, s.varlen ? ", true" : "")};
    }
    std::size_t shared_bytes(const AttentionKernelSpec& s) const override {
        return ws_layout::smem_bytes(s.tile.block_m, s.tile.block_n, s.head_dim, s.tile.stages);
    }

    // The split kernel takes the TMA maps of f16-ws (it reads K and V through them and gathers the packed Q rows
    // itself); the combine kernel only the parameters.
    void launch_kernel(const AttentionKernelSpec& spec, int index, const Kernel& kernel, const LaunchConfig& config,
                       const AttentionParams& params, const AttentionArgs& a) const override {
        if (index == 0)
            launch_with_ws_maps(kernel, config, params, a, spec);
        else
            launch(kernel, config, params);
    }
};

const bool registered = register_family(std::make_shared<DecodeWsFamily>());

}  // namespace
}  // namespace fa_jit::families
