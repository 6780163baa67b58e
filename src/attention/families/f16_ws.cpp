// Family "f16-ws": the warp-specialized Hopper forward (kernel_sources/attention_f16_ws.cu), fp16 and bf16, head dims
// that are multiples of 8 up to 256, sm_90 only (compiled for sm_90a): a TMA producer warpgroup and two consumer
// warpgroups that take turns at the tensor cores. Chosen ahead of f16-wgmma wherever it measured faster (chosen_for(),
// bench/NOTES.md "Warp-specialized Hopper forward"). Tiles are spelled "128x128w12s3-ws": 128 query rows, keys per
// step, 12 warps (the producer and two consumer warpgroups), the K/V ring's depth; "192x128w16s3-ws" has three
// consumer warpgroups (head dims up to 128), "256x64w20s3-ws" four (d <= 64).
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "attention/families/f16_args.hpp"
#include "attention/families/f16_ws_tiles.hpp"
#include "attention/families/ws_maps.hpp"
#include "attention/families/ws_tiles.hpp"
#include "attention/family.hpp"
#include "attention/validate.hpp"
#include "attention_ws_layout.cuh"

namespace fa_jit::families {
namespace {

class F16WsFamily final : public KernelFamily {
public:
    const char* name() const override { return "f16-ws"; }
    int priority() const override { return 8; }  // after the decode families, ahead of f16-wgmma
    int score_mods() const override { return mods::kAll; }  // window, softcap, ALiBi
    bool serves_varlen() const override { return true; }
    bool serves_paged() const override { return true; }

    // Any multiple of 8 up to 256: shared memory holds whole 64-column blocks, TMA fills the padding with zeros.
    bool accepts(DType dtype, int head_dim) const override {
        return accepts_dtype(dtype) && head_dim % 8 == 0 && head_dim >= 8 && head_dim <= 256;
    }
    bool accepts_dtype(DType dtype) const override { return dtype == DType::f16 || dtype == DType::bf16; }
    bool runs_on(int cc) const override { return cc == 90; }
    // TMA maps cannot repeat an input along a dimension (a zero stride).
    bool serves(const ProblemClass& p, int cc) const override {
        return KernelFamily::serves(p, cc) && !p.repeated_input;
    }
    // Where it beats f16-wgmma on an H200 (bf16, FlashAttention protocol, TFLOP/s at N 512 / 2k / 16k, bench/NOTES.md):
    //   d 128: everywhere (full 456 / 608 / 666 against 345 / 438 / 471; causal 274 / 488 / 665 against
    //          231 / 363 / 472);
    //   d 192 (B 4, H 16, N 4096): 665 full, 587 causal against 453 / 399;
    //   d 256: everywhere (causal, 64 keys: 255 / 430 / 619 against 263 / 401 / 543; 80 keys, B 1, H 8: 273 / 662
    //          at 2k / 16k against 268 / 626 with 64; full, 80 keys with staggered key tiles, N 512 / 2k / 16k:
    //          427 / 601 / 608-638 against 388 / 479 / 538);
    //   d 64: full everywhere (344 / 417 / 451 against 330 / 390 / 409), causal from 2k keys with 192 rows (361 at 2k
    //         against 343; 128 rows: 184 / 326 against 243 / 343 at 512 / 2k) and plain causal rows of 257-2048 keys
    //         with 256 (f16_ws_short_causal; 255 / 337 against 247 / 310 at 512 / 1k).
    // Head dims that are not multiples of 64 run padded, against f16-mma (B 4, H 16, N 4096, full / causal): d 48
    // 328 / 279 against 249 / 217, d 80 442 / 373 against 302 / 257, d 96 511 / 437 against 318 / 274, d 120
    // 575 / 508 against 313 / 272, d 160 571 / 499 against 269 / 254, d 224 454 / 467 against 256 / 231; d 32 loses
    // (214 / 186 against 245 / 188: half of each padded column block is zeros).
    bool chosen_for(const ProblemClass& p, int cc) const override {
        if (!serves(p, cc)) return false;
        if (p.head_dim % 64 != 0) return p.head_dim >= 40;
        if (p.head_dim == 64) return !p.causal || p.seqlen_k >= 2048 || f16_ws_short_causal(p);
        return true;
    }
    void check_args(const AttentionArgs& args) const override { check_f16_args(args); }

    bool owns(const TileConfig& t) const override { return t.variant == "ws"; }
    bool tile_is_legal(int head_dim, const TileConfig& t) const override {
        return owns(t) && ws_tile_fits(head_dim, t);
    }
    std::vector<TileConfig> sweep_tiles(int head_dim) const override {
        return ws_sweep_tiles(head_dim, "ws", {128, 192, 256});
    }
    // By padded head dim, fastest first (f16_ws_tiles.cpp says why, with the figures).
    std::vector<TileConfig> preferred_tiles(int, const ProblemClass& p) const override {
        return f16_ws_preferred_tiles(p);
    }
    bool has_even_variant() const override { return false; }

    std::string source_name() const override { return "attention_f16_ws.cu"; }
    std::vector<std::string> kernels(const AttentionKernelSpec& s) const override {
        // <T, B_r, B_c, d, stages, causal[, mods]>; the looping and table-map variants spell every argument up to
        // kTileLoop or kTableMap.
        const char* type = kernel_element_type(s.dtype);
        if (s.tile_loop)  // packed sequences loop too (never with a paged cache: ws_layout::tile_loop)
            return {fmt::format("fa_jit::attention_fwd_f16_ws<{}, {}, {}, {}, {}, {}, {}, {}, false, false, true>",
                                type, s.tile.block_m, s.tile.block_n, s.head_dim, s.tile.stages, s.causal,
                                s.mods.bits(), s.varlen)};
        if (s.table_map)  // never with the mask, modifiers or packed sequences (ws_layout::paged_table_map)
            return {
                fmt::format("fa_jit::attention_fwd_f16_ws<{}, {}, {}, {}, {}, false, 0, false, true, false, false, "
                            "true>",
                            type, s.tile.block_m, s.tile.block_n, s.head_dim, s.tile.stages)};
        if (s.settled_max)  // one tile per block, contiguous K / V only (ws_layout::settled_max)
            return {fmt::format("fa_jit::attention_fwd_f16_ws<{}, {}, {}, {}, {}, {}, {}, false, false, false, false, "
                                "false, true>",
                                type, s.tile.block_m, s.tile.block_n, s.head_dim, s.tile.stages, s.causal,
                                s.mods.bits())};
        return {fmt::format("fa_jit::attention_fwd_f16_ws<{}, {}, {}, {}, {}, {}{}>", type, s.tile.block_m,
                            s.tile.block_n, s.head_dim, s.tile.stages, s.causal, mods_argument(s))};
    }
    bool tile_loop(const AttentionKernelSpec& s, int seqlen_k) const override { return f16_ws_tile_loop(s, seqlen_k); }
    bool settled_max(const AttentionKernelSpec& s, int row_keys) const override {
        return ws_layout::settled_max(s.head_dim, s.causal, s.mods.bits(), s.varlen, s.paged, false, s.tile_loop) &&
               ws_layout::settles_max(row_keys, s.mods.window);
    }
    // Past 4k keys only: there it ran 1.006-1.011 (8k) and 1.011-1.020 (16k) of the other paged kernel, at 2k 0.97
    // and at 512 keys 0.90 (bf16 / fp16 d 64, H200, bench/NOTES.md "Paged d 64: the table-map kernel merged").
    bool table_map(const AttentionKernelSpec& s, int page_size, int seqlen_k) const override {
        return ws_layout::paged_table_map(s.paged, s.causal, s.head_dim, s.tile.block_n, s.varlen, s.mods.any(),
                                          false) &&
               ws_layout::table_map_pages(page_size, s.tile.block_n) && seqlen_k > 4096;
    }
    std::size_t shared_bytes(const AttentionKernelSpec& s) const override {
        const bool alibi_columns =
            ws_layout::alibi_on_tensor_cores(s.tile.block_m, s.tile.block_n, s.head_dim, s.tile.stages, s.mods.alibi,
                                             s.mods.softcap, s.mods.window, false);
        return ws_layout::smem_bytes(s.tile.block_m, s.tile.block_n, s.head_dim, s.tile.stages, alibi_columns,
                                     s.table_map, s.tile_loop, s.varlen && s.tile_loop);
    }

    // A kernel that may loop over tiles (ws_layout::persistent) takes a 1-d grid: for short rows one block per SM (or
    // per tile, when fewer), each looping over tiles, else one block per tile (ws_layout::loops_over_tiles). Under the
    // causal mask only the looping variant does (AttentionKernelSpec::tile_loop, up to 8k keys), its blocks taking
    // tiles in pairs: at most half as many blocks as tiles where there are more tiles than SMs; packed sequences one
    // block per SM (or per tile bound), each taking the positions of their tile table (tile/packed_tiles.cuh). Other
    // kernels: one block per tile in (query tile, head, batch).
    LaunchPlan plan(const AttentionKernelSpec& spec, const AttentionArgs& a, const DeviceInfo& device) const override {
        LaunchPlan plan = KernelFamily::plan(spec, a, device);
        const bool per_sequence_keys = spec.mods.window || spec.paged;  // a block per tile
        if (!ws_layout::persistent(spec.tile.block_m, spec.causal, spec.head_dim, spec.tile.block_n, per_sequence_keys,
                                   spec.tile_loop, spec.mods.any(), spec.table_map, spec.varlen)) {
            // A block per tile: a sequence's blocks are numbered in 32-bit arithmetic (tile/head_groups.cuh).
            const long long per_sequence = static_cast<long long>(plan.launches[0].grid[0]) * a.heads_q;
            FA_JIT_REQUIRE(per_sequence <= std::numeric_limits<int>::max(), "seqlen_q",
                           fmt::format("at most 2^31 - 1 query tiles of {} rows over heads_q", spec.tile.block_m),
                           std::to_string(per_sequence));
            return plan;
        }
        // Causal pairs: an odd number of query tiles per head gets one more, without rows (tile/coords.cuh).
        const long long per_head = plan.launches[0].grid[0] + (spec.causal ? plan.launches[0].grid[0] % 2 : 0);
        const long long tiles = per_head * a.heads_q * a.batch;
        FA_JIT_REQUIRE(tiles <= std::numeric_limits<int>::max(), "seqlen_q",
                       fmt::format("at most 2^31 - 1 query tiles of {} rows over batch x heads_q", spec.tile.block_m),
                       std::to_string(tiles));
        const long long sms = std::max(device.multiprocessors, 1);
        long long blocks = tiles;
        if (spec.varlen)  // packed sequences: a block per SM, each taking the table's tiles in a snake
            blocks = std::min(sms, static_cast<long long>(plan.launches[0].grid[0]) * a.heads_q * a.batch);
        else if (!per_sequence_keys && (spec.causal || ws_layout::loops_over_tiles(a.seqlen_k)) && tiles > sms)
            blocks = spec.causal ? std::min(sms, tiles / 2) : sms;  // causal: an even count
        KernelLaunch& l = plan.launches[0];
        l.grid[0] = static_cast<unsigned>(blocks);
        l.grid[1] = l.grid[2] = 1;
        return plan;
    }

    // The kernel takes the TMA descriptors of Q, K and V beside the parameters, encoded for this call, and that of a
    // paged cache's block table where it reads the table by TMA (AttentionKernelSpec::table_map).
    void launch_kernel(const AttentionKernelSpec& spec, int, const Kernel& kernel, const LaunchConfig& config,
                       const AttentionParams& params, const AttentionArgs& a) const override {
        launch_with_ws_maps(kernel, config, params, a, spec);
    }
};

const bool registered = register_family(std::make_shared<F16WsFamily>());

}  // namespace
}  // namespace fa_jit::families
