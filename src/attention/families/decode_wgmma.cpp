// Family "decode-wgmma": split-KV decode on Hopper warpgroup MMA (kernel_sources/attention_decode_wgmma.cu), fp16 and
// bf16, head dims 64, 128, 192 and 256, sm_90 only (compiled for sm_90a). It takes the decode problems with more than
// 32 packed rows per KV head (MQA or large GQA groups with several query tokens), which are compute-bound on
// mma.sync; fewer rows stay on "decode", memory-bound there. Tiles are spelled "128x128w8s3-wgmma-split": one
// warpgroup per 64 packed rows, so warps = block_m / 16.
#include <fmt/format.h>

#include <vector>

#include "attention/families/split_kv.hpp"
#include "attention_wgmma_layout.cuh"

namespace fa_jit::families {
namespace {

constexpr int kMinRows = 33;  // packed rows per KV head from which wgmma's 64-row tiles pay

bool legal_tile(int block_m, int block_n, int stages, int head_dim) {
    return block_m <= 128 && wgmma_layout::legal(block_m, block_n, block_m / 16, stages, head_dim);
}

class DecodeWgmmaFamily final : public SplitKvFamily {
public:
    const char* name() const override { return "decode-wgmma"; }
    int priority() const override { return 4; }

    bool accepts(DType dtype, int head_dim) const override {
        return accepts_dtype(dtype) && head_dim % 64 == 0 && head_dim >= 64 && head_dim <= 256;
    }
    bool runs_on(int cc) const override { return cc == 90; }  // wgmma exists on sm_90a only
    bool serves(const ProblemClass& p, int cc) const override {
        return SplitKvFamily::serves(p, cc) && packed_rows(p.seqlen_q, p.group_size) >= kMinRows;
    }

    bool owns(const TileConfig& t) const override { return t.variant == "wgmma-split"; }
    bool tile_is_legal(int head_dim, const TileConfig& t) const override {
        return owns(t) && t.warps == t.block_m / 16 && legal_tile(t.block_m, t.block_n, t.stages, head_dim);
    }
    std::vector<TileConfig> sweep_tiles(int head_dim) const override {
        std::vector<TileConfig> out;
        for (int block_m : {64, 128})
            for (int block_n : {64, 128})
                for (int stages : {2, 3, 4})
                    if (legal_tile(block_m, block_n, stages, head_dim))
                        out.push_back({block_m, block_n, block_m / 16, stages, "wgmma-split"});
        return out;
    }
    // Rows: one warpgroup up to 64 packed rows, else two (more rows take more row tiles, each reading the K/V).
    // Two warpgroups are compute-bound (128 rows: 128 FLOP per K/V byte): 128 keys per step up to d 128 and the
    // shallowest ring (H200, MQA, 4 tokens, d 128, 32k keys: 437 TFLOP/s at 128 x 128 with 2 stages, 421 with 3, 397
    // at 128 x 64). One warpgroup keeps more tiles in flight: 64 keys, the deepest ring (64 rows, 32k keys: 3.96 TB/s
    // at 64 x 64 with 4 stages, 3.94 at 64 x 128 with 3).
    std::vector<TileConfig> preferred_tiles(int, const ProblemClass& p) const override {
        const int block_m = packed_rows(p.seqlen_q, p.group_size) <= 64 ? 64 : 128;
        const std::vector<int> stage_order = block_m == 128 ? std::vector<int>{2, 3, 4} : std::vector<int>{4, 3, 2};
        const std::vector<int> key_order = block_m == 128 ? std::vector<int>{128, 64} : std::vector<int>{64, 128};
        std::vector<TileConfig> out;
        for (int block_n : key_order) {
            if (block_n == 128 && p.head_dim > 128) continue;
            for (int stages : stage_order)
                if (legal_tile(block_m, block_n, stages, p.head_dim))
                    out.push_back({block_m, block_n, block_m / 16, stages, "wgmma-split"});
        }
        return out;
    }

    std::string source_name() const override { return "attention_decode_wgmma.cu"; }
    std::vector<std::string> kernels(const AttentionKernelSpec& s) const override {
        const char* type = kernel_element_type(s.dtype);
        // <T, M, N, d, stages, causal[, mods[, varlen[, paged]]]>, then the combine kernel <T, d[, varlen]>.
        return {fmt::format("fa_jit::attention_decode_wgmma<{}, {}, {}, {}, {}, {}{}>", type, s.tile.block_m,
                            s.tile.block_n, s.head_dim, s.tile.stages, s.causal, mods_argument(s)),
                fmt::format("fa_jit::attention_split_combine<{}, {}{}>", type, s.head_dim, s.varlen ? ", true" : "")};
    }
    std::size_t shared_bytes(const AttentionKernelSpec& s) const override {
        return wgmma_layout::smem_bytes(s.tile.block_m, s.tile.block_n, s.head_dim, s.tile.stages);
    }
};

const bool registered = register_family(std::make_shared<DecodeWgmmaFamily>());

}  // namespace
}  // namespace fa_jit::families
