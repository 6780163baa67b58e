// FlashAttention forward for fp16 / bf16 on Hopper, warp-specialized (sm_90a only); families "f16-ws"
// (src/attention/families/f16_ws.cpp) and, with kSplit, "decode-ws" (decode_ws.cpp).
//
//   template <typename T, int kBlockM, int kBlockN, int kHeadDim, int kStages, bool kCausal, int kMods = 0,
//             bool kVarlen = false, bool kPaged = false, bool kSplit = false, bool kTileLoop = false,
//             bool kTableMap = false, bool kSettledMax = false>
//   __global__ void attention_fwd_f16_ws(const __grid_constant__ AttentionParams p,
//                                        const __grid_constant__ TensorMap q_map, const __grid_constant__ TensorMap
//                                        k_map, const __grid_constant__ TensorMap v_map,
//                                        const __grid_constant__ TensorMap table_map);
//
// kTableMap: a paged cache whose block table the producer reads by TMA through table_map (ws_layout::paged_table_map,
// pages of ws_layout::table_map_pages); other kernels never read table_map (the host passes k_map there).
// kSettledMax: the rows' maxima settle after each key tile's exponentials (ws_layout::settled_max; the key steps say
// how), for rows of more than 2k keys, 4k under a window (ws_layout::settles_max).
//   template <typename T, int kHeadDim>
//   __global__ void attention_split_combine(const __grid_constant__ AttentionParams p);  (attention_split_combine.cuh)
//
// kSplit: split-KV decode with packed GQA rows (tile/split_block.cuh), for the decode problems that are compute-bound
// on the other decode kernels (128 packed rows per KV head: MQA with 4 tokens). Grid (row tiles x num_splits,
// heads_kv, batch); a block's 128 rows are packed (token, head) rows of one KV head, which the consumers gather into
// shared memory themselves (q_map is not read; the producer loads the first K / V stage, then waits on q_full for the
// gathers to land before the rest of the ring); its keys are its split's run of tiles, rows past seqused_k masked
// and zeroed in V (the preallocated cache may hold anything there); output as the decode kernels: O and LSE with
// one split, the split's fp32 part and LSE otherwise. Score modifiers, packed sequences and a paged cache as below, per
// packed row (tile/split_block.cuh: a packed sequence's rows are its tokens x the group).
//
// kMods: score modifiers (mods:: bits; tile/mask.cuh): a sliding window visits only the key tiles it reaches. ALiBi
// without softcap adds its column term with one more k step of S where shared memory has room for the operands
// (tile/alibi_columns.cuh, ws_layout::alibi_on_tensor_cores), and the per-row part in the softmax. Softcap at d 64 in
// bf16 computes a quarter of its exponentials on the FMA pipe (kSoftcapExp2OnFma), beside tanh on the MUFU pipe.
// kVarlen: packed sequences (tile::seq_rows): the maps hold one batch of total rows, a block's rows and keys start at
// its sequence's; rows past a sequence's end belong to the next one and are neither seen (masked) nor stored.
// kPaged: K / V in a paged cache (tile/paged_kv.cuh), and the producer looks each box's page up. Head dims that are
// two or more whole column blocks keep K / V row group first (ws_layout::kv_row_groups) and load through 5-d maps whose
// box holds every column of ws_layout::paged_box_rows rows, or of 8 rows where pages are not whole row groups apart
// (p.page_row_groups == 0; f16_ws.cpp, paged_row_group_maps); other head dims through (d, page rows, heads, pages)
// maps, one box of paged_box_rows rows per column block. A sequence's last key tile ends inside a page whose
// rows past its keys hold anything (NaN included): S masks them, and warpgroup 0 zeroes them in V before P V (0 * NaN
// would poison O). The producer loads through clamped entries from the start; meanwhile the consumers check the
// entries the sequence uses (tile::pages_ok), and on a bad one only drain the ring and store O = 0, LSE = -inf. One
// tile per block.
//
// kBlockM: 128, 192 or 256 query rows, two, three or four consumer warpgroups (ws_layout::consumers).
//
// kTileLoop (ws_layout::tile_loop): blocks loop over tiles; under the causal mask in pairs of about equal cost (a
// head's heaviest with its lightest, tile/coords.cuh tile_at), a variant the host picks for rows of up to 8k keys;
// without it for rows of up to 2k keys, at d 65-256 without softcap or ALiBi (ws_layout::loop_in_every_variant).
//
// Launch: block ws_layout::threads(kBlockM) threads (384 or 512), dynamic shared memory
// ws_layout::smem_bytes(kBlockM, kBlockN, kHeadDim, kStages). Where the kernel may loop (ws_layout::persistent:
// kTileLoop or loop_in_every_variant, without a window, packed sequences or pages but for ws_layout::paged_table_map,
// where a block takes one tile) a 1-d grid: block b works on tiles
// b, b + gridDim.x, ... (under the causal mask the pairs 2b and 2b + 1, 2 (b + gridDim.x) and 2 (b + gridDim.x) + 1,
// ...) in tile/coords.cuh's tile_at order (one head's blocks at a time, sharing its K / V in L2), looping over tiles
// for short rows (grid min(tiles, SMs), ws_layout::loops_over_tiles; under the causal mask min(tiles / 2, SMs) where
// there are more tiles than SMs), else one each. Otherwise one tile per block, grid
// (ceil(seqlen_q / kBlockM), heads_q, batch); under the causal mask heavy tiles first (tile/coords.cuh, block_index):
// tiles differ in cost, and the hardware's block scheduler balances them better than a fixed round-robin
// (bench/NOTES.md). Without the causal mask or a window, a block with one tile starts at its group's key tile
// (tile::first_visit; groups of kStaggerGroup query tiles), so that the groups running at once read different ones
// while a group's blocks read each together. Maps
// (src/launch/tensor_map.hpp, encoded per call by the family): each tensor as 4-d (d, sequence, heads, batch),
// innermost first, with its strides; boxes of 64 columns x kBlockM rows (Q) or kBlockN rows (K, V) with the 128-byte
// swizzle, so that one box is one [rows][64] column block of the wgmma layout (tile/swizzle.cuh, Swizzle128B). Rows
// past a sequence's end arrive as zeros.
//
// Warpgroup 0 produces: one thread loads each tile's Q and its K / V tiles into a kStages ring that runs on across
// tiles, each stage guarded by four mbarriers: K full and V full (transaction bytes: the tile landed), K empty (every
// consumer warp computed the tile's S) and V empty (and its P V); Q has full and empty barriers of its own. The
// warpgroup then keeps 24 registers and gives the rest to the consumers (240 each for two, 160 for three, 112 for
// four). Warpgroups 1.. each compute 64 of the query rows (tile/wgmma_gemms.cuh: S = Q K^T from shared memory, online
// softmax in registers, O += P V with P in registers), waiting only on the barriers: no block barrier after the start.
// The consumers take turns at the tensor cores (ping-pong, round the warpgroups): one's softmax overlaps the others'
// GEMMs. A turn issues S of key tile j and P V of tile j - 1, which the tensor core accumulates into O itself (rescaled
// by the softmax before), so the softmax of S also overlaps the warpgroup's own P V. (The other 16-bit families add
// each tile's P V to O from a fresh accumulator instead: here that second accumulator's registers would leave S no room
// beside it. Errors against float64 measured the same at 4k-16k keys: bench/NOTES.md.) Under the causal mask a
// warpgroup whose rows end a key tile before the tile's last rows passes its turns at those first visits
// (kTrimDiagonal), and under a sliding window at the visits past either edge of its own rows' windows (kTrimWindow).
// Q is released as soon as the tile's last S is computed, and a looping block's O goes to global memory straight from
// the registers, so the next tile's Q and K / V load during the last P V and the epilogue; where Q has two buffers
// (ws_layout::q_buffers) a tile's O is staged in its own buffer instead, which is released after the stores.
#pragma once

#include "attention_params.cuh"
#include "attention_split_combine.cuh"
#include "attention_ws_layout.cuh"
#include "dtypes.cuh"
#include "ptx.cuh"
#include "tile/alibi_columns.cuh"
#include "tile/coords.cuh"
#include "tile/epilogue.cuh"
#include "tile/exact_row.cuh"
#include "tile/f16_types.cuh"
#include "tile/mask.cuh"
#include "tile/mbarrier.cuh"
#include "tile/packed_tiles.cuh"
#include "tile/softmax.cuh"
#include "tile/split_block.cuh"
#include "tile/swizzle.cuh"
#include "tile/tma.cuh"
#include "tile/warpgroup.cuh"
#include "tile/wgmma_gemms.cuh"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "attention_f16_ws.cu needs -arch=sm_90a: TMA, mbarrier transactions, wgmma and setmaxnreg"
#endif

namespace fa_jit {

template <typename T, int kBlockM, int kBlockN, int kHeadDim, int kStages, bool kCausal, int kMods = 0,
          bool kVarlen = false, bool kPaged = false, bool kSplit = false, bool kTileLoop = false,
          bool kTableMap = false, bool kSettledMax = false>
__global__ void __launch_bounds__(ws_layout::threads(kBlockM), 1)
    attention_fwd_f16_ws(const __grid_constant__ AttentionParams p, const __grid_constant__ TensorMap q_map,
                         const __grid_constant__ TensorMap k_map, const __grid_constant__ TensorMap v_map,
                         const __grid_constant__ TensorMap table_map) {
    using namespace tile;
    constexpr bool kBf16 = IsBf16<T>::value;
    constexpr int kNTilesS = kBlockN / 8;
    constexpr int kHeadDimP = ws_layout::padded_head_dim(kHeadDim);  // whole 64-column blocks in shared memory
    constexpr int kHeadDimK = (kHeadDim + 15) / 16 * 16;             // the columns S = Q K^T reads: whole k steps
    constexpr int kDBlocks = kHeadDimP / 64;
    constexpr int kPvColumns = pv_columns(kHeadDimP, kHeadDim);  // the columns of O that P V computes
    constexpr unsigned kQBytes = 2u * kBlockM * kHeadDimP;       // TMA writes whole boxes, zeros past head_dim included
    constexpr unsigned kKVBytes = 2u * kBlockN * kHeadDimP;
    constexpr int kConsumers = ws_layout::consumers(kBlockM);  // consumer warpgroups, 64 rows each
    constexpr int kConsumerThreads = 128 * kConsumers;
    constexpr int kConsumerWarps = 4 * kConsumers;
    // Named barriers: 1..kConsumers the consumers' turns, then these two.
    constexpr int kBarrierCleanV = kConsumers < 4 ? 4 : kConsumers + 1;  // warpgroup 0 zeroed V's tail
    constexpr int kBarrierConsumers = kBarrierCleanV + 1;                // every consumer thread
    // K / V stages: column blocks of [kBlockN][64], or row groups [kBlockN / 8][kDBlocks][8][64] for a paged cache
    // (ws_layout::kv_row_groups: one TMA box per page run covers every column).
    constexpr bool kRowGroups = ws_layout::kv_row_groups(kPaged, kHeadDim);
    using KvLayout = typename Swizzle128BOrder<kRowGroups, kBlockN, kDBlocks>::type;
    static_assert(IsF16Type<T>::value, "T must be fa_jit::half_t or fa_jit::bf16_t");
    static_assert(ws_layout::legal(kBlockM, kBlockN, kHeadDim, kStages), "illegal tile (ws_layout::legal)");
    static_assert(!kSplit || kBlockM == 128, "split-KV decode packs 128 rows per block");
    static_assert(
        !kTableMap || ws_layout::paged_table_map(kPaged, kCausal, kHeadDim, kBlockN, kVarlen, kMods != 0, kSplit),
        "a block-table map only where ws_layout::paged_table_map");

    // ALiBi on the tensor cores (ws_layout::alibi_on_tensor_cores, tile/alibi_columns.cuh): behind the barriers each
    // consumer warpgroup's slopes (A), then the key columns (B).
    constexpr bool kAlibiColumns =
        ws_layout::alibi_on_tensor_cores(kBlockM, kBlockN, kHeadDim, kStages, ScoreMod<kMods>::kAlibi,
                                         ScoreMod<kMods>::kSoftcap, (kMods & mods::kWindow) != 0, kSplit);
    // Q buffers (ws_layout::q_buffers): a block's n-th tile with keys reads buffer n % kQBuffers. With two, a looping
    // block stages each tile's O in its buffer, as a block with one tile does, and releases it after the stores.
    constexpr int kQBuffers =
        ws_layout::q_buffers(kTileLoop, kBlockM, kBlockN, kHeadDim, kStages, kAlibiColumns, kVarlen && kTileLoop);
    constexpr bool kStagedLoop = kQBuffers == 2;

    extern __shared__ float4 smem_raw[];
    const unsigned sQ = (ptx::smem_address(smem_raw) + 1023u) & ~1023u;  // swizzle atoms need 1024-byte alignment
    const unsigned sK = sQ + kQBuffers * kQBytes;                        // stage s at sK + s * kKVBytes
    const unsigned sV = sK + kStages * kKVBytes;
    const unsigned s_barriers = sV + kStages * kKVBytes;
    const auto q_full = [&](int b) { return s_barriers + 16u * b; };
    const auto q_empty = [&](int b) { return s_barriers + 16u * b + 8u; };
    const auto k_full = [&](int s) { return s_barriers + 8u * (2 * kQBuffers + s); };
    const auto v_full = [&](int s) { return s_barriers + 8u * (2 * kQBuffers + kStages + s); };
    const auto k_empty = [&](int s) { return s_barriers + 8u * (2 * kQBuffers + 2 * kStages + s); };
    const auto v_empty = [&](int s) { return s_barriers + 8u * (2 * kQBuffers + 3 * kStages + s); };
    const unsigned s_alibi = (s_barriers + 8u * (2 * kQBuffers + 4 * kStages) + 15u) & ~15u;
    const auto s_alibi_slope = [&](int wg) { return s_alibi + ws_layout::kAlibiSlopeBytes * wg; };
    const unsigned s_alibi_keys = s_alibi + ws_layout::kAlibiSlopeBytes * kConsumers;
    // kTableMap: in the same place (no ALiBi there), the mbarriers of a key tile's table entries and of a ragged last
    // tile's V (which the producer zeroes past the keys before the consumers read it), then the entries.
    const unsigned table_full = s_alibi, v_tail_full = s_alibi + 8u;
    const unsigned s_table = (s_alibi + 16u + 127u) & ~127u;  // TMA: 128-byte aligned
    // Packed sequences in looping blocks (no ALiBi, no block table): their tile table in the same place.
    const auto packed_table = [&]() -> packed_tiles::Table& {
        return *reinterpret_cast<packed_tiles::Table*>(reinterpret_cast<char*>(smem_raw) +
                                                       (s_alibi - ptx::smem_address(smem_raw)));
    };
    // A stage's K is released once the tile's S is computed, its V once its P V is: the next K tile loads while the
    // warpgroups still read this V (with 2 stages, releasing both after P V kept S of tile j + 2 waiting on its load:
    // bench/NOTES.md, "K released after S, V after P V").

    // Softcap without ALiBi bounds every score to [-softcap, softcap]: up to kSoftcapNoMaxLimit (the host sets
    // p.softcap_no_max) exp2 of a bf16 kernel's scores stays within fp32 and bf16 with no running max subtracted,
    // which saves the max, its shuffles and O's rescale (bench/NOTES.md, "Softcap without a running max").
    const bool no_max = kBf16 && ScoreMod<kMods>::kSoftcap && !ScoreMod<kMods>::kAlibi && p.softcap_no_max;

    // Whether the kernel may loop over tiles (ws_layout::persistent: its kTileLoop variant, or every variant without
    // the mask at d <= 64 or with a score modifier). It does when the host launches fewer blocks than tiles (short
    // rows, ws_layout::loops_over_tiles); with a block per tile each takes one.
    // kTableMap: a paged cache read as the contiguous kernel reads: the loop, the stagger, the table by TMA and its
    // check after the key loops.
    constexpr bool kPersistent = !kSplit && ws_layout::persistent(kBlockM, kCausal, kHeadDim, kBlockN,
                                                                  (kMods & mods::kWindow) != 0 || kPaged, kTileLoop,
                                                                  kMods != 0, kTableMap, kVarlen);
    static_assert(!kTileLoop ||
                      (kPersistent && ws_layout::tile_loop(kBlockM, kCausal, kHeadDim, kBlockN, false, kMods != 0,
                                                           kVarlen)),
                  "kTileLoop: ws_layout::tile_loop");
    // Packed sequences in a looping block: the tiles of tile/packed_tiles.cuh's table (the sequences' rows, built by
    // the first warp before the block's barrier), each tile's sequence read from it as the tile is taken.
    constexpr bool kSeqPerTile = kVarlen && kPersistent;
    // This block's tiles: its n-th is tile_of(n), while below end. Without the causal mask first + n * step. Under it
    // tiles differ in cost (a head's last rows see the most keys), and a block with more than one takes them in pairs,
    // 2 (first + k * step) and the tile after: tile_at puts each head's heaviest beside its lightest, its second
    // heaviest beside its second lightest, ..., so that every pair costs about the same (bench/NOTES.md). Packed
    // sequences: the table's positions in a snake (packed_tiles::tile_of), `end` set from the table.
    const int first = kPersistent ? static_cast<int>(blockIdx.x) : 0;
    const int step = kPersistent ? static_cast<int>(gridDim.x) : 1;
    int end = kPersistent && !kSeqPerTile ? tile_count<kBlockM, kCausal>(p) : 1;
    const bool paired = kCausal && kPersistent && !kSeqPerTile && end > step;
    const bool one_tile = !kPersistent || (!kSeqPerTile && !paired && step >= end);
    const auto tile_of = [&](int n) {
        if constexpr (kSeqPerTile) return packed_tiles::tile_of(n, first, step);
        return paired ? 2 * (first + (n >> 1) * step) + (n & 1) : first + n * step;
    };
    // One tile per block visiting every key (and a first visited tile without clean-up: the paged V tail): each query
    // tile starts at its own key tile (tile::first_visit; a looping block gains nothing from it, bench/NOTES.md).
    constexpr bool kStaggerable = !kCausal && (kMods & mods::kWindow) == 0 && (!kPaged || kTableMap) && !kSplit;
    // Query tiles that start at the same key tile (tile::first_visit): a group's blocks ask for each tile together and
    // L2 serves them once. Past d 64 groups of 16 ran 2-3.5 % faster per clock at d 192 / 256 and drew less power (d
    // 128: about 2 % more clock alone); at d 64 they lost 7 % per clock to 1 (bench/NOTES.md, "Stagger groups").
    constexpr int kStaggerGroup = kHeadDim <= 64 ? 1 : 16;
    // Split-KV decode (kSplit): the block's packed rows, KV head, sequence and run of key tiles (tile/split_block.cuh).
    using Split = SplitBlock<kBlockM, kBlockN, kCausal, kMods, kVarlen, kPaged>;
    Split blk{};
    if constexpr (kSplit) {
        ptx::grid_dependency_wait();  // launched as a programmatic dependent: nothing read or written before
        blk = Split::make(p);
        ptx::launch_dependents();  // the combine kernel may be scheduled (it waits for this grid before reading)
    }
    // A block per tile under the causal mask at d <= 96, without a window: heads in groups of 8, so that the last
    // heads' heaviest tiles do not run on alone at the end of the grid (tile/head_groups.cuh). 16k tokens on an H200:
    // d 64 +5-9 %, d 96 +3-7 %, softcap 30 +2-4 %, d 96 ALiBi +7 %; d 128 lost 1-6 % with groups of 4-32, varlen and
    // paged 1-7 % (bench/NOTES.md, "Head groups").
    constexpr int kHeadGroupSize = 8;
    constexpr bool kCausalTiles =
        kCausal && !kPersistent && !kSplit && !kVarlen && !kPaged && (kMods & mods::kWindow) == 0;
    constexpr int kHeadGroup = kCausalTiles && kHeadDim <= 96 ? kHeadGroupSize : 0;
    // Packed sequences: the sequence's rows and lengths. A paged cache: the sequence's used keys (the consumers check
    // its block table while the first tiles load). kSeqPerTile: block_at reads each tile's.
    constexpr bool kSeq = kVarlen || kPaged;
    SeqRows seq{};
    const auto block_at = [&](int tile) {
        if constexpr (kSplit) {
            return BlockIndex{blk.r0, 0, blk.batch, blk.head_kv};
        } else if constexpr (kHeadGroup > 0) {
            return block_index_head_groups<kBlockM, kCausal, kHeadGroup>(p);
        } else if constexpr (kSeqPerTile) {
            return packed_tiles::tile_at<kBlockM>(p, packed_table(), tile, seq);
        } else {
            return kPersistent ? tile_at<kBlockM, kCausal>(p, tile) : block_index<kBlockM, kCausal>(p);
        }
    };

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    // One tile per block: a block past its sequence's end has nothing to do.
    if constexpr (kSeq && !kSeqPerTile) {
        const BlockIndex b = block_at(first);
        seq = seq_rows<kVarlen, kPaged, false>(p, b.batch);
        if (kVarlen && (kSplit ? blk.r0 >= blk.rows_total : b.m0 >= seq.seqlen_q)) return;
    }
    const auto seqlen_q = [&] { return kSeq ? seq.seqlen_q : p.seqlen_q; };
    const auto seqlen_k = [&] { return kSeq ? seq.seqlen_k : p.seqlen_k; };
    const auto causal_offset = [&] { return kSeq ? seq.seqlen_k - seq.seqlen_q : p.causal_offset; };
    // TMA row coordinates of the tile's row / key 0 (seq captured only where it is read).
    const auto q_row0 = [&] {
        if constexpr (kVarlen) return seq.q0;
        return 0;
    };
    const auto k_row0 = [&] {
        if constexpr (kVarlen) return seq.k0;
        return 0;
    };
    // A paged sequence staggers only where its last tile is whole: else that tile comes first, for its V tail.
    const bool stagger = kStaggerable && one_tile && (!kPaged || seqlen_k() % kBlockN == 0);
    // Where a query tile's visits start: its diagonal's key tile under ALiBi without the mask in the settled max (the
    // rows' largest biases first), else by the stagger.
    constexpr bool kDiagonalFirst = kSettledMax && ScoreMod<kMods>::kAlibi && !kCausal && !ScoreMod<kMods>::kWindow;
    const auto visit_start = [&](const KeySpan& span, int m0) {
        if constexpr (kDiagonalFirst) return diagonal_first_visit<kBlockN>(span, m0 + kBlockM - 1 + causal_offset());
        return first_visit<kBlockM, kStaggerGroup>(span, m0, stagger);
    };
    const auto map_batch = [&](const BlockIndex& b) { return kVarlen ? 0 : b.batch; };
    // The key tiles a query tile visits, last first.
    const auto span_of = [&](int m0, const ScoreMod<kMods>& mod) {
        if constexpr (kSplit)
            return KeySpan{blk.t_begin, blk.t_end};
        else
            return key_span<kBlockM, kBlockN, kCausal>(seqlen_k(), causal_offset(), m0, mod);
    };

    if (threadIdx.x == 0) {
        for (int b = 0; b < kQBuffers; ++b) {
            mbarrier::init(q_full(b), kSplit ? kConsumerWarps : 1);  // split-KV decode: the consumers' gathers landed
            mbarrier::init(q_empty(b), kConsumerWarps);
        }
        for (int s = 0; s < kStages; ++s) {
            mbarrier::init(k_full(s), 1);
            mbarrier::init(v_full(s), 1);
            mbarrier::init(k_empty(s), kConsumerWarps);
            mbarrier::init(v_empty(s), kConsumerWarps);
        }
        if (kTableMap) mbarrier::init(table_full, 1), mbarrier::init(v_tail_full, 1);
        mbarrier::fence_init();
    }
    if constexpr (kSeqPerTile)
        if (warp == 0) {
            const auto rows_of = [&](int b) { return seq_rows<true, false, false>(p, b); };
            packed_tiles::build<kBlockM>(p, packed_table(), lane, rows_of);
        }
    __syncthreads();
    if constexpr (kSeqPerTile) end = packed_tiles::count(packed_table());

    // ---- producer ---------------------------------------------------------------------------------------------------
    if (warp < 4) {
        warpgroup::release_registers<ws_layout::kProducerRegisters>();
        // One thread issues the loads; a paged cache whose tiles take many boxes keeps its warp, whose lanes look the
        // pages of a tile up at once.
        if (kPaged && !kTableMap ? warp != 0 : threadIdx.x != 0) return;
        if (!kPaged || lane == 0) {
            tma::prefetch_map(q_map);
            tma::prefetch_map(k_map);
            tma::prefetch_map(v_map);
        }
        // Paged: each key tile in boxes of paged_box_rows rows (or 8), each from its page, looked up before the waits.
        // The box size is worked out once: recomputed in every step it made the producer the bottleneck (5-20 %
        // slower: bench/NOTES.md, "Paged prefill: the producer's waits").
        const bool flat = kRowGroups && p.page_row_groups > 0;  // row groups of every page in one dim
        const int box = kRowGroups && !flat ? 8 : ws_layout::paged_box_rows(p.page_size, kBlockN);
        // A tile of at most kAloneBoxes boxes: one thread loads them all (the other lanes leave); more: lane i loads
        // box i. The loop below is inlined at both calls, each copy compiled for its case: in the one-thread copy
        // ptxas knows the thread (threadIdx.x == 0) and keeps the waits and their addresses warp-uniform; the warp's
        // copy retries its waits in loops safe for a diverged warp (YIELD) and meets at __syncwarp every stage, which
        // ran 1.5 % slower at d 64 (bench/NOTES.md, "Paged d 64: the producer warp").
        constexpr int kAloneBoxes = 2;  // kTableMap: pages of whole half tiles (ws_layout::table_map_pages)
        // one_thread: this thread loads every box of a tile, from row r on; else lane i loads box i (r = i * box).
        const auto produce = [&](bool one_thread, int r) __attribute__((always_inline)) {
            const bool leader = one_thread || lane == 0;  // waits for the stages and expects their bytes
            const int boxes = one_thread ? kAloneBoxes : 1;
            int q_loads = 0, kv_loads = 0;  // both sides count the same loads: stage and phase follow from the counts
            int table_loads = 0, window = -1;  // kTableMap: the table fetches, and the first entry of the last one
            int v_tails = 0;
            for (int n = 0, tile = tile_of(0); tile < end; tile = tile_of(++n)) {
                const BlockIndex bi = block_at(tile);
                const KeySpan span = span_of(bi.m0, ScoreMod<kMods>::make(p, 0));
                // tile_at's extra tile (a causal head's odd tile count) has no rows
                const int n_block_max = kCausal && kTileLoop && bi.m0 >= seqlen_q() ? 0 : span.count();
                if (n_block_max == 0) continue;
                const int start = visit_start(span, bi.m0);
                if (leader && !kSplit) {  // split-KV decode: the consumers gather the packed Q rows themselves
                    const int qb = q_loads % kQBuffers;
                    mbarrier::wait(q_empty(qb), ((q_loads++ / kQBuffers) & 1u) ^ 1u);  // the first trip finds it empty
                    mbarrier::arrive_expect_tx(q_full(qb), kQBytes);
#pragma unroll
                    for (int dc = 0; dc < kDBlocks; ++dc)
                        tma::load_4d(sQ + qb * kQBytes + dc * (kBlockM * 128u), q_map, dc * 64, q_row0() + bi.m0,
                                     bi.head, map_batch(bi), q_full(qb));
                }
                for (int it = 0; it < n_block_max; ++it, ++kv_loads) {
                    // Split-KV decode: the first stage, then the rest once the consumers' Q gather has landed. Every
                    // block starts at once, and the gathers would otherwise wait behind the whole grid's ring of loads
                    // (bench/NOTES.md, "decode-ws: where a call's fixed cost goes").
                    if (kSplit && it == 1) mbarrier::wait(q_full(0), 0);
                    const int s = kv_loads % kStages;
                    const int n0 = span.visit(it, start) * kBlockN;
                    if constexpr (kPaged) {
                        const PagedKv<unsigned short> pages = PagedKv<unsigned short>::keys(p, bi.head_kv, bi.batch);
                        const auto mine = [&](int i) { return i < boxes && r + i * box < kBlockN; };
                        // kTableMap: the tile's entries by TMA (entry first_entry on: the 16-bit halves of the table
                        // from the map's base), each box's page then read from shared memory as it loads.
                        // A window of the table's entries, fetched again only when the tile's pages leave it. The box
                        // starts at a 16-byte boundary of the map (TMA's inner coordinate), up to 3 entries before
                        // the tile's first.
                        if constexpr (kTableMap) {
                            const int e0 = pages.entry_of(n0), e1 = pages.entry_of(n0 + kBlockN - 1);
                            if (window < 0 || e0 < window || e1 >= window + ws_layout::kTableEntries) {
                                const int first_half = 2 * (bi.batch * p.pages_per_seq + e0) + p.table_map_offset;
                                window = e0 - (first_half & 7) / 2;
                                mbarrier::arrive_expect_tx(table_full, 2u * ws_layout::kTableBoxHalves);
                                tma::load_2d(s_table, table_map, first_half & ~7, 0, table_full);
                                mbarrier::wait(table_full, table_loads++ & 1u);
                            }
                        }
                        const int first_entry = kTableMap ? window : 0;
                        int in_page[kTableMap ? 1 : kAloneBoxes] = {}, page[kTableMap ? 1 : kAloneBoxes] = {};
#pragma unroll
                        for (int i = 0; i < kAloneBoxes; ++i)  // looked up before the waits, which hide the latency
                            if (!kTableMap && mine(i)) page[i] = pages.page_of(n0 + r + i * box, in_page[i]);
                        const auto box_page = [&](int i, int& row) {
                            if constexpr (kTableMap) return pages.page_of(n0 + r + i * box, row, first_entry, s_table);
                            row = in_page[i];
                            return page[i];
                        };
                        const unsigned empty_phase = ((kv_loads / kStages) & 1u) ^ 1u;
                        // One tensor's boxes once its stage is free (the leader waits and expects the bytes): K's
                        // before the wait for V's stage, as without pages. Waiting for both stages first held K's load
                        // back until the P V before it completed; that producer ran 1-20 % slower (H200, d 64-128,
                        // pages of 16-16384; 14 % on MQA decode: bench/NOTES.md, "Paged prefill: the producer's
                        // waits").
                        const auto load_boxes = [&](unsigned empty, unsigned full, unsigned smem,
                                                    const TensorMap& map) {
                            if (leader) {
                                mbarrier::wait(empty, empty_phase);
                                mbarrier::arrive_expect_tx(full, kKVBytes);
                            }
                            if (!one_thread) __syncwarp();  // the bytes expected before any box lands
#pragma unroll
                            for (int i = 0; i < kAloneBoxes; ++i) {
                                if (!mine(i)) continue;
                                const int ri = r + i * box;
                                int row;
                                const int pg = box_page(i, row);
                                if (kRowGroups) {  // (64 columns, 8 rows, column blocks, ...)
                                    const int c1 = flat ? 0 : row;
                                    const int c3 = flat ? pg * p.page_row_groups + row / 8 : bi.head_kv;
                                    const int c4 = flat ? bi.head_kv : pg;
                                    tma::load_5d(smem + s * kKVBytes + ri / 8 * KvLayout::kGroupStride, map, 0, c1, 0,
                                                 c3, c4, full);
                                } else {
#pragma unroll
                                    for (int dc = 0; dc < kDBlocks; ++dc)
                                        tma::load_4d(smem + s * kKVBytes + dc * (kBlockN * 128u) + ri * 128u, map,
                                                     dc * 64, row, bi.head_kv, pg, full);
                                }
                            }
                        };
                        load_boxes(k_empty(s), k_full(s), sK, k_map);
                        // kTableMap: a tile past the keys' end (the ragged last one, visited first) lands on a barrier
                        // of its own; its V rows past the keys, which may hold anything, become zeros (P V would
                        // multiply them by P = 0), visible to the wgmmas, and only then is V full.
                        const int valid = seqlen_k() - n0;
                        const bool v_tail = kTableMap && valid < kBlockN;
                        load_boxes(v_empty(s), v_tail ? v_tail_full : v_full(s), sV, v_map);
                        if (v_tail) {
                            mbarrier::wait(v_tail_full, v_tails++ & 1u);
                            // The rows past the keys are whole 128-byte lines of each column block: one byte range.
                            // Chunk by chunk through the swizzle it took 25 cycles a store, up to 6.5 % of a block
                            // at 8k keys (bench/NOTES.md, "Paged d 64: the table-map kernel merged").
                            static_assert(!kTableMap || !kRowGroups, "column blocks of [kBlockN][64]");
#pragma unroll
                            for (int dc = 0; dc < kDBlocks; ++dc) {
                                const unsigned block = sV + s * kKVBytes + dc * (kBlockN * 128u);
#pragma unroll 8
                                for (unsigned b = valid * 128u; b < kBlockN * 128u; b += 16u)
                                    ptx::st_shared_zero16(block + b);
                            }
                            wgmma::fence_proxy_async();
                            mbarrier::arrive(v_full(s));
                        }
                    } else {
                        const unsigned empty_phase = ((kv_loads / kStages) & 1u) ^ 1u;  // the first trip finds it empty
                        mbarrier::wait(k_empty(s), empty_phase);
                        mbarrier::arrive_expect_tx(k_full(s), kKVBytes);
#pragma unroll
                        for (int dc = 0; dc < kDBlocks; ++dc)
                            tma::load_4d(sK + s * kKVBytes + dc * (kBlockN * 128u), k_map, dc * 64, k_row0() + n0,
                                         bi.head_kv, map_batch(bi), k_full(s));
                        mbarrier::wait(v_empty(s), empty_phase);
                        mbarrier::arrive_expect_tx(v_full(s), kKVBytes);
#pragma unroll
                        for (int dc = 0; dc < kDBlocks; ++dc)
                            tma::load_4d(sV + s * kKVBytes + dc * (kBlockN * 128u), v_map, dc * 64, k_row0() + n0,
                                         bi.head_kv, map_batch(bi), v_full(s));
                    }
                }
            }
        };
        if (!kPaged || kTableMap || (kBlockN + box - 1) / box <= kAloneBoxes) {
            if (threadIdx.x != 0) return;
            produce(true, 0);
        } else {
            produce(false, lane * box);
        }
        return;
    }

    // ---- consumers -------------------------------------------------------------------------------------------------
    warpgroup::claim_registers<ws_layout::consumer_registers(kBlockM)>();
    const float kNegInf = neg_inf_f32();
    const int cw = warp - 4;        // consumer warp 0..kConsumerWarps - 1
    const int warp_row0 = cw * 16;  // its 16 rows of the block's kBlockM
    // wgmma descriptors from uniform bases: the warpgroup through warpgroup::index() (its descriptors of Q then live in
    // uniform registers) and each k step's descriptors advanced from the tile's (kStepped of issue_qk). The issue
    // windows shorten by 20-50 % and most tiles gained 1-4 %; d 40-64's 192 x 96 looping tile lost 2-3.5 % (H200, N 2k
    // / 8k causal: ptxas schedules it otherwise) and keeps the per-step encoding (bench/NOTES.md, "wgmma descriptors").
    constexpr bool kUniformDescriptors = !(kTileLoop && kBlockM == 192 && kBlockN == 96 && kHeadDimP == 64);
    // Warps whose rows all keep their max skip O's rescale (tile/softmax.cuh, softmax_row_max): -1 = never skip; 0 =
    // rows keep their max where no key passes it (the numbers unchanged); n > 0: a row's max moves only when a tile's
    // passes it by more than n (log2 units). 8 ran 1-4 % faster at d 64-128 but raised the error by up to 6 %; 0 runs
    // 1-1.4 % faster at d 64 / 96 (16k), ties at d 128 and loses 1 % at d 128, 2k and 4.5 % on d 64's 192 x 96
    // looping tile; d 80 / 96 on 128 rows lost up to 3.6 % (H200; bench/NOTES.md, "A lazy running max", "A lazy max
    // after the first key steps").
    constexpr int kLazyRescaleLog2 =
        kHeadDim <= 96 && (kHeadDimP == 64 || kBlockM >= 192) && kUniformDescriptors ? 0 : -1;
    // From key step kLazyAfterSteps of a block on (0 = never), rows keep their max within kLazyLateLog2. By then a
    // row's largest score weighs little, so its P losing the exact 1.0 adds about 1 % of error (6 % at N 512), and
    // rows shorter than that many tiles keep exact numbers. d 64 full and d 96 gain 2-2.7 % at 16k (d 96 loses 1-2.8 %
    // at 2k); d 64 causal lost 1.3 % and d 128 up to 1.8 % (H200; bench/NOTES.md, "A lazy max after the first key
    // steps").
    constexpr int kLazyAfterSteps = kLazyRescaleLog2 == 0 && !(kCausal && kHeadDimP == 64) ? 16 : 0;
    constexpr int kLazyLateLog2 = 8;
    // The settled max (the key steps below; ws_layout::settled_max says where and why).
    static_assert(!kSettledMax || ws_layout::settled_max(kHeadDim, kCausal, kMods, kVarlen, kPaged, kSplit, kTileLoop),
                  "the settled max only where ws_layout::settled_max");
    constexpr int kSettleSteps = 16;
    constexpr float kSettleSum = 256.f;
    constexpr float kSettleLimit = 1.329228e36f;  // 2^120
    // Softcap at d 64: its tanh and the exponential, two MUFU operations a score, bind the key step while the FMA pipe
    // has room; kSoftcapExp2OnFma of every 8 n-tiles of S take their exponentials there (Exp2Split, exp2_fma.cuh;
    // degree 3: relative error 7.5e-5 against bf16's rounding of P at 2^-9). 16k, 2 of 8: bf16 +3.2 / +0.8 % full /
    // causal; 3 and 4 of 8, degree 4, fp16 (with its running max) and d 128 lose (H200; bench/NOTES.md, "Softcap's
    // FMA-pipe exponentials merged").
    constexpr bool kSoftcapExp2Split = ScoreMod<kMods>::kSoftcap && kHeadDimP == 64 && kBf16;
    constexpr int kSoftcapExp2OnFma = 2;
    constexpr int kSoftcapExp2Degree = 3;
    using Exp2 = Exp2Split<kSoftcapExp2Split ? kSoftcapExp2OnFma : 0, kSoftcapExp2Degree>;
    // Which of the softmax's equivalent code forms (tile/softmax.cuh, softmax_form; the same numbers bit for bit):
    // ptxas schedules each otherwise, and these kernels ran faster on the form named here than on the default in two
    // interleaved A / B runs each (H200, 16k, B 1): plain d 96 without the mask +2.7 % (bf16 and fp16), softcap at d 64
    // +4.3 %, at d 128 +1.0 / +2.8 % (full / causal), with a window at d 64 +0.8 %; a window alone at d 64 +1.8 %,
    // ALiBi causal at d 64 / 128 +1.3 % (bf16), plain causal d 64 on 256-row looping tiles +1.1 % (N 512-2k). Plain d
    // 64 one tile per block and d 128 lost up to 3 % on every form but the max seed (a tie), and forms that spill
    // (softcap at d 64 with the rows interleaved: +6.5 % but 88 bytes) are not taken (bench/NOTES.md, "The softmax's
    // code forms"). The packed, d 128 two-stage looping and d 96 causal kernels found no form past noise; the other
    // looping, paged and split kernels were not measured; all keep 0.
    constexpr bool kOneTile = !kVarlen && !kPaged && !kSplit && !kTileLoop;
    constexpr int kSumRows = softmax_form::kSumSeed | softmax_form::kRowsInterleaved;
    constexpr int kReversedMax = softmax_form::kRowsReversed | softmax_form::kMaxSeed;
    constexpr int kReversedRows = softmax_form::kRowsReversed | softmax_form::kRowsInterleaved;
    constexpr int kSoftmaxForm =
        kMods == 0 && kHeadDim == 64 && kCausal && kBlockM == 256      ? kReversedMax
        : !kOneTile                                                    ? 0
        : kMods == 0 && kHeadDim == 96 && !kCausal && kBlockM == 192   ? kReversedMax
        : !kBf16                                                       ? 0
        : kMods == mods::kSoftcap && kHeadDim == 64                    ? (kCausal ? 0 : kReversedMax)
        : kMods == (mods::kSoftcap | mods::kWindow) && kHeadDim == 64 ? (kCausal ? 0 : kSumRows)
        : kMods == mods::kSoftcap && kHeadDim == 128                   ? (kCausal ? kSumRows : softmax_form::kMaxSeed)
        : kMods == mods::kWindow && kHeadDim == 64 && !kCausal         ? softmax_form::kMaxSeed
        : kMods == mods::kAlibi && kHeadDim == 64 && kCausal           ? kSumRows
        : kMods == mods::kAlibi && kHeadDim == 128 && kCausal          ? kReversedRows
                                                                       : 0;
    // Masked and unmasked key tiles in loops of their own (the key steps below say where and why).
    constexpr bool kMaskLoops = ws_layout::mask_loops(ScoreMod<kMods>::kWindow, ScoreMod<kMods>::kAlibi,
                                                      ScoreMod<kMods>::kSoftcap, kSettledMax, kBlockM, kHeadDim,
                                                      kSplit);
    // Under the causal mask each warpgroup stops at its own 64 rows' diagonal, not the tile's: on 256 x 64 tiles
    // the first three warpgroups skip 3, 2 and 1 of a tile's key steps (a 64 x 64 granularity on the diagonal). Where
    // a warpgroup's rows can end a key tile before the tile's last rows do at Nq = Nk: more than two warpgroups, or
    // key tiles of 64 (d 64 causal, 16k tokens, N 512 / 1k / 2k: +17 / +12 / +7 % on 256 x 64, +4-5 % on 192 x 128;
    // 128 x 64 at d 160-256, N 512: +2-4 %; 128 x 128 and wider never skip there, and d 128 lost up to 1.6 % to the
    // extra code: bench/NOTES.md, "Each warpgroup to its own diagonal").
    constexpr bool kTrimDiagonal = kCausal && !kSplit && (kBlockM > 128 || kBlockN <= 64);
    // Under a sliding window each warpgroup visits only its own 64 rows' keys: it passes its turns at the first visits
    // past its last row's right edge and at the last visits before its first row's left edge, and releases those
    // stages unread. Where a warpgroup's keys can span a key tile fewer than the tile's, as above: d 64 on 192 x 128,
    // 16k, windows 2048 / 2048 and causal 4096 / 0: +2.5 / +1.2 %; d 128 on 128 x 128 -0.1 / -0.4 % (H200;
    // bench/NOTES.md, "Each warpgroup to its own window").
    constexpr bool kTrimWindow = ScoreMod<kMods>::kWindow && !kSplit && (kBlockM > 128 || kBlockN <= 64);
    // ALiBi off its diagonal as one FFMA per score, its per-row part in the softmax (tile/mask.cuh,
    // modify_fragment_one_side); tiles crossing the diagonal take the masked loop. +6 / +10 % at d 128 full / causal,
    // +5 % at d 96 causal, +1.7 % at d 64 full (16k); d 64 causal lost 3-4 % and keeps the per-score form (H200;
    // bench/NOTES.md, "ALiBi off the diagonal"). Split-KV decode packs rows of several heads and keeps modify_scores; a
    // kernel with one loop would branch on the mask per step. Kernels with the ALiBi columns (kAlibiColumns) have the
    // column term added by the tensor cores instead, and the same per-row part (kAlibiOffDiagonal).
    constexpr bool kAlibiSplit =
        ScoreMod<kMods>::kAlibi && !kAlibiColumns && !kSplit && kMaskLoops && !(kCausal && kHeadDimP == 64);
    constexpr bool kAlibiOffDiagonal = kAlibiSplit || kAlibiColumns;
    // A warpgroup whose 64 rows all lie past the sequence's end (a ragged last tile: 192-row tiles at 2k or 16k rows,
    // packed sequences) skips its GEMMs and softmax, so that the tile's other warpgroups have the tensor cores to
    // themselves: 1 of 33 warpgroup tiles at 2k rows, 2 of 258 at 16k. 192-row tiles only, at d 64 under the causal
    // mask, at d 72-128 under it without the loop and without it in the loop (H200: +0.3-1.9 %); elsewhere it cost
    // 0.5-2 % (256 rows, which have no such tile at 2k; d 96 causal in the loop, full without it) or moved d 64's wait
    // for P V ahead of the step's exponentials (bench/NOTES.md, "Warpgroups with no rows"). Split-KV decode's rows are
    // packed (blk).
    constexpr bool kSkipRowless =
        !kSplit && kBlockM == 192 && (kHeadDimP == 64 ? kCausal : kCausal != kTileLoop);
    const int wg = kUniformDescriptors ? warpgroup::index() - 1 : cw / 4;  // consumer warpgroup 0..kConsumers - 1
    const int wg_row0 = wg * 64;  // its warpgroup's 64 rows (the A operand of S)
    const int g = lane / 4;
    const int t = lane % 4;
    // The key tile's S in one instruction per k step, which reads the Q slice once (at 192 keys: 3-4% faster than
    // three of 64, bench/NOTES.md).
    constexpr int kQkN = kBlockN;

    // Ping-pong: a warpgroup issues its GEMMs only in its turn (named barrier 1 + wg) and hands the turn to the next
    // one as soon as they are issued. A turn holds S of the next key tile and P V of the previous one, back to back.
    // Turns go round the warpgroups across the block's tiles; the last warpgroup hands over before the first and not
    // after the last.
    const auto take_turn = [&] { warpgroup::sync(1 + wg, 256); };
    const auto pass_turn = [&] { warpgroup::arrive(1 + (wg + 1) % kConsumers, 256); };
    const bool last_wg = wg == kConsumers - 1;
    if constexpr (kAlibiColumns) {  // the key columns, once per block, before any wgmma reads them
        write_alibi_keys<kBf16, kBlockN>(s_alibi_keys, threadIdx.x - 128, kConsumerThreads);
        wgmma::fence_proxy_async();
        warpgroup::sync(kBarrierConsumers, kConsumerThreads);
    }
    bool turns_started = false;  // by the last warpgroup's first pass, before the block's first tile with keys
    int q_loads = 0, kv_loads = 0;
    for (int n = 0, tile = tile_of(0); tile < end; tile = tile_of(++n)) {
        const BlockIndex bi = block_at(tile);
        const int m0 = bi.m0;
        const ScoreMod<kMods> mod = ScoreMod<kMods>::make(p, bi.head);
        const KeySpan span = span_of(m0, mod);
        if constexpr (kAlibiColumns) {  // this head's slope, by the warpgroup's first warp (its wgmmas have completed)
            if (cw % 4 == 0) write_alibi_slope<T>(s_alibi_slope(wg), mod.slope, lane);
            wgmma::fence_proxy_async();
        }
        const int n_block_max = kCausal && kTileLoop && m0 >= seqlen_q() ? 0 : span.count();  // as the producer's
        const int start = visit_start(span, m0);  // visits: span.visit(it, start)

        float acc_o[kDBlocks][8][4];
        clear_accumulator(acc_o);
        float m_i[2] = {kNegInf, kNegInf};
        float l_i[2] = {0.f, 0.f};
        int overflowed = 0;  // kSettledMax: bit h, row h's P overflowed in some key step (settle, below)
        // Split-KV decode: keys [0, limit) for rows g and g + 8 (a packed row's token decides), or with score
        // modifiers each row's keys, diagonal and slope.
        const int limit[2] = {kSplit ? blk.key_limit(warp_row0 + g) : 0, kSplit ? blk.key_limit(warp_row0 + 8 + g) : 0};
        RowKeys row_keys[2];
        if constexpr (kSplit && kMods != 0)
            row_keys[0] = blk.row_keys(p, warp_row0 + g), row_keys[1] = blk.row_keys(p, warp_row0 + 8 + g);
        // Whether visit it's key tile needs the per-element mask: the tile past the keys' end, the causal diagonal's,
        // a window's edges (split-KV decode with score modifiers hides keys in modify_scores, on every tile).
        const auto tile_masked = [&](int it) {
            const int n0 = span.visit(it, start) * kBlockN;
            if constexpr (kSplit)
                return kMods == 0 && blk.needs_mask(n0);
            else
                return tile_needs_mask<kBlockN, false, kCausal>(n0, m0, seqlen_k(), causal_offset()) ||
                       window_needs_mask<kBlockM, kBlockN>(n0, m0, causal_offset(), mod) ||
                       (kAlibiOffDiagonal && !kCausal && alibi_crosses<kBlockM, kBlockN>(n0, m0, causal_offset()));
        };
        // With kAlibiColumns, S's extra k step for visit it: the ALiBi column term, zero on a masked tile (which takes
        // modify_fragment); otherwise nothing.
        const auto alibi_step = [&](int it, bool masked) {
            if constexpr (kAlibiColumns) {
                const int n0 = span.visit(it, start) * kBlockN;
                const unsigned long long slope =
                    alibi_slope_desc(s_alibi_slope(wg), masked, alibi_side<kBlockN>(n0, m0, causal_offset()));
                const unsigned long long keys = alibi_keys_desc(s_alibi_keys);
                return [slope, keys](float(&acc)[kNTilesS][4]) {
                    issue_alibi_columns<kBf16, kBlockN, kQkN>(acc, slope, keys);
                };
            } else {
                return NoExtraStep{};
            }
        };
        // The score modifiers on every tile, and the mask on the tiles that need it (`masked`: a constant at every call
        // once inlined, so that no branch on it falls between the waits for S and for P V). ALiBi on an unmasked tile
        // leaves its per-row part in `bias` for the softmax (kAlibiOffDiagonal), and with kAlibiColumns its column
        // part came with S.
        const auto mask_scores = [&](float(&acc_s)[kNTilesS][4], int n0, bool masked, RowBias& bias) {
            if constexpr (kAlibiColumns) {
                if (!masked) {
                    bias = alibi_row_bias(m0 + warp_row0, g, n0, causal_offset(),
                                          alibi_side<kBlockN>(n0, m0, causal_offset()) * mod.slope);
                    return;
                }
                bias = RowBias{};
            } else if constexpr (kAlibiSplit) {
                if (!masked) {
                    modify_fragment_one_side(acc_s, m0 + warp_row0, n0, g, t, causal_offset(), mod,
                                             alibi_side<kBlockN>(n0, m0, causal_offset()), bias);
                    return;
                }
                bias = RowBias{};
            }
            if constexpr (kSplit && kMods == 0) {
                if (masked) blk.hide_past_limits(acc_s, n0, t, limit, kNegInf);
            } else if constexpr (kSplit) {
                blk.modify_scores(acc_s, n0, t, row_keys, mod, kNegInf);
            } else if constexpr (kMods == 0) {
                if (masked)
                    mask_fragment<false, kCausal>(acc_s, m0 + warp_row0, n0, g, t, seqlen_k(), causal_offset(),
                                                  kNegInf);
            } else {
                modify_fragment(acc_s, m0 + warp_row0, n0, g, t, causal_offset(), mod);
                if (masked)
                    mask_fragment<false, kCausal>(acc_s, m0 + warp_row0, n0, g, t, seqlen_k(), causal_offset(), kNegInf,
                                                  mod);
            }
        };

        // Paged: the first key tile visited (the sequence's last, `load` of the ring) may end inside a page, whose
        // rows past the keys hold anything; split-KV decode: inside the preallocated cache, past the keys the rows
        // see (seqused_k, the causal diagonal). Warpgroup 0 zeroes them in V before its first turn: every P V of the
        // tile comes in a later turn (outside the loop, which would serialize its wgmmas).
        const auto clean_v_tail = [&](int load) {
            if constexpr (kPaged || kSplit) {
                const int valid = (kSplit ? blk.key_end : seqlen_k()) - (span.end - 1) * kBlockN;  // at least 1
                if (wg != 0 || valid >= kBlockN) return;
                const int stage = load % kStages;
                mbarrier::wait(v_full(stage), (load / kStages) & 1u);
                const int row_chunks = (kBlockN - valid) * 8;  // 16-byte chunks past the keys, per column block
                for (int c = static_cast<int>(threadIdx.x) - 128; c < kDBlocks * row_chunks; c += 128) {
                    const int r = valid + c % row_chunks / 8;  // every chunk of the row: no swizzle to follow
                    ptx::st_shared_zero16(sV + stage * kKVBytes + KvLayout::offset(r, c / row_chunks * 8 + c % 8));
                }
                wgmma::fence_proxy_async();  // visible to the wgmmas (async proxy) of every warpgroup
                warpgroup::sync(kBarrierCleanV, 128);
            }
        };
        // A warp is done with a stage's K (its S completed) or V (its P V completed).
        const auto release = [&](unsigned empty) {
            __syncwarp();
            if (lane == 0) mbarrier::arrive(empty);
        };
        // The warp is done with load `load`'s K and V without reading them (a paged sequence's bad table, key steps
        // past the warpgroup's rows' diagonal or window): it waits for them first, so that its arrivals count for this
        // load.
        const auto release_unread = [&](int load) {
            const int s = load % kStages;
            const unsigned phase = (load / kStages) & 1u;
            mbarrier::wait(k_full(s), phase);
            mbarrier::wait(v_full(s), phase);
            release(k_empty(s));
            release(v_empty(s));
        };
        // Split-KV decode: the warp's part of the packed Q rows landed (or there is nothing to gather).
        const auto release_q_gathered = [&] {
            __syncwarp();
            if (lane == 0) mbarrier::arrive(q_full(0));
        };
        // The tile's last S has been computed (kStagedLoop: its O stored): its Q buffer may take another tile's rows.
        const int qb = q_loads % kQBuffers;
        const auto release_q = [&] {
            if (lane == 0) mbarrier::arrive(q_empty(qb));
        };

        // A paged sequence whose table names a page outside the cache has no keys: the tiles the producer loads
        // anyway are waited for and released unread, and the rows get O = 0, LSE = -inf. kTableMap checks after the
        // key loops instead (below).
        const bool bad_table = kPaged && !kTableMap &&
                               warpgroup::any(kBarrierConsumers, kConsumerThreads,
                                              !pages_ok(p, bi.batch, seqlen_k(), threadIdx.x - 128, kConsumerThreads));
        if (bad_table && n_block_max > 0) {
            if constexpr (kSplit)  // nothing to gather: let the producer go on
                release_q_gathered();
            else
                mbarrier::wait(q_full(qb), (q_loads++ / kQBuffers) & 1u);
            for (int it = 0; it < n_block_max; ++it) release_unread(kv_loads + it);
            kv_loads += n_block_max;
        } else if (kSkipRowless && n_block_max > 0 && m0 + wg_row0 >= seqlen_q()) {
            // Every row of the warpgroup past the sequence's (the ragged last tile): it takes and passes each turn
            // and releases each stage unread, as a working warpgroup does its skipped visits, and computes nothing;
            // its rows are not stored.
            if (last_wg && !turns_started) pass_turn();
            turns_started = true;
            mbarrier::wait(q_full(qb), (q_loads++ / kQBuffers) & 1u);
            for (int it = 0; it < n_block_max; ++it) {
                take_turn();
                pass_turn();
                release_unread(kv_loads + it);
            }
            if (!kStagedLoop) release_q();
            take_turn();  // the turn of the last P V
            if (!last_wg || paired || tile_of(n + 1) < end) pass_turn();
            kv_loads += n_block_max;
        } else if (n_block_max > 0) {
            if (last_wg && !turns_started) pass_turn();  // warpgroup 0 goes first
            turns_started = true;
            unsigned p_frag[kNTilesS][2];  // P as T pairs: [nt][h] = columns (2t, 2t + 1) of row g + 8h
            float alpha[2];
            if constexpr (kSplit) {  // the packed rows of Q (several heads per token), then visible to wgmma
                blk.template gather_q<Swizzle128B<kBlockM>, kConsumerThreads, kHeadDimP / 8, kHeadDim>(
                    sQ, p, threadIdx.x - 128);
                ptx::cp_async_commit();
                ptx::cp_async_wait<0>();
                release_q_gathered();
                wgmma::fence_proxy_async();
                warpgroup::sync(kBarrierConsumers, kConsumerThreads);
            } else {
                mbarrier::wait(q_full(qb), (q_loads++ / kQBuffers) & 1u);
            }
            const int kv0 = kv_loads;
            if constexpr ((kPaged && !kTableMap) || kSplit) clean_v_tail(kv0);  // kTableMap: the producer's
            // Under the causal mask or a window the warpgroup's own rows may end before the tile's last key tiles,
            // its first visits: it passes its turns there, waits for those stages and releases them unread
            // (kTrimDiagonal, kTrimWindow). Under a window its first row may also start after the tile's first key
            // tiles, its last visits (below, after its last P V). Its own visits: [skip, visits), at least one.
            int skip = 0, trimmed_visits = n_block_max;
            if constexpr (kTrimDiagonal || kTrimWindow) {
                int last_visible = m0 + wg_row0 + 63 + causal_offset();  // the warpgroup's last row's last key
                if (kTrimWindow && !kCausal) last_visible += mod.right;
                const int last_tile = last_visible < 0 ? -1 : last_visible / kBlockN;
                skip = min(max(span.end - 1 - last_tile, 0), n_block_max - 1);
                if constexpr (kTrimWindow) {  // visits run from the last key tile down (no stagger under a window)
                    const int first_visible = m0 + wg_row0 + causal_offset() - mod.left;  // its first row's first key
                    const int first_tile = first_visible <= 0 ? 0 : first_visible / kBlockN;
                    trimmed_visits = max(min(span.end - first_tile, n_block_max), skip + 1);
                }
                for (int it = 0; it < skip; ++it) {
                    take_turn();
                    pass_turn();
                    release_unread(kv0 + it);
                }
            }
            const int visits = kTrimWindow ? trimmed_visits : n_block_max;
            const int kv_first = kv0 + skip;
            mbarrier::wait(k_full(kv_first % kStages), (kv_first / kStages) & 1u);
            {
                float acc_s[kNTilesS][4];
                take_turn();
                issue_qk<kBf16, kBlockM, kBlockN, kHeadDimK, kQkN, KvLayout, kUniformDescriptors>(
                    acc_s, sQ + qb * kQBytes, wg_row0, sK + (kv_first % kStages) * kKVBytes,
                    alibi_step(skip, kAlibiColumns && tile_masked(skip)));
                pass_turn();
                wgmma::wait<0>();
                wgmma::hold(acc_s);
                release(k_empty(kv_first % kStages));
                if (!kStagedLoop && skip == visits - 1) release_q();
                const int n0 = span.visit(skip, start) * kBlockN;
                RowBias bias{};
                mask_scores(acc_s, n0, tile_masked(skip), bias);  // no P V in flight yet
                online_softmax<kLazyRescaleLog2, kAlibiOffDiagonal, Exp2, kSoftmaxForm>(
                    acc_s, m_i, l_i, alpha, p.scale_log2, kNegInf,  // O is 0: no rescale
                    [&](int nt, int h, float p0, float p1) { p_frag[nt][h] = pack2<kBf16>(p0, p1); }, no_max,
                    static_cast<float>(kLazyRescaleLog2), bias);
            }
            // O's rescale for key tile it - 1 comes after the wait for its P V, or, at head dims padded to 256, in the
            // next step before the turn (measured faster there, slower at d 96 and 128: bench/NOTES.md, "O's rescale
            // before the turn").
            constexpr bool kRescaleBeforeTurn = kHeadDimP == 256;
            // O's rescale, skipped by a warp whose rows all keep their max (kLazyRescaleLog2, tile/softmax.cuh).
            const auto rescale = [&] {
                if (!no_max && (kLazyRescaleLog2 < 0 || !alpha_is_one(alpha))) rescale_o<kPvColumns>(acc_o, alpha);
            };
            // kSettledMax: the block's first kSettleSteps key steps take the exact max the usual way (online_softmax:
            // maxima still move often there, and the exact max keeps the error). Later steps take their exponentials
            // against the rows' maxima from before the tile, and after P V a warp with a row whose sum passed
            // kSettleSum (some P above 8) settles its rows (tile/softmax.cuh, softmax_settle_max) to within a factor
            // 256, as kLazyLateLog2 keeps (the kernels without it before, d 128 and d 64 causal, read 0.3-1.4 % more
            // error at 16k). Every row has its first keys by its warpgroup's second key step (causal rows see key 0,
            // and the diagonal's tile is at most one of those without: tiles are 64 keys or more). A row whose P
            // passed 2^120 (a score that far above its max, in log2 units; fp32 may have overflowed) is marked in
            // `overflowed` and computed again, exactly, after its last key tile.
            static_assert(!kSettledMax || (kSettleSteps >= 2 && kBlockN >= 64), "rows see their first keys settled");
            static_assert(!kSettledMax || !kRescaleBeforeTurn, "the exact steps' last alpha would reach no rescale");
            const auto settle = [&](float(&acc_s)[kNTilesS][4], const float(&row_sum)[2]) {
                if (!__any_sync(0xffffffffu, !(row_sum[0] <= kSettleSum && row_sum[1] <= kSettleSum))) {
                    l_i[0] += row_sum[0], l_i[1] += row_sum[1];
                    return;
                }
                float p_max[2];
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    p_max[h] = softmax_p_max(acc_s, h);
                    if (!(p_max[h] < kSettleLimit)) overflowed |= 1 << h, p_max[h] = 1.f;
                }
                softmax_settle_max(acc_s, m_i, l_i, alpha, row_sum, p_max, kSettleSum, kNegInf);
                if (!alpha_is_one(alpha)) rescale_o<kPvColumns>(acc_o, alpha);
            };
            // S of key tile it (stage s), then P V of key tile it - 1 (stage sp) into O, then the softmax of S while P
            // V computes. Every wgmma is issued on every call (no wgmma under a condition: ptxas would serialize them
            // all).
            const auto key_step = [&](int it, bool masked, bool settled) {
                const int sp = (kv0 + it - 1) % kStages;
                const int s = (kv0 + it) % kStages;
                mbarrier::wait(v_full(sp), ((kv0 + it - 1) / kStages) & 1u);
                mbarrier::wait(k_full(s), ((kv0 + it) / kStages) & 1u);
                float acc_s[kNTilesS][4];
                if (kRescaleBeforeTurn) rescale();
                take_turn();
                issue_qk<kBf16, kBlockM, kBlockN, kHeadDimK, kQkN, KvLayout, kUniformDescriptors>(
                    acc_s, sQ + qb * kQBytes, wg_row0, sK + s * kKVBytes, alibi_step(it, masked));
                issue_pv_into_o<kBf16, kBlockN, kHeadDimP, KvLayout, kPvColumns, kUniformDescriptors>(
                    acc_o, p_frag, sV + sp * kKVBytes);
                pass_turn();
                wgmma::wait<1>();  // S; P V still in flight
                wgmma::hold(acc_s);
                release(k_empty(s));
                if (!kStagedLoop && it == visits - 1) release_q();
                RowBias bias{};
                mask_scores(acc_s, span.visit(it, start) * kBlockN, masked, bias);
                if (kSettledMax && settled) {  // `settled` is a constant at each call: one path per loop
                    float row_sum[2];
                    softmax_exp_before_max<kAlibiOffDiagonal, Exp2, kSoftmaxForm>(
                        acc_s, m_i, row_sum, p.scale_log2, kNegInf,
                        [&](int nt, int h, float p0, float p1) {
                            acc_s[nt][2 * h] = p0, acc_s[nt][2 * h + 1] = p1;  // in place: P V still reads p_frag
                        },
                        bias);
                    wgmma::wait<0>();  // P V: O and p_frag are free again
                    hold_o<kPvColumns>(acc_o);
                    release(v_empty(sp));
                    settle(acc_s, row_sum);
                    pack_probabilities<kBf16>(acc_s, p_frag);
                    return;
                }
                const float lazy_log2 = kLazyAfterSteps > 0 && it >= kLazyAfterSteps ? kLazyLateLog2 : 0.f;
                online_softmax<kLazyRescaleLog2, kAlibiOffDiagonal, Exp2, kSoftmaxForm>(
                    acc_s, m_i, l_i, alpha, p.scale_log2, kNegInf,
                    [&](int nt, int h, float p0, float p1) {
                        acc_s[nt][2 * h] = p0, acc_s[nt][2 * h + 1] = p1;  // in place: P V still reads p_frag
                    },
                    no_max, lazy_log2, bias);
                wgmma::wait<0>();  // P V: O and p_frag are free again
                hold_o<kPvColumns>(acc_o);
                release(v_empty(sp));
                pack_probabilities<kBf16>(acc_s, p_frag);
                if (!kRescaleBeforeTurn) rescale();
            };
            // Masked and unmasked tiles run in loops of their own: a branch on the mask between the waits for S and
            // for P V makes ptxas wait for P V before the softmax, which then no longer overlaps it (bench/NOTES.md,
            // "The mask outside the overlap"). Masked tiles come in runs: the first visits (the ragged last tile, the
            // causal diagonal) and, where a staggered visit order wraps round, the ragged last tile; under a sliding
            // window also the window's far edge. A window keeps one loop past d 128 (the second copy of the step
            // spills: 88 bytes at d 192) and on 192 rows without ALiBi or the settled max (ws_layout::mask_loops).
            // Split-KV decode masks every tile in modify_scores: one loop.
            if constexpr (kMaskLoops) {
                for (int it = skip + 1; it < visits;) {
                    for (; it < visits && tile_masked(it); ++it) key_step(it, true, false);
                    if constexpr (kSettledMax)  // the first steps take the exact max the usual way
                        for (; it < visits && !tile_masked(it) && it < kSettleSteps; ++it) key_step(it, false, false);
                    for (; it < visits && !tile_masked(it); ++it) key_step(it, false, kSettledMax);
                }
            } else {
                for (int it = skip + 1; it < visits; ++it) key_step(it, tile_masked(it), false);
            }
            // P V of the warpgroup's last key tile.
            const int sp = (kv0 + visits - 1) % kStages;
            mbarrier::wait(v_full(sp), ((kv0 + visits - 1) / kStages) & 1u);
            if (kRescaleBeforeTurn) rescale();  // one key tile: O 0, alpha finite
            take_turn();
            issue_pv_into_o<kBf16, kBlockN, kHeadDimP, KvLayout, kPvColumns, kUniformDescriptors>(acc_o, p_frag,
                                                                                                  sV + sp * kKVBytes);
            // None after the last warpgroup's last turn: nobody would wait for it. Every tile of a round-robin block
            // has keys (without the causal mask all see the same keys). A block with pairs of tiles cannot tell its
            // last tile with keys (where Nq > Nk a head's first rows see none, and tile_at's extra tiles have no rows):
            // warpgroup 0 takes the last pass when the tiles run out. (Two forms: with the window's term folded in,
            // the kernels without a window compiled to other SASS.)
            if constexpr (kTrimWindow) {
                if (!last_wg || paired || tile_of(n + 1) < end || visits < n_block_max) pass_turn();
            } else {
                if (!last_wg || paired || tile_of(n + 1) < end) pass_turn();
            }
            wgmma::wait<0>();
            hold_o<kPvColumns>(acc_o);
            release(v_empty(sp));
            if constexpr (kTrimWindow) {
                for (int it = visits; it < n_block_max; ++it) {  // past its first row's window
                    take_turn();
                    if (!last_wg || paired || tile_of(n + 1) < end || it < n_block_max - 1) pass_turn();
                    release_unread(kv0 + it);
                }
            }
            kv_loads += n_block_max;
        }

        if constexpr (kSettledMax) {  // rows whose P overflowed: again, exactly (tile/exact_row.cuh)
            if (__any_sync(0xffffffffu, overflowed != 0)) {
                const TensorBases<unsigned short> rb = tensor_bases<unsigned short>(p, bi);
                const auto key_end = [&](int row) {
                    return kCausal ? max(0, min(seqlen_k(), row + causal_offset() + 1)) : seqlen_k();
                };
                const int keys_max = key_end(min(m0 + warp_row0 + 15, seqlen_q() - 1));
                // Row h as a template argument: O's indices stay constants.
                const auto row_of = [&](int h) { return min(m0 + warp_row0 + 8 * h + g, seqlen_q() - 1); };
                const auto score_of_row = [&](int row) {  // the key loop's masks and modifiers, exactly
                    return [&, row](int j, float dot) {
                        return j >= key_end(row) || mod.outside(row, j, causal_offset())
                                   ? kNegInf
                                   : mod.template apply<true>(dot, row, j, causal_offset());
                    };
                };
                if (__any_sync(0xffffffffu, overflowed & 1))
                    exact_row<kBf16, kHeadDim, kDBlocks, 0>(rb.q + row_of(0) * p.q_row_stride, rb.k, p.k_row_stride,
                                                            rb.v, p.v_row_stride, keys_max, p.scale_log2, t,
                                                            overflowed & 1, acc_o, m_i[0], l_i[0], kNegInf,
                                                            score_of_row(row_of(0)));
                if (__any_sync(0xffffffffu, overflowed & 2))
                    exact_row<kBf16, kHeadDim, kDBlocks, 1>(rb.q + row_of(1) * p.q_row_stride, rb.k, p.k_row_stride,
                                                            rb.v, p.v_row_stride, keys_max, p.scale_log2, t,
                                                            overflowed & 2, acc_o, m_i[1], l_i[1], kNegInf,
                                                            score_of_row(row_of(1)));
            }
        }
        // ---- epilogue: O / l and LSE; rows past seqlen_q are not stored, a row without keys gets O = 0 and
        // LSE = -inf. A block with one tile stages O in its warps' own Q rows (read only by their warpgroup's
        // completed wgmmas) for 16-byte stores, and so does a looping block with two Q buffers (kStagedLoop) in this
        // tile's; with one, shared memory already holds the next tile's Q, so O goes straight from the registers, 16
        // bytes a lane after a quad transpose (tile::store_o_row), as it does for a tile without keys (which loaded
        // no Q: its buffer may be taking the next tile's).
        if constexpr (kSplit) {  // O / LSE, or the split's fp32 part, per packed row
            blk.template store_rows<T, kHeadDim>(p, acc_o, m_i, l_i, warp_row0, g, t, kNegInf);
            return;
        }
        // kTableMap: the table checked now; the producer clamped every page it loaded into the cache, and a bad
        // table's rows get O = 0, LSE = -inf as before.
        if (kTableMap && warpgroup::any(kBarrierConsumers, kConsumerThreads,
                                        !pages_ok(p, bi.batch, seqlen_k(), threadIdx.x - 128, kConsumerThreads))) {
            clear_accumulator(acc_o);
            l_i[0] = l_i[1] = 0.f;
        }
        TensorBases<unsigned short> bc = tensor_bases<unsigned short>(p, bi);
        if constexpr (kVarlen) {  // one batch of total rows; LSE [heads_q][total_q]
            bc = tensor_bases<unsigned short>(p, {bi.m0, bi.head, 0, bi.head_kv});
            bc.o += seq.q0 * p.o_row_stride;
            bc.lse = p.lse == nullptr ? nullptr : p.lse + static_cast<long long>(bi.head) * p.total_q + seq.q0;
        }
        const bool staged = one_tile || (kStagedLoop && n_block_max > 0);
        const unsigned s_q = sQ + qb * kQBytes;
        if (!staged) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const RowTotals rt = row_totals(l_i[h]);
                const int row = m0 + warp_row0 + h * 8 + g;
                store_o_row<kBf16, kHeadDim>(bc.o + row * p.o_row_stride, row < seqlen_q(), h, t, acc_o, rt.inv_l);
                if (bc.lse != nullptr && t == 0 && row < seqlen_q()) bc.lse[row] = row_lse(m_i[h], rt, kNegInf);
            }
        } else {
            __syncwarp();
            const unsigned o_stage = s_q + (warp_row0 + g) * 128u + 4u * t;  // row & 7 == g: chunk nt at nt ^ g
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const RowTotals rt = row_totals(l_i[h]);
                const int row = m0 + warp_row0 + h * 8 + g;
                stage_o_row_sw128<kBf16, kBlockM>(o_stage, h, g, acc_o, rt.inv_l);
                if (bc.lse != nullptr && t == 0 && row < seqlen_q()) bc.lse[row] = row_lse(m_i[h], rt, kNegInf);
            }
            __syncwarp();
            store_rows_16b<Swizzle128B<kBlockM>, 16, kHeadDim, false>(s_q, warp_row0, bc.o, p.o_row_stride,
                                                                      m0 + warp_row0, seqlen_q(), lane);
            if (kStagedLoop && n_block_max > 0) {  // the staged rows are read: the buffer may take another tile's Q
                __syncwarp();
                release_q();
            }
        }
    }
    if (paired && wg == 0 && turns_started) take_turn();  // the last warpgroup's last pass
}

}  // namespace fa_jit
