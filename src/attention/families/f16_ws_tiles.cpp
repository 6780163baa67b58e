// The f16-ws family's tile choice: f16_ws_tiles.hpp says what; each rule below says why, with the H200 figures that
// chose it (bf16 TFLOP/s unless marked; bench/NOTES.md).
#include "attention/families/f16_ws_tiles.hpp"

#include <algorithm>

#include "attention/families/ws_tiles.hpp"
#include "attention_ws_layout.cuh"

namespace fa_jit::families {
namespace {

TileConfig tile(int block_n, int stages, int block_m = 128) {
    return ws_tile(block_n, stages, "ws", block_m);
}

// No score modifier, no packed sequences, no pages.
bool plain(const ProblemClass& p) {
    return !p.mods.any() && !p.varlen && !p.paged;
}

// Whether tile `t` of problem class `p` runs the looping variant (p names the features a spec carries).
bool loops(const TileConfig& t, const ProblemClass& p) {
    AttentionKernelSpec s{p.dtype, p.head_dim, p.causal, t};
    s.mods = p.mods, s.varlen = p.varlen, s.paged = p.paged;
    return f16_ws_tile_loop(s, p.seqlen_k);
}

// d 40-64: 192 rows (three consumer warpgroups) and 128 keys in 3 stages, without the causal mask and under it from
// 2k keys (d 64, N 512 / 2k / 16k, full: 372 / 498 / 552 against 341 / 426 / 453 with 128 rows and 317 / 434 / 483
// with 128 rows and 192 keys; causal: 177 / 361 / 526 against 190 / 344 / 466 and 167 / 336 / 495). Causal at 2k-8k
// keys, 192 x 128 leads 192 x 96 in pairs of tiles (which keeps per-step wgmma descriptors): N 2k / 4k / 8k 385 / 438 /
// 471 against 385 / 424 / 449, interleaved ("d 64 causal on 192 x 128"); with a score modifier it leads 128 x 128 by
// 2-18 % (d 64, 16k). Plain causal rows of 257-2048 keys take 256 x 64 (below).
std::vector<TileConfig> padded_64(const ProblemClass& p) {
    // Without the mask, 256, 512 or 1024 rows and keys: four consumer warpgroups on 256 rows at 64 keys, where 192-row
    // tiles pad the rows by 50 / 12.5 / 12.5 % (d 64, 16k tokens, full, bf16: N 256 / 512 / 1k 326 / 397 / 445 against
    // 226 / 374 / 430 with 192 x 128 in 3 stages, fp16 N 512 395 against 373; where 192 divides the rows 192 x 128
    // leads: N 768 459 against 420, 2k 507 against 486, 16k 530 against 480-494: "Four consumer warpgroups"). The
    // kernel table keys on the powers of two dividing seqlen_q up to 1024 (tile_alignment).
    if (plain(p) && !p.causal && p.seqlen_q <= 1024 && p.seqlen_q % 256 == 0 && p.seqlen_q % 192 != 0 &&
        p.seqlen_k <= 1024)
        return {tile(64, 3, 256), tile(128, 3, 192)};
    // Without the mask past 8k keys, 2 stages: +1.2-1.3 % (bf16 and fp16, 12k-32k; under the mask 3 stages lead by
    // 1.5 %: "Wide key tiles past 8k keys").
    if (plain(p) && !p.causal && p.seqlen_k > 8192) return {tile(128, 2, 192)};
    // Plain causal rows of 257-2048 keys (and more than 256 rows): 256 x 64, whose warpgroups each stop at their own
    // rows' diagonal (kTrimDiagonal: the diagonal costs 64 x 64 blocks). d 64, 16k tokens, bf16, N 512 / 1k / 2k: 255
    // / 337 / 406 against 247 / 310 / 351 on f16-wgmma's 64 x 64 and - / 286 / 400 on 192 x 128; at 256 keys
    // f16-wgmma leads (174 against 149), from 4k 192 x 128 (460 against 455); d 48, 1k: 260 against 233 on 128 x 128
    // ("Each warpgroup to its own diagonal").
    if (f16_ws_short_causal(p)) return {tile(64, 3, 256), tile(128, 3, 192)};
    if (!p.causal || p.seqlen_k >= 2048) return {tile(128, 3, 192), tile(128, 3)};
    return {tile(128, 3), tile(64, 3)};
}

// d 72-128: 128 keys in 3 stages (d 128, 16k: 677 full against 657 with 2 stages and 563 with 64 keys; 192 rows at 64
// keys: 650 against 689), except where a rule below measured faster.
std::vector<TileConfig> padded_128(const ProblemClass& p) {
    // Softcap's tanh doubles the softmax's MUFU operations (two per score). One warpgroup's softmax then takes about
    // as long as another's GEMMs, which two consumer warpgroups cannot hide; three (192 rows) can: 64 rows' softmax
    // against two warpgroups' GEMMs ("Softcap on 192 rows": d 128, 16k, +13 / +8 % full / causal). bf16 only: fp16
    // keeps the running max, and there 192 rows tie or lose up to 8 %. Not with a window: its kernel keeps the overlap
    // only on 128 rows (attention_f16_ws.cu, the key-step loops).
    if (p.mods.softcap && !p.mods.window && p.dtype == DType::bf16)
        return {tile(std::min(ws_layout::max_keys(192, p.head_dim), 96), 3, 192), tile(128, 3)};
    // A paged cache at d 113-128 takes 192 keys in 2 stages: the tile is a multiple of every page size's boxes, and
    // fewer, wider tiles pay the page lookups less often (16k, against 128 x 128: pages of 16 / 32 / 64 / 256
    // +0-1.5 / +3.5 / +0-1.2 / +5 % full, +5-8 / +3 / +2-3.6 / +2 % causal, fp16 at 64 +4.7 / +3.6 %; 8k, B 4: +2-5 %;
    // 160 keys lost 4 % at pages of 16; at 4k 192 keys lost 1-4 % full and tied causal). Chunked prefill (packed
    // queries over pages) too.
    if (p.paged && !p.mods.any() && p.head_dim > 112 && p.seqlen_k > 4096) return {tile(192, 2), tile(128, 3)};
    // Past 8k keys (the 16k bucket) plain and ALiBi rows take wider key tiles in 2 stages, with fewer turns and softmax
    // passes per FLOP: 176 keys under the causal mask at d 97-128 and without it at d 113-128 (16k, against 128 x 128:
    // d 128 +2.8 / +1.0 % causal / full with 176 / 160 keys, ALiBi +2.4 / +0.8 %, d 112 causal +4.1 %; 32k +3.9 /
    // +1.9 %; d 112 full lost 3.9 %, d 88-96 5-9 % against 192 x 96, and a causal window 7.4 %: "Wide key tiles past
    // 8k keys"; without the mask 176 keys lead 160 by 0.5 % since that kernel has no loop compiled in). ALiBi without
    // the mask keeps 160: its kernel keeps the loop.
    const bool plain_or_alibi = !p.mods.window && !p.mods.softcap && !p.varlen && !p.paged;
    if (plain_or_alibi && p.head_dim > (p.causal ? 96 : 112) && p.seqlen_k > 8192)
        return {tile(p.causal || !p.mods.alibi ? 176 : 160, 2), tile(128, 3)};
    // d 88-96 from 2k keys: 192 rows (d 96 with 96 keys, N 512 / 2k / 4k / 16k, full: 355 / 568 / 607 / 644 against
    // 402 / 539 / 556 / 525 with 128 x 128; causal, one tile per block: 219 / 438 / 514 / 598 against 235 / 437 / 516 /
    // 579; under the causal mask both loop over pairs of tiles up to 8k keys, where 192 rows lead from 2k: N 1k / 2k /
    // 4k / 8k 342 / 469 / 550 / 608 against 373 / 453 / 508 / 536). 112 keys without the mask (against 96: +1.6-2.3 %
    // at 2k-16k, bf16 and fp16, d 88 too; ALiBi +3.7 %, a window +1.5 %) and under it past 8k keys, where blocks do
    // not loop (+3.3-3.6 % at 12k-16k, ALiBi +1.1 %; a causal window lost 1.1 %; the looping variant spills 8 bytes at
    // 112); packed sequences too; not on pages (boxes of 16 rows: -17 % at pages of 64) nor with softcap (fp16 -1.4 %).
    const bool keys112 = (!p.causal || (p.seqlen_k > 8192 && !p.mods.window)) && !p.paged && !p.mods.softcap;
    if (p.head_dim >= 88 && p.head_dim <= 96 && p.seqlen_k >= 2048)
        return {tile(keys112 ? 112 : 96, 3, 192), tile(128, 3)};
    // ALiBi without softcap takes 2 stages, where 3 leave its columns on the tensor cores no room
    // (ws_layout::alibi_on_tensor_cores): d 128 2k / 8k +4.5 / +6 % full, +9 / +12 % causal, d 80 4k +10 / +13 %,
    // windows at 16k +7-9 % ("ALiBi's column term on the tensor cores").
    if (p.mods.alibi && !p.mods.softcap) return {tile(128, 2), tile(128, 3)};
    // Looping rows at d 113-128 (up to 1k keys without the mask, 2k under it) take 2 stages: there Q has two buffers
    // and each tile's O is staged in its own (ws_layout::q_buffers). Against 3 stages (d 128, fp16, 16k tokens,
    // alternating passes): full N 512 / 1k / 2k +2.5 / +1.3 / -0.2 %, causal +8.4 / +2.9 / +1.0 %, 4k / 8k +0.2 /
    // -0.3 % ("O staged in a second Q buffer"). d 80-112 in 2 stages (one Q buffer) lost 1-8 % at N 512 / 1k.
    if (plain(p) && p.head_dim > 112 && p.seqlen_k <= (p.causal ? 2048 : 1024)) return {tile(128, 2), tile(128, 3)};
    return {tile(128, 3), tile(64, 3)};
}

// d 136-192: 112 keys in 2 stages from 2k keys (K released after S; d 192: 770 / 756 at 16k and 535 / 663 at 2k
// against 682 / 670 and 501 / 618 with 64 keys and 3 stages, at 512 keys 289 / 462 against 303 / 461; d 160, B 4,
// N 4k: 9 / 9 %), else 64 keys in 3 stages; under the causal mask up to 4k keys, whose blocks loop over pairs of tiles
// there (d 160 / 192, N 2k: 530 / 567 against 514 / 551 with 112 keys; at 4k 592 / 638 against 603 / 648).
std::vector<TileConfig> padded_192(const ProblemClass& p) {
    // Without the mask, up to 2k keys, d 136-192 take the looping variant, where d 168-192 loop only at 96 keys (d 192,
    // N 2k: 726 against 697 with 112 keys, one tile per block).
    if (!p.causal && p.head_dim > 160 && p.seqlen_k == 2048) return {tile(96, 2), tile(112, 2)};
    if (p.seqlen_k >= (p.causal ? 4096 : 2048)) return {tile(112, 2), tile(64, 3)};
    return {tile(64, 3), tile(64, 2)};
}

// d 200-256: 80 keys in 2 stages (the largest tile that fits: d 256 662 / 556 causal / full at 16k against 626 / 505
// with 64 keys; d 224, B 4, N 4k: 7 / 5 % over 64 keys); up to 512 keys 64 keys, which divide the row where 80 leave a
// partial tile (N 512, full / causal: d 256 497 / 327 against 478 / 311, d 224 461 / 303 against 453 / 295), and whose
// blocks loop over tiles (d 256, N 512: 526-529 / 335-337 against 495 / 325 with one tile per block); under the causal
// mask, where 64 keys loop over pairs of tiles and 80 cannot, also up to 2k keys, and at d 256 up to 8k (causal,
// 80 -> 64 keys: d 256 N 1k / 1.5k / 2k / 4k / 8k 456 / 528 / 572 / 661 / 723 -> 492 / 577 / 612 / 694 / 737, d 224
// N 1k 429 -> 463, d 200 N 1k 371 -> 391 but N 4k 539 -> 524; without the mask 64 keys lead by 0-2 % at 1k-1.5k and
// trail by 1 % at 2k, so 80 stay there).
std::vector<TileConfig> padded_256(const ProblemClass& p) {
    const TileConfig keys64 = tile(64, 2), keys80 = tile(80, 2);
    const int loop_limit = p.head_dim == 256 ? 8192 : 2048;  // where 64 keys in pairs of tiles lead
    const bool short_rows = p.seqlen_k <= 512 || (p.causal && p.seqlen_k <= loop_limit && loops(keys64, p));
    return short_rows ? std::vector<TileConfig>{keys64, keys80} : std::vector<TileConfig>{keys80, keys64};
}

}  // namespace

std::vector<TileConfig> f16_ws_preferred_tiles(const ProblemClass& p) {
    switch (ws_layout::padded_head_dim(p.head_dim)) {
        case 64:
            return padded_64(p);
        case 128:
            return padded_128(p);
        case 192:
            return padded_192(p);
        default:
            return padded_256(p);
    }
}

bool f16_ws_short_causal(const ProblemClass& p) {
    return plain(p) && p.causal && p.seqlen_q > 256 && p.seqlen_k > 256 && p.seqlen_k <= 2048;
}

bool f16_ws_tile_loop(const AttentionKernelSpec& s, int seqlen_k) {
    // Packed sequences: where shared memory holds their tile table beside the tile's.
    const bool table_fits = !s.varlen || ws_layout::smem_bytes(s.tile.block_m, s.tile.block_n, s.head_dim,
                                                               s.tile.stages, false, false, true, true) <= 227 * 1024;
    return ws_layout::tile_loop(s.tile.block_m, s.causal, s.head_dim, s.tile.block_n, s.mods.window || s.paged,
                                s.mods.any(), s.varlen) &&
           table_fits &&
           (s.causal ? ws_layout::loops_over_causal_tiles(seqlen_k) : ws_layout::loops_over_tiles(seqlen_k));
}

}  // namespace fa_jit::families
