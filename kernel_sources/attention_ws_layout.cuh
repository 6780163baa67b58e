// Shared memory and legal tiles of the warp-specialized Hopper kernel (attention_f16_ws.cu), for the kernel and the
// host alike.
#pragma once

#include "attention_params.cuh"
#include "host_device.cuh"

namespace fa_jit::ws_layout {

// Query rows per block: 64 per consumer warpgroup, two, three or four of them. Three give each SM sub-partition a third
// consumer warp to issue from while the others wait on their softmax's dependencies (head dims up to 128, whose S and O
// fit the 160 registers a consumer then gets); two keep 240 registers each; four (112 registers: d <= 64 at 64 keys)
// serve rows that are whole multiples of 256, which 192-row tiles would pad (max_keys).
FA_JIT_HOST_DEVICE constexpr bool legal_rows(int block_m) {
    return block_m == 128 || block_m == 192 || block_m == 256;
}
FA_JIT_HOST_DEVICE constexpr int consumers(int block_m) {
    return block_m / 64;
}
FA_JIT_HOST_DEVICE constexpr int threads(int block_m) {  // the producer warpgroup, then the consumers
    return 128 * (consumers(block_m) + 1);
}
// setmaxnreg: the producer keeps 24 registers per thread and the consumers share what it gives back (multiples of 8;
// setmaxnreg.inc waits for registers the block's own warps released, so asking for more hangs the block): the block
// launches with the 64K register file shared evenly, in multiples of 8, which leaves 240 each for two consumers, 160
// for three and 112 for four (640 threads launch with 96).
constexpr int kProducerRegisters = 24;
FA_JIT_HOST_DEVICE constexpr int consumer_registers(int block_m) {
    return (65536 / threads(block_m) / 8 * 8 * threads(block_m) - 128 * kProducerRegisters) /
           (128 * consumers(block_m)) / 8 * 8;
}

// Head dims that are multiples of 8 up to 256 are padded to whole 64-column blocks in shared memory: TMA fills the
// columns past head_dim with zeros, which add nothing to S and produce O columns that are not stored.
FA_JIT_HOST_DEVICE constexpr int padded_head_dim(int head_dim) {
    return (head_dim + 63) / 64 * 64;
}

// Q, then the K stages, then the V stages, each padded_head_dim / 64 column blocks of [rows][64] (1024-byte aligned,
// hence the extra 1 KB), then the barriers (8 bytes each: Q full and empty; K full, V full, K empty and V empty per
// stage).
FA_JIT_HOST_DEVICE constexpr int smem_bytes(int block_m, int block_n, int head_dim, int stages) {
    return 2 * padded_head_dim(head_dim) * (block_m + 2 * stages * block_n) + 1024 + 8 * (2 + 4 * stages);
}

// A paged cache read the way the contiguous kernel reads (d <= 64 without the mask, score modifiers, packed queries or
// split-KV, key tiles of at most 128 rows, pages of whole half tiles: every tile in one or two TMA boxes): the kernel
// (kTableMap) keeps the loop and the staggered first tiles of the contiguous kernel, the producer gets each key tile's
// block-table entries by TMA (a 2-d map of the table's 16-bit halves, kTableEntries entries into shared memory,
// kTableBytes after the barriers with their own mbarrier) and the consumers check the table after the key loops.
// ptxas schedules the consumers from the whole kernel: with table loads in the producer's loop, or the check before
// the key loops, it gave them a schedule 5 % slower than the contiguous kernel's (bench/NOTES.md, "Paged d 64: the gap
// is the consumers' schedule"). Smaller pages keep the other paged kernel: one thread loading 4-8 boxes a tile ran
// 13-30 % slower than a lane per box (H200, pages of 16 and 48).
FA_JIT_HOST_DEVICE constexpr bool paged_table_map(bool paged, bool causal, int head_dim, int block_n, bool varlen,
                                                  bool score_mods, bool split) {
    return paged && !causal && padded_head_dim(head_dim) == 64 && block_n <= 128 && !varlen && !score_mods && !split;
}
// The settled max (attention_f16_ws.cu, kSettledMax): a key step's exponentials use each row's max from before the
// tile, which settles after P V only where it moved, so that no exponential waits for the tile's max. Kernels with one
// tile per block at d <= 160, past 2k keys (below, the first 16 key steps, which take the exact max, are all of them):
// H200 +2-11 % at 4k-16k, d 160 +5-6 %, d 128 causal +2.3 %; d 192 tied, and d 256 would need O's rescale before the
// turn carried from the exact steps to the settled ones. ALiBi (+13 / +7 % at d 64 / 128 16k causal): a row must meet
// its largest bias, on its diagonal, among the exact first steps; under the mask that tile leads, without it the visits
// start there (tile::diagonal_first_visit; from the stagger's tile a row's bias grew for thousands of keys, P
// overflowed in every row and the exact rows ran 80x slower). Windows up to d 128 whose rows see more than 4k keys
// (settles_max; d 128 16k +5 %; on 192 rows the two key loops, mask_loops: 16k, windows 2048 / 2048 and causal 4096 /
// 0, d 64 +0.4-2.8 %, d 96 +1.7-8 %, causal ALiBi d 64 +5.6 %; rows of 2049 keys lost 4 %, and d 128 rows of 1025
// gained 1.4-2.5 % without it), but not with ALiBi without the mask (a window's visits run from its last tile down).
// Not softcap, whose bf16 kernels take no max (bench/NOTES.md, "The settled max", "Windows: the settled max on 192
// rows").
FA_JIT_HOST_DEVICE constexpr bool settled_max(int head_dim, bool causal, int score_mods, bool varlen, bool paged,
                                              bool split, bool tile_loop) {
    const bool alibi = (score_mods & mods::kAlibi) != 0, window = (score_mods & mods::kWindow) != 0;
    const bool mods_settle = (score_mods & mods::kSoftcap) == 0 &&
                             (!window || (head_dim <= 128 && (!alibi || causal)));
    return head_dim <= 160 && mods_settle && !varlen && !paged && !split && !tile_loop;
}
// For rows of `row_keys` keys (a window's span where shorter: keys_per_row), with or without a window.
FA_JIT_HOST_DEVICE constexpr bool settles_max(int row_keys, bool window) {
    return row_keys > (window ? 4096 : 2048);
}
FA_JIT_HOST_DEVICE constexpr bool table_map_pages(int page_size, int block_n) {
    return page_size > 0 && page_size % (block_n / 2) == 0;
}
constexpr int kTableEntries = 64;  // the window of entries fetched at once: at least a key tile's (8 on pages of 16)
constexpr int kTableBoxHalves = 2 * (kTableEntries + 4);  // from a 16-byte boundary: up to 3 entries before
constexpr int kTableBytes = 512;  // the mbarrier (8 after 16-byte alignment), the box (136 bytes) 128-byte aligned

// The most keys per step for block_m rows: where a consumer's S, P and O fit its registers without spills (ptxas of
// NVRTC 13.0 with the wgmma descriptors in uniform registers). 128 rows (240 registers) take every tile. 192 rows
// (160): d 128 spills 80 bytes at 96 keys, d 96 268 at 128; before the uniform descriptors d 80 spilled 60 bytes at 96
// keys, d 112 60 at 80 and d 128 32 at 80; at d 96 and 112 keys only the causal looping variant spills, 8 bytes, and
// the host never takes it there. 256 rows (112): d <= 64 at 64 keys (80 spill 160 bytes; under the causal mask 64 keys
// spill 16 with one tile per block, none in the looping variant).
FA_JIT_HOST_DEVICE constexpr int max_keys(int block_m, int head_dim) {
    if (block_m == 128) return 192;
    if (block_m == 192) return head_dim <= 64 ? 128 : head_dim <= 96 ? 112 : head_dim <= 128 ? 80 : 0;
    return head_dim <= 64 ? 64 : 0;
}

// Masked and unmasked key tiles run in loops of their own (attention_f16_ws.cu, the key steps), except in split-KV
// decode and for a sliding window past d 128 (the second copy of the step spills) or on 192 rows. There two loops no
// longer spill (but bf16 d 64 full with softcap, 12 bytes) and alone lost 2.4-4 % (d 64 16k, windows 2048 / 2048 and
// causal 4096 / 0; d 96 -1.3 / +0.1 %); they pay with ALiBi, whose column term they bring onto the tensor cores (d 64
// 16k window 2048 / 2048 +4.0 %), and with the settled max, which runs in the unmasked loop (settled_max; H200,
// bench/NOTES.md, "Windows: the settled max on 192 rows").
FA_JIT_HOST_DEVICE constexpr bool mask_loops(bool window, bool alibi, bool softcap, bool settled, int block_m,
                                             int head_dim, bool split) {
    return !window ||
           (!split && padded_head_dim(head_dim) <= 128 && (block_m == 128 || (!softcap && (alibi || settled))));
}

// ALiBi's column term on the tensor cores (tile/alibi_columns.cuh): one more k step of S = Q K^T, whose operands sit
// behind the barriers (16-byte aligned): A, 512 bytes per consumer warpgroup, then B, the key columns [block_n][16].
// Kernels with the two key loops and ALiBi without softcap (which applies tanh to S before the bias) take it where
// shared memory has room; packed decode rows mix heads, and keep the per-score bias.
constexpr int kAlibiSlopeBytes = 512;  // A of one consumer warpgroup: 32 lanes x 16 bytes (tile::write_alibi_slope)
FA_JIT_HOST_DEVICE constexpr int alibi_columns_bytes(int block_m, int block_n) {
    return 16 + kAlibiSlopeBytes * consumers(block_m) + 32 * block_n;
}
FA_JIT_HOST_DEVICE constexpr bool alibi_on_tensor_cores(int block_m, int block_n, int head_dim, int stages, bool alibi,
                                                        bool softcap, bool window, bool split) {
    return alibi && !softcap && !split && mask_loops(window, alibi, softcap, false, block_m, head_dim, split) &&
           smem_bytes(block_m, block_n, head_dim, stages) + alibi_columns_bytes(block_m, block_n) <= 227 * 1024;
}
// Q in two buffers: the looping variant (tile_loop) at d 113-128 on 128 rows in 2 stages (where shared memory has
// room). Tiles alternate between the buffers (each with its full and empty barriers, 16 bytes behind the ring's), so a
// tile's Q loads a whole tile ahead, and a tile's O is staged in its own buffer for 16-byte stores: from the registers
// it took a quad transpose, 16 shuffles and 48 selects a row half (attention_f16_ws.cu; bench/NOTES.md, "O staged in
// a second Q buffer": d 128 N 512 causal +7-8 %). At d 64 (192 rows) it lost 1-2 %; d 80-112 keep one buffer and 3
// stages (2 stages with one buffer lost 1-8 % there; two buffers were not measured).
FA_JIT_HOST_DEVICE constexpr int second_q_bytes(int block_m, int head_dim) {
    return 2 * padded_head_dim(head_dim) * block_m + 16;
}
// Packed sequences in looping blocks: their tile table (tile/packed_tiles.cuh) after the barriers, 16-byte aligned.
constexpr int kPackedTableBytes = 1376;
FA_JIT_HOST_DEVICE constexpr int q_buffers(bool tile_loop, int block_m, int block_n, int head_dim, int stages,
                                           bool alibi_columns, bool packed_table = false) {
    return tile_loop && block_m == 128 && head_dim > 112 &&
                   smem_bytes(block_m, block_n, head_dim, stages) +
                           (alibi_columns ? alibi_columns_bytes(block_m, block_n) : 0) +
                           (packed_table ? kPackedTableBytes : 0) + second_q_bytes(block_m, head_dim) <=
                       227 * 1024
               ? 2
               : 1;
}
// The dynamic shared memory of a kernel with or without the ALiBi columns' operands, a block-table window, a
// second Q buffer and packed sequences' tile table (`packed_table`: packed sequences in looping blocks).
FA_JIT_HOST_DEVICE constexpr int smem_bytes(int block_m, int block_n, int head_dim, int stages, bool alibi_columns,
                                            bool table_map = false, bool tile_loop = false,
                                            bool packed_table = false) {
    return smem_bytes(block_m, block_n, head_dim, stages) +
           (alibi_columns ? alibi_columns_bytes(block_m, block_n) : 0) + (table_map ? kTableBytes : 0) +
           (packed_table ? kPackedTableBytes : 0) +
           (q_buffers(tile_loop, block_m, block_n, head_dim, stages, alibi_columns, packed_table) - 1) *
               second_q_bytes(block_m, head_dim);
}

FA_JIT_HOST_DEVICE constexpr bool legal(int block_m, int block_n, int head_dim, int stages) {
    return legal_rows(block_m) && block_n <= max_keys(block_m, head_dim) &&
           (block_n == 64 || block_n == 80 || block_n == 96 || block_n == 112 || block_n == 128 || block_n == 160 ||
            block_n == 176 || block_n == 192) &&
           head_dim % 8 == 0 && head_dim >= 8 && head_dim <= 256 && stages >= 2 && stages <= 4 &&
           smem_bytes(block_m, block_n, head_dim, stages) <= 227 * 1024;
}

// How a K / V stage orders its 1024-byte swizzle atoms (8 rows x 64 columns; tile/swizzle.cuh). Column block first
// (Swizzle128B: one TMA box per column block), except for a paged cache whose head dim is two or more whole column
// blocks: row group first (Swizzle128BRowGroups), so that one box of a 5-d map (64 columns, 8 rows, column blocks,
// row groups, heads) brings every column of a page's rows. Small pages then take one box per page and tensor, not one
// per column block: TMA's cost goes with the number of boxes (bench/NOTES.md, "A paged KV cache"). d 64, one column
// block, takes as many boxes either way, and ran faster through the 4-d map (H200, 16k: +6 % at pages of 16).
FA_JIT_HOST_DEVICE constexpr bool kv_row_groups(bool paged, int head_dim) {
    return paged && head_dim % 64 == 0 && head_dim > 64;
}

// Rows per TMA box of a paged K / V tile of block_n keys: the largest run that never crosses a page (page sizes and
// block_n are multiples of 16). Kernel and host (the maps' boxes) alike. Capping it at 64 or 32 rows, so that every
// tile comes in two or more boxes, gained nothing (H200; bench/NOTES.md, "Paged prefill: the producer's waits").
FA_JIT_HOST_DEVICE constexpr int paged_box_rows(int page_size, int block_n) {
    int a = page_size, b = block_n;
    while (b != 0) {
        const int r = a % b;
        a = b, b = r;
    }
    return a;
}

// Whether a kernel has a variant whose blocks loop over tiles (AttentionKernelSpec::tile_loop; a 1-d grid,
// tile/coords.cuh's tile_at order), taken for rows of up to 8k keys under the causal mask (loops_over_causal_tiles) and
// of up to 2k without it (loops_over_tiles); never with per-sequence keys (a sliding window, a paged cache). Packed
// sequences (`packed`) loop under the causal mask without score modifiers only, over the tiles of a table their blocks
// build from cu_seqlens (tile/packed_tiles.cuh). Under the mask blocks of one sequence's rows take pairs of tiles of
// about equal cost (tile_at), and a kernel for longer rows with a loop compiled in ran 1-2 % slower. Without it the
// other variant has no loop either (d 96-128 +1.6-1.9 %, d 160-256 +0.1-0.5 % at 4k-16k, H200), except at d <= 64 and
// with softcap or ALiBi, whose kernels keep the loop in every variant (without it they ran 2-6 % slower:
// bench/NOTES.md, "Kernels without the loop"). d 168-192 at 112 keys never loop: there the loop moves the wait for P V
// to the top of the softmax (bench/kernel_harness/pv_overlap.py: 0 of 58 exponentials beside P V against 19 with one
// tile per block).
FA_JIT_HOST_DEVICE constexpr bool loop_in_every_variant(bool causal, int head_dim, bool score_mods) {
    return !causal && (padded_head_dim(head_dim) == 64 || score_mods);
}
FA_JIT_HOST_DEVICE constexpr bool tile_loop(int /*block_m*/, bool causal, int head_dim, int block_n,
                                            bool per_sequence_keys, bool score_mods = false, bool packed = false) {
    if (per_sequence_keys || loop_in_every_variant(causal, head_dim, score_mods)) return false;
    if (packed && (!causal || score_mods)) return false;
    return causal || !(padded_head_dim(head_dim) == 192 && head_dim > 160 && block_n > 96);
}
// Whether a kernel may loop over tiles (its blocks take every gridDim.x-th tile, or pair, where the host launches fewer
// blocks than tiles) or takes one per block (grid: query tiles x heads x batch). Kernels with per-sequence keys never
// loop over tiles (a block's sequence is its first tile's), but those of a paged_table_map cache keep the loop
// compiled in, a block per tile, for the consumers' schedule it gives. Packed sequences loop only in their tile-loop
// variant.
FA_JIT_HOST_DEVICE constexpr bool persistent(int block_m, bool causal, int head_dim, int block_n,
                                             bool per_sequence_keys, bool tile_loop_variant, bool score_mods,
                                             bool table_map = false, bool packed = false) {
    if (per_sequence_keys) return table_map && loop_in_every_variant(causal, head_dim, score_mods);
    if (packed) return tile_loop_variant && tile_loop(block_m, causal, head_dim, block_n, false, score_mods, true);
    return loop_in_every_variant(causal, head_dim, score_mods) ||
           (tile_loop_variant && tile_loop(block_m, causal, head_dim, block_n, false, score_mods));
}
// Whether a kernel that may loop does (grid min(tiles, SMs)) rather than take one tile per block (a grid of every
// tile, each block starting at its own key tile): looping pays for short rows, whose prologue and epilogue it hides
// under the next tile's loads; from 4k keys one tile per block is faster (bench/NOTES.md).
FA_JIT_HOST_DEVICE constexpr bool loops_over_tiles(int seqlen_k) {
    return seqlen_k <= 2048;
}
// The same under the causal mask, where blocks loop over pairs of tiles of about equal cost (tile_loop): it pays up to
// 8k keys (d 128, N 4k / 8k: 643 / 686 TFLOP/s against 605 / 659 with one tile per block; at 16k 699-701 against 710).
FA_JIT_HOST_DEVICE constexpr bool loops_over_causal_tiles(int seqlen_k) {
    return seqlen_k <= 8192;
}

}  // namespace fa_jit::ws_layout
