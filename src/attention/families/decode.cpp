// Family "decode": split-KV attention for few query rows per KV head (kernel_sources/attention_decode.cu), fp16 and
// bf16, head dims that are multiples of 8 up to 256, sm_80 and newer. It serves decode and speculative decoding
// (seqlen_q <= 16, any group size) and every problem with per-sequence KV lengths (seqused_k). Tiles are spelled
// "16x64w4s4-split": packed query rows x keys per block step, warps, the depth of each warp's K/V ring.
#include <fmt/format.h>

#include <vector>

#include "attention/families/split_kv.hpp"
#include "attention_decode_layout.cuh"

namespace fa_jit::families {
namespace {

class DecodeFamily final : public SplitKvFamily {
public:
    const char* name() const override { return "decode"; }
    int priority() const override { return 5; }

    bool accepts(DType dtype, int head_dim) const override {
        return accepts_dtype(dtype) && head_dim % 8 == 0 && head_dim >= 8 && head_dim <= 256;
    }
    bool runs_on(int cc) const override { return cc >= 80; }

    bool owns(const TileConfig& t) const override { return t.variant == "split"; }
    bool tile_is_legal(int head_dim, const TileConfig& t) const override {
        return owns(t) && decode_layout::legal(t.block_m, t.block_n, t.warps, t.stages, head_dim);
    }
    std::vector<TileConfig> sweep_tiles(int head_dim) const override {
        std::vector<TileConfig> out;
        for (int block_m : {16, 32, 64, 128})
            for (int warps : {4, 8, 16})
                for (int warp_n : {16, 32})
                    for (int stages : {2, 3, 4}) {
                        const int block_n = warp_n * decode_layout::key_warps(block_m, warps, head_dim);
                        if (block_n > 0 && decode_layout::legal(block_m, block_n, warps, stages, head_dim))
                            out.push_back({block_m, block_n, warps, stages, "split"});
                    }
        return out;
    }
    // Rows: the smallest tile holding every packed row of a KV head (a smaller one reads the group's K/V once per row
    // tile), up to 128. Keys: 4 key warps, else 2 or 1 of 32 keys each, whichever keeps the block at most 8 warps;
    // the deepest ring that fits (4: three tiles in flight per key warp), but on Hopper 3 for one row warp up to 8k
    // keys: two such blocks fit an SM (not in sm_80's 164 KB), and one's prologue and epilogue hide behind the other's
    // loads where blocks are short.
    // H200, bf16, 3 against 4 stages (bench/NOTES.md, "Ring depth and blocks per SM"): 4k keys +0-2 % at d 128
    // (B 64, GQA 8, 4 tokens: 4.36 against 4.30 TB/s), +1-6 % at d 64; 32k and 128k keys at B 64 -1-2 %.
    std::vector<TileConfig> preferred_tiles(int cc, const ProblemClass& p) const override {
        const int rows = packed_rows(p.seqlen_q, p.group_size);
        int block_m = 16;
        for (int m : {32, 64, 128})
            if (block_m < rows) block_m = m;
        const int row_warps = decode_layout::row_warps(block_m, p.head_dim);
        std::vector<TileConfig> out;
        // One token of 32 query heads per KV head (MQA) at d 113-128 past 8k keys: 2 key warps of 32 keys, 4 warps
        // in all, where each block streams long runs of keys (H200, bf16 / fp16, 128 KB rings both: B 16 128k and
        // B 64 32k, 8 / 2 splits, 4.41 against 4.33 TB/s with 4 key warps of 16). Short runs lose: B 1 128k (128
        // splits) -3-4 %, B 16 4k -5 %; so do d 64 and 256 (-2-3 %) and 4 tokens of GQA 8 (32 rows: -1-4 % at B 64).
        if (cc == 90 && p.seqlen_q == 1 && rows == 32 && p.head_dim > 112 && p.head_dim <= 128 && p.seqlen_k > 8192)
            out.push_back({32, 64, 4, 4, "split"});
        // One row warp (up to 16 packed rows) there: 4 key warps of 32 keys in 2 stages (128 KB, as 16 keys in 4).
        // H200, bf16, three alternating passes, KV TB/s against 16x64w4s4: 32 query heads over 8 KV heads, B 16,
        // one token 128k 4.50 -> 4.56, 32k 4.45 -> 4.52, 4 causal tokens 128k / 32k 4.49 / 4.43 -> 4.56 / 4.50;
        // B 64 32k 4.53 -> 4.58; B 1 128k 4.16 -> 4.21; 64 heads over 8, B 16 128k 4.49 -> 4.56; 32 KV heads,
        // B 1 128k / 32k 4.40 / 4.16 -> 4.46 / 4.21, B 16 32k 4.51 -> 4.53.
        if (cc == 90 && rows <= 16 && p.head_dim > 112 && p.head_dim <= 128 && p.seqlen_k > 8192)
            out.push_back({16, 128, 4, 2, "split"});
        // At d 193-256 the one row warp's ring takes 2 stages there (128 KB) rather than 3 (measured at d 256: 8 KV
        // heads, B 16 32k, one
        // token / 4 causal tokens 4.51 / 4.52 -> 4.54 / 4.53, B 64 32k one token 4.47 -> 4.58.
        if (cc == 90 && rows <= 16 && p.head_dim > 192 && p.seqlen_k > 8192) out.push_back({16, 64, 4, 2, "split"});
        // Keys per key warp and step: 16, or 32 where a 16-key tile is small (d <= 64: 4 KB of K and V) or the key
        // warps few.
        const int warp_n = p.head_dim <= 64 ? 32 : 16;
        const std::vector<int> stage_order =
            row_warps == 1 && cc == 90 && p.seqlen_k <= 8192 ? std::vector<int>{3, 4, 2} : std::vector<int>{4, 3, 2};
        for (int key_warps : {4, 2, 1})
            for (int stages : stage_order) {
                const TileConfig t{block_m, key_warps * (key_warps == 4 ? warp_n : 32), row_warps * key_warps, stages,
                                   "split"};
                if (t.warps <= 8 && decode_layout::legal(t.block_m, t.block_n, t.warps, t.stages, p.head_dim))
                    out.push_back(t);
            }
        out.push_back({16, 64, 4, 2, "split"});
        return out;
    }

    std::string source_name() const override { return "attention_decode.cu"; }
    std::vector<std::string> kernels(const AttentionKernelSpec& s) const override {
        const char* type = kernel_element_type(s.dtype);
        // <T, M, N, d, warps, stages, causal[, mods[, varlen[, paged]]]>, then the combine kernel <T, d[, varlen]>.
        return {fmt::format("fa_jit::attention_decode_split<{}, {}, {}, {}, {}, {}, {}{}>", type, s.tile.block_m,
                            s.tile.block_n, s.head_dim, s.tile.warps, s.tile.stages, s.causal, mods_argument(s)),
                fmt::format("fa_jit::attention_split_combine<{}, {}{}>", type, s.head_dim, s.varlen ? ", true" : "")};
    }
    std::size_t shared_bytes(const AttentionKernelSpec& s) const override {
        return decode_layout::smem_bytes(s.tile.block_m, s.tile.block_n, s.tile.warps, s.tile.stages, s.head_dim);
    }

protected:
    std::size_t ring_bytes(const AttentionKernelSpec& s) const override {
        return decode_layout::ring_bytes(s.tile.block_m, s.tile.block_n, s.tile.warps, s.tile.stages, s.head_dim);
    }
};

const bool registered = register_family(std::make_shared<DecodeFamily>());

}  // namespace
}  // namespace fa_jit::families
