// Family "decode": split-KV attention for few query rows per KV head (kernel_sources/attention_decode.cu), fp16 and
// bf16, head dims that are multiples of 8 up to 256, sm_80 and newer. It serves decode and speculative decoding
// (seqlen_q <= 16, any group size) and every problem with per-sequence KV lengths (seqused_k). Tiles are spelled
// "16x64w4s4-split": packed query rows x keys per block step, warps, the depth of each warp's K/V ring.
#include <fmt/format.h>

#include <optional>
#include <vector>

#include "attention/families/split_kv.hpp"
#include "attention_decode_layout.cuh"

namespace fa_jit::families {
namespace {

// Past 8k keys on sm_90 each block streams long runs of keys, and these tiles lead there: mostly fewer, wider key
// tiles per key warp in rings of 128 KB. H200, bf16, alternating forced-tile passes, KV TB/s, 32 query heads
// (bench/NOTES.md, "One token of MQA on 2 key warps", "One row warp on 32 keys per key warp"; fp16 alike where
// timed). None where the general rule below leads.
std::optional<TileConfig> long_run_tile(int head_dim, int rows, int seqlen_q, bool paged) {
    // One row warp (up to 16 packed rows). d 64: 8 key warps of 32 keys in 2 stages against 4 in 4 (32 KV heads, B 1
    // 128k 4.38 -> 4.45; 8 KV heads, B 16 128k 4.55 -> 4.64, B 64 32k 4.60 -> 4.64). d 128: 4 key warps of 32 keys in
    // 2 stages against 16 keys in 4 (+0.4-1.8 % over groups of 1-8, one token and 4 causal, B 1-64); from a paged
    // cache in 3, whose third tile in flight hides the next tile's table lookups (fp16, 8 KV heads, pages of 16 / 64
    // / 256, before the paged kernels' launch bound: B 1 128k 3.87 -> 3.93, 4.08 -> 4.19, 4.11 -> 4.15; B 16 16k 4.30
    // -> 4.33, 4.37 -> 4.35, 4.40 -> 4.37; bench/NOTES.md, "Paged decode in 3 stages"). (d 193-256 take 2 stages at
    // every length: one_row_warp_stages().)
    if (rows <= 16) {
        if (head_dim > 56 && head_dim <= 64) return TileConfig{16, 256, 8, 2, "split"};
        if (head_dim > 112 && head_dim <= 128) return TileConfig{16, 128, 4, paged ? 3 : 2, "split"};
    }
    // One token of MQA (32 rows). d 128: 2 key warps of 32 keys against 4 of 16 (B 16 128k and B 64 32k 4.33 ->
    // 4.41; short runs lose, as do 4 causal tokens of 32 rows). d 256: 2 key warps of 16 keys in 4 stages against 4
    // in 3 (255 registers either way; B 64 32k 4.38 -> 4.49, B 16 128k 4.37 -> 4.50).
    if (rows > 16 && rows <= 32 && seqlen_q == 1) {
        if (head_dim > 112 && head_dim <= 128) return TileConfig{32, 64, 4, 4, "split"};
        if (head_dim > 192) return TileConfig{32, 32, 4, 4, "split"};
    }
    return std::nullopt;
}

// Ring depths to try in order for one row warp on sm_90. Up to 8k keys 3 before 4: two blocks of 3 stages fit an SM
// (not in sm_80's 164 KB), and one's prologue and epilogue hide behind the other's loads where blocks are short.
// H200, bf16, 3 against 4 stages (bench/NOTES.md, "Ring depth and blocks per SM"): 4k keys +0-2 % at d 128 (B 64, GQA
// 8, 4 tokens: 4.36 against 4.30 TB/s), +1-6 % at d 64; 32k and 128k keys at B 64 -1-2 %. d 193-256: 2 stages at
// every length, since no two blocks fit there anyway (8 KV heads: 32k B 16 4.51 -> 4.54, B 64 4.47 -> 4.58; 4k B 64
// 4.35 -> 4.43, 4 causal tokens B 64 4.29 -> 4.34, B 16 4.10 -> 4.13; "d 256 in 2 stages").
std::vector<int> one_row_warp_stages(int head_dim, int seqlen_k) {
    if (head_dim > 192) return {2, 3, 4};
    if (seqlen_k <= 8192) return {3, 4, 2};
    return {4, 3, 2};
}

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
    // the deepest ring that fits (4: three tiles in flight per key warp), but on Hopper one_row_warp_stages() for one
    // row warp. Past 8k keys on sm_90, long_run_tile() first where it names one.
    std::vector<TileConfig> preferred_tiles(int cc, const ProblemClass& p) const override {
        const int rows = packed_rows(p.seqlen_q, p.group_size);
        int block_m = 16;
        for (int m : {32, 64, 128})
            if (block_m < rows) block_m = m;
        const int row_warps = decode_layout::row_warps(block_m, p.head_dim);
        std::vector<TileConfig> out;
        if (cc == 90 && p.seqlen_k > 8192)
            if (const auto t = long_run_tile(p.head_dim, rows, p.seqlen_q, p.paged)) out.push_back(*t);
        // Keys per key warp and step: 16, or 32 where a 16-key tile is small (d <= 64: 4 KB of K and V) or the key
        // warps few.
        const int warp_n = p.head_dim <= 64 ? 32 : 16;
        const std::vector<int> stage_order =
            row_warps == 1 && cc == 90 ? one_row_warp_stages(p.head_dim, p.seqlen_k) : std::vector<int>{4, 3, 2};
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
