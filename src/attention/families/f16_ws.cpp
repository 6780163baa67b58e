// Family "f16-ws": the warp-specialized Hopper forward (kernel_sources/attention_f16_ws.cu), fp16 and bf16, head dims
// that are multiples of 8 up to 256, sm_90 only (compiled for sm_90a): a TMA producer warpgroup and two consumer
// warpgroups that take turns at the tensor cores. Chosen ahead of f16-wgmma wherever it measured faster (chosen_for(),
// bench/NOTES.md "Warp-specialized Hopper forward"). Tiles are spelled "128x128w12s3-ws": 128 query rows, keys per
// step, 12 warps (the producer and two consumer warpgroups), the K/V ring's depth; "192x128w16s3-ws" has three
// consumer warpgroups (head dims up to 128).
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "attention/families/f16_args.hpp"
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
    //         against 343; 128 rows: 184 / 326 against 243 / 343 at 512 / 2k).
    // Head dims that are not multiples of 64 run padded, against f16-mma (B 4, H 16, N 4096, full / causal): d 48
    // 328 / 279 against 249 / 217, d 80 442 / 373 against 302 / 257, d 96 511 / 437 against 318 / 274, d 120
    // 575 / 508 against 313 / 272, d 160 571 / 499 against 269 / 254, d 224 454 / 467 against 256 / 231; d 32 loses
    // (214 / 186 against 245 / 188: half of each padded column block is zeros).
    bool chosen_for(const ProblemClass& p, int cc) const override {
        if (!serves(p, cc)) return false;
        if (p.head_dim % 64 != 0) return p.head_dim >= 40;
        if (p.head_dim == 64) return !p.causal || p.seqlen_k >= 2048;
        return true;
    }
    void check_args(const AttentionArgs& args) const override { check_f16_args(args); }

    bool owns(const TileConfig& t) const override { return t.variant == "ws"; }
    bool tile_is_legal(int head_dim, const TileConfig& t) const override {
        return owns(t) && ws_tile_fits(head_dim, t);
    }
    std::vector<TileConfig> sweep_tiles(int head_dim) const override {
        return ws_sweep_tiles(head_dim, "ws", {128, 192});
    }
    // H200, bf16, TFLOP/s (bench/NOTES.md). d 128: 128 keys, 3 stages (16k: 677 full against 657 with 2 stages and 563
    // with 64 keys; 192 rows at 64 keys: 650 against 689);
    // Padded to 256 (d 200-256): 80 keys, 2 stages (the largest tile that fits: d 256 662 / 556 TFLOP/s causal / full
    // at 16k against 626 / 505 with 64 keys; d 224, B 4, N 4k: 7 / 5 % over 64 keys); up to 512 keys 64 keys, which
    // divide the row where 80 leave a partial tile (N 512, full / causal: d 256 497 / 327 against 478 / 311, d 224
    // 461 / 303 against 453 / 295), and whose blocks loop over tiles (d 256, N 512: 526-529 / 335-337 against 495 /
    // 325 with one tile per block); under the causal mask, where 64 keys loop over pairs of tiles and 80 cannot,
    // also up to 2k keys, and at d 256 up to 8k (causal, 80 -> 64 keys: d 256 N 1k / 1.5k / 2k / 4k / 8k 456 / 528 /
    // 572 / 661 / 723 -> 492 / 577 / 612 / 694 / 737, d 224 N 1k 429 -> 463, d 200 N 1k 371 -> 391 but N 4k 539 ->
    // 524; without the mask 64 keys lead by 0-2 % at 1k-1.5k and trail by 1 % at 2k, so 80 stay there);
    // padded to 192 (d 136-192): 112 keys, 2 stages from 2k keys (K released after S; d 192: 770 / 756 at 16k and 535 /
    // 663 at 2k against 682 / 670 and 501 / 618 with 64 keys and 3 stages, at 512 keys 289 / 462 against 303 / 461; d
    // 160, B 4, N 4k: 9 / 9 %), else 64 keys in 3 stages; under the causal mask up to 4k keys, whose blocks loop over
    // pairs of tiles there (d 160 / 192, N 2k: 530 / 567 against 514 / 551 with 112 keys; at 4k 592 / 638 against 603 /
    // 648). Padded to 64 (d 40-64): 192 rows (three consumer warpgroups) and 128 keys in 3 stages, without the causal
    // mask and under it from 2k keys (d 64, N 512 / 2k / 16k, full: 372 / 498 / 552 against 341 / 426 / 453 with 128
    // rows and 317 / 434 / 483 with 128 rows and 192 keys; causal: 177 / 361 / 526 against 190 / 344 / 466 and 167 /
    // 336 / 495). Causal at 2k-8k keys, 192 x 128 now leads 192 x 96 in pairs of tiles (which keeps per-step wgmma
    // descriptors): N 2k / 4k / 8k 385 / 438 / 471 against 385 / 424 / 449, interleaved (bench/NOTES.md, "d 64
    // causal on 192 x 128"); with a score modifier it leads 128 x 128 by 2-18 % (d 64, 16k). d 88-96: 192 rows and
    // 96 keys in 3 stages from 2k keys (d 96, N 512 / 2k / 4k / 16k, full: 355 / 568 / 607 / 644 against 402 / 539 /
    // 556 / 525 with 128 x 128; causal, one tile per block: 219 / 438 / 514 / 598 against 235 / 437 / 516 / 579; fp16
    // at 4k / 16k: 589 / 581 against 541 / 520 full; d 88 at 4k: 539 / 453 against 472 / 427). Under the causal mask
    // both loop over pairs of tiles up to 8k keys, where 192 rows lead from 2k (N 1k / 2k / 4k / 8k: 342 / 469 / 550 /
    // 608 against 373 / 453 / 508 / 536). 112 keys have since replaced 96 on most of those rows (below).
    std::vector<TileConfig> preferred_tiles(int, const ProblemClass& p) const override {
        const int padded = ws_layout::padded_head_dim(p.head_dim);
        const bool plain = !p.mods.any() && !p.varlen && !p.paged;
        // Without the mask past 8k keys, 2 stages: +1.2-1.3 % at d 64 (bf16 and fp16, 12k-32k; under the mask 3
        // stages lead by 1.5 %: bench/NOTES.md, "Wide key tiles past 8k keys").
        if (padded == 64 && plain && !p.causal && p.seqlen_k > 8192) return {ws_tile(128, 2, "ws", 192)};
        if (padded == 64 && (!p.causal || p.seqlen_k >= 2048))
            return {ws_tile(128, 3, "ws", 192), ws_tile(128, 3, "ws")};
        // Softcap's tanh doubles the softmax's MUFU operations (two per score). At d 65-128 one warpgroup's softmax
        // then takes about as long as another's GEMMs, which two consumer warpgroups cannot hide; three (192 rows)
        // can: 64 rows' softmax against two warpgroups' GEMMs (bench/NOTES.md, "Softcap on 192 rows": d 128, 16k,
        // +13 / +8 % full / causal). bf16 only: fp16 keeps the running max, and there 192 rows tie or lose up to 8 %.
        // Not with a window: its kernel keeps the overlap only on 128 rows (attention_f16_ws.cu, the key-step loops).
        if (p.mods.softcap && !p.mods.window && padded == 128 && p.dtype == DType::bf16)
            return {ws_tile(std::min(ws_layout::max_keys_at_192_rows(p.head_dim), 96), 3, "ws", 192),
                    ws_tile(128, 3, "ws")};
        // A paged cache at d 113-128 takes 192 keys in 2 stages: the tile is a multiple of every page size's boxes,
        // and fewer, wider tiles pay the page lookups less often (H200, 16k, against 128 x 128: pages of 16 / 32 /
        // 64 / 256 +0-1.5 / +3.5 / +0-1.2 / +5 % full, +5-8 / +3 / +2-3.6 / +2 % causal, fp16 at 64 +4.7 / +3.6 %; 8k,
        // B 4: +2-5 %; 160 keys lost 4 % at pages of 16; at 4k 192 keys lost 1-4 % full and tied causal).
        if (p.paged && !p.mods.any() && padded == 128 && p.head_dim > 112 && p.seqlen_k > 4096)
            return {ws_tile(192, 2, "ws"), ws_tile(128, 3, "ws")};
        // Past 8k keys (the 16k bucket) plain and ALiBi rows take wider key tiles in 2 stages, with fewer turns and
        // softmax passes per FLOP: 176 keys under the causal mask at d 97-128 and without it at d 113-128 (H200, 16k,
        // against 128 x 128: d 128 +2.8 / +1.0 % causal / full with 176 / 160 keys, ALiBi +2.4 / +0.8 %, d 112 causal
        // +4.1 %; 32k +3.9 / +1.9 %; d 112 full lost 3.9 %, d 88-96 5-9 % against 192 x 96, and a causal window
        // 7.4 %: bench/NOTES.md, "Wide key tiles past 8k keys"; without the mask 176 keys lead 160 by 0.5 % since
        // that kernel has no loop compiled in). ALiBi without the mask keeps 160: its kernel keeps the loop.
        const bool plain_or_alibi = !p.mods.window && !p.mods.softcap && !p.varlen && !p.paged;
        if (plain_or_alibi && padded == 128 && p.head_dim > (p.causal ? 96 : 112) && p.seqlen_k > 8192)
            return {ws_tile(p.causal || !p.mods.alibi ? 176 : 160, 2, "ws"), ws_tile(128, 3, "ws")};
        // d 88-96 from 2k keys: 192 rows; without the mask 112 keys (H200, against 96: +1.6-2.3 % at 2k-16k, bf16
        // and fp16, d 88 too; ALiBi +3.7 %, a window +1.5 %), and under it past 8k keys, where blocks do not loop
        // (+3.3-3.6 % at 12k-16k, ALiBi +1.1 %; a causal window lost 1.1 %; the looping variant spills 8 bytes at
        // 112); not on pages (boxes of 16 rows: -17 % at pages of 64) nor with softcap (fp16 -1.4 %).
        const bool keys112 = (!p.causal || (p.seqlen_k > 8192 && !p.mods.window)) && !p.paged && !p.mods.softcap;
        if (p.head_dim >= 88 && p.head_dim <= 96 && p.seqlen_k >= 2048)
            return {ws_tile(keys112 ? 112 : 96, 3, "ws", 192), ws_tile(128, 3, "ws")};
        if (padded == 256) {
            const TileConfig keys64 = ws_tile(64, 2, "ws"), keys80 = ws_tile(80, 2, "ws");
            const int loop_limit = p.head_dim == 256 ? 8192 : 2048;  // where 64 keys in pairs of tiles lead
            const bool short_rows = p.seqlen_k <= 512 || (p.causal && p.seqlen_k <= loop_limit &&
                                                          tile_loop({p.dtype, p.head_dim, p.causal, keys64}, p));
            return short_rows ? std::vector<TileConfig>{keys64, keys80} : std::vector<TileConfig>{keys80, keys64};
        }
        // Without the mask, up to 2k keys, d 136-192 take the variant whose blocks loop (tile_loop), where d 168-192
        // loop only at 96 keys (d 192, N 2k: 726 against 697 TFLOP/s with 112 keys, one tile per block).
        if (padded == 192 && !p.causal && p.head_dim > 160 && p.seqlen_k == 2048)
            return {ws_tile(96, 2, "ws"), ws_tile(112, 2, "ws")};
        if (padded == 192 && p.seqlen_k >= (p.causal ? 4096 : 2048))
            return {ws_tile(112, 2, "ws"), ws_tile(64, 3, "ws")};
        // ALiBi without softcap takes 2 stages, where 3 leave its columns on the tensor cores no room
        // (ws_layout::alibi_on_tensor_cores): d 128 2k / 8k +4.5 / +6 % full, +9 / +12 % causal, d 80 4k +10 / +13 %,
        // windows at 16k +7-9 % (H200; bench/NOTES.md, "ALiBi's column term on the tensor cores").
        const bool alibi_columns = p.mods.alibi && !p.mods.softcap;
        if (padded == 128 && alibi_columns) return {ws_tile(128, 2, "ws"), ws_tile(128, 3, "ws")};
        // Short causal rows at d 113-128 take 2 stages: N 512 +1.6-1.9 % bf16 / fp16 (H200, B 32, H 16, alternating
        // passes; without the mask 3 stages lead by 0.3 %).
        if (plain && padded == 128 && p.head_dim > 112 && p.causal && p.seqlen_k <= 512)
            return {ws_tile(128, 2, "ws"), ws_tile(128, 3, "ws")};
        if (padded <= 128) return {ws_tile(128, 3, "ws"), ws_tile(64, 3, "ws")};
        return {ws_tile(64, 3, "ws"), ws_tile(64, 2, "ws")};
    }
    bool has_even_variant() const override { return false; }

    std::string source_name() const override { return "attention_f16_ws.cu"; }
    std::vector<std::string> kernels(const AttentionKernelSpec& s) const override {
        // <T, B_r, B_c, d, stages, causal[, mods]>; the looping variant spells every argument up to kTileLoop.
        const char* type = kernel_element_type(s.dtype);
        if (s.tile_loop)
            return {fmt::format("fa_jit::attention_fwd_f16_ws<{}, {}, {}, {}, {}, {}, {}, false, false, false, true>",
                                type, s.tile.block_m, s.tile.block_n, s.head_dim, s.tile.stages, s.causal,
                                s.mods.bits())};
        return {fmt::format("fa_jit::attention_fwd_f16_ws<{}, {}, {}, {}, {}, {}{}>", type, s.tile.block_m,
                            s.tile.block_n, s.head_dim, s.tile.stages, s.causal, mods_argument(s))};
    }
    // Where a tile has a variant whose blocks loop (ws_layout::tile_loop), rows take it up to 8k keys under the causal
    // mask (loops_over_causal_tiles), else up to 2k (loops_over_tiles).
    bool tile_loop(const AttentionKernelSpec& s, int seqlen_k) const override {
        return ws_layout::tile_loop(s.tile.block_m, s.causal, s.head_dim, s.tile.block_n,
                                    s.mods.window || s.varlen || s.paged, s.mods.any()) &&
               (s.causal ? ws_layout::loops_over_causal_tiles(seqlen_k) : ws_layout::loops_over_tiles(seqlen_k));
    }
    // The same for a tile of problem class `p` (which names the features a spec carries).
    bool tile_loop(AttentionKernelSpec s, const ProblemClass& p) const {
        s.mods = p.mods, s.varlen = p.varlen, s.paged = p.paged;
        return tile_loop(s, p.seqlen_k);
    }
    std::size_t shared_bytes(const AttentionKernelSpec& s) const override {
        const bool alibi_columns =
            ws_layout::alibi_on_tensor_cores(s.tile.block_m, s.tile.block_n, s.head_dim, s.tile.stages, s.mods.alibi,
                                             s.mods.softcap, s.mods.window, false);
        return ws_layout::smem_bytes(s.tile.block_m, s.tile.block_n, s.head_dim, s.tile.stages, alibi_columns);
    }

    // A kernel that may loop over tiles (ws_layout::persistent) takes a 1-d grid: for short rows one block per SM (or
    // per tile, when fewer), each looping over tiles, else one block per tile (ws_layout::loops_over_tiles). Under the
    // causal mask only the looping variant does (AttentionKernelSpec::tile_loop, up to 8k keys), its blocks taking
    // tiles in pairs: at most half as many blocks as tiles where there are more tiles than SMs. Other kernels: one
    // block per tile in (query tile, head, batch).
    LaunchPlan plan(const AttentionKernelSpec& spec, const AttentionArgs& a, const DeviceInfo& device) const override {
        LaunchPlan plan = KernelFamily::plan(spec, a, device);
        if (!ws_layout::persistent(spec.tile.block_m, spec.causal, spec.head_dim, spec.tile.block_n,
                                   spec.mods.window || spec.varlen || spec.paged, spec.tile_loop, spec.mods.any()))
            return plan;
        // Causal pairs: an odd number of query tiles per head gets one more, without rows (tile/coords.cuh).
        const long long per_head = plan.launches[0].grid[0] + (spec.causal ? plan.launches[0].grid[0] % 2 : 0);
        const long long tiles = per_head * a.heads_q * a.batch;
        FA_JIT_REQUIRE(tiles <= std::numeric_limits<int>::max(), "seqlen_q",
                       fmt::format("at most 2^31 - 1 query tiles of {} rows over batch x heads_q", spec.tile.block_m),
                       std::to_string(tiles));
        const long long sms = std::max(device.multiprocessors, 1);
        long long blocks = tiles;
        if ((spec.causal || ws_layout::loops_over_tiles(a.seqlen_k)) && tiles > sms)
            blocks = spec.causal ? std::min(sms, tiles / 2) : sms;  // causal: an even count
        KernelLaunch& l = plan.launches[0];
        l.grid[0] = static_cast<unsigned>(blocks);
        l.grid[1] = l.grid[2] = 1;
        return plan;
    }

    // The kernel takes the TMA descriptors of Q, K and V beside the parameters, encoded for this call.
    void launch_kernel(const AttentionKernelSpec& spec, int, const Kernel& kernel, const LaunchConfig& config,
                       const AttentionParams& params, const AttentionArgs& a) const override {
        launch_with_ws_maps(kernel, config, params, a, spec);
    }
};

const bool registered = register_family(std::make_shared<F16WsFamily>());

}  // namespace
}  // namespace fa_jit::families
