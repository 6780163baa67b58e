// FlashAttention-2 forward pass for fp16 / bf16 inputs and outputs with fp32 accumulation (Dao 2023, Algorithm 1),
// compiled at run time by NVRTC. Ampere-style tensor-core path (mma.sync m16n8k16, ldmatrix, cp.async); runs on
// sm_80, sm_86, sm_89, sm_90(a) and newer.
//
//   template <typename T, int kBlockM, int kBlockN, int kHeadDim, int kNWarps, int kStages, bool kCausal,
//             bool kEvenMN, int kMods = 0, bool kVarlen = false, bool kPaged = false>
//   __global__ void attention_fwd_f16(const __grid_constant__ AttentionParams p);
//
//   T        fa_jit::half_t or fa_jit::bf16_t (q, k, v, o all of type T; lse fp32).
//   kBlockM  query rows per block; a multiple of 16 * kNWarps (each warp owns kBlockM / kNWarps rows).
//   kBlockN  key/value rows per step of the inner loop; a multiple of 16.
//   kHeadDim exactly p.head_dim; a multiple of 8 in 8..256 (math padded to 16, shared rows to 64, zero-filled).
//   kNWarps  warps per block (block = 32 * kNWarps threads).
//   kStages  K/V shared-memory buffers (cp.async pipeline depth), 1..4: tile j+kStages-1 loads while j computes;
//            1 = one K and one V buffer (FlashAttention-2's schedule: V_j loads during S_j, K_{j-1} during P V_j),
//            which halves the K/V footprint so that two CTAs share an SM (d 256: 96 KB at 64 x 64).
//   kCausal  bottom-right aligned causal mask: query row i sees key j iff j <= i + p.causal_offset.
//   kEvenMN  true only if seqlen_q % kBlockM == 0 and seqlen_k % kBlockN == 0: drops row bounds checks.
//   kMods    score modifiers (mods:: bits; tile/mask.cuh): a sliding window moves K / V to its first key tile.
//   kVarlen  packed sequences (p.cu_seqlens_q / _k, tile::seq_rows): a block past its sequence's end exits.
//   kPaged   K / V in a paged cache (p.block_table, tile/paged_kv.cuh), keys seqused_k[b] or seqlen_k.
//
// Name expression: fa_jit::attention_fwd_f16<fa_jit::bf16_t, 128, 64, 128, 8, 2, false, true>   (8 arguments; a 9th,
//                  kMods, only when nonzero)
// Launch:          grid (ceil(seqlen_q / kBlockM), heads_q, batch), block kNWarps * 32, dynamic shared memory
//                  f16_layout::smem_bytes(kBlockM, kBlockN, kHeadDim, kStages) (over 48 KB: raise the limit).
// Preconditions (validated by the host, not here): q, k, v, o base pointers 16-byte aligned; every batch / head /
// row stride a multiple of 8 elements (16 bytes); seqlen_q >= 1. 64-bit index math throughout.
//
// Per warp: Q rows [warp * kWarpRows, +kWarpRows) live in registers as mma A fragments for the whole kernel when the
// tile leaves room for them (kQInRegs), else they are re-read from shared memory with ldmatrix every key tile.
// Per key tile: S = Q K^T (fp32 accumulators), mask, online softmax in log2 units (exp2 of s * scale_log2 - m),
// P converted to T in registers and used directly as the A operand of P V (the m16n8k16 accumulator layout of two
// neighbouring 8-column n-tiles is exactly one A fragment). Register layout: lane = 4 * g + t; a thread holds rows
// g and g + 8 of each 16-row m-tile, columns 2t, 2t + 1 of each 8-column n-tile; a row lives in one lane quad.
//
// Softmax: the row max is taken on raw scores and then scaled, so p.scale (and p.scale_log2) must be > 0.
//
// Tiles: attention() picks them in src/attention/families/f16_mma.cpp (measured fastest on an H100: <128, 128, d, 4, 2>
// for d <= 64, <128, 64, d, 4, 2> for d <= 128, <64, 64, d, 4, 1> above; at 255 registers they may spill a few bytes);
// tests/cpu/test_attention_f16_compile.cpp keeps a spill-free alternative per head dim on sm_80 and sm_90a.
// Measured numbers: bench/NOTES.md ("fp16/bf16 kernel").
//
// Numerics: the tensor core accumulates in fp32 with truncation (round toward zero). Each tile's P V_j goes into a
// fresh accumulator (16 output columns at a time, so it costs 8 registers per m-tile) that is added to the rescaled O
// with an ordinary fp32 FFMA: the truncation bias then does not grow with seqlen_k.
#pragma once

#include "attention_f16_layout.cuh"
#include "attention_params.cuh"
#include "dtypes.cuh"
#include "ptx.cuh"
#include "tile/coords.cuh"
#include "tile/copy.cuh"
#include "tile/epilogue.cuh"
#include "tile/f16_types.cuh"
#include "tile/kv_ring.cuh"
#include "tile/mask.cuh"
#include "tile/mma16816_gemms.cuh"
#include "tile/softmax.cuh"
#include "tile/swizzle.cuh"

namespace fa_jit {

// ================================================================================================================
// Traits
// ================================================================================================================
template <typename T, int kBlockM_, int kBlockN_, int kHeadDim_, int kNWarps_, int kStages_>
struct AttentionFwdF16Traits {
    static constexpr int kBlockM = kBlockM_;
    static constexpr int kBlockN = kBlockN_;
    static constexpr int kHeadDim = kHeadDim_;
    static constexpr int kNWarps = kNWarps_;
    static constexpr int kStages = kStages_;
    static constexpr int kNThreads = kNWarps * 32;
    static constexpr bool kBf16 = tile::IsBf16<T>::value;

    static constexpr int kWarpRows = kBlockM / kNWarps;
    static constexpr int kMTiles = kWarpRows / 16;                      // 16-row m-tiles per warp
    static constexpr int kNTilesS = kBlockN / 8;                        // 8-column n-tiles of S
    static constexpr int kDMma = f16_layout::head_dim_mma(kHeadDim);    // math width (multiple of 16)
    static constexpr int kDSmem = f16_layout::head_dim_smem(kHeadDim);  // shared row length (multiple of 64)
    static constexpr int kKSteps = kDMma / 16;                          // k steps of Q K^T
    static constexpr int kNTilesO = kDMma / 8;                          // 8-column n-tiles of O
    static constexpr int kChunksLoad = kDMma / 8;                       // 16-byte chunks loaded per row
    // Q fragments stay in registers for the whole kernel when they take <= 32 registers per thread and, together with
    // the O and S accumulators, <= 112 (the rest of the 255 goes to P, the fresh P V accumulators that ptxas
    // interleaves, and addresses): e.g. <128, 32, 128, 8>, <128, 128, 64, 8>, <64, 64, 64, 4>. Otherwise they are
    // re-read from shared memory with ldmatrix every key tile (as FA2 does): one ldmatrix.x4 per m-tile and k step,
    // which is what made <128, 64, 64, 4>, <64, 64, 128, 4>, <128, 64, 128, 8> spill-free on sm_80 / sm_90a
    // (they spilled 8..108 bytes with Q in registers).
    static constexpr bool kQInRegs =
        kMTiles * kKSteps * 4 <= 32 && kMTiles * (kKSteps + kNTilesO + kNTilesS) * 4 <= 112;

    static constexpr int kSmemQElems = kBlockM * kDSmem;
    static constexpr int kSmemKVElems = kBlockN * kDSmem;
    static constexpr int kSmemBytes = 2 * (kSmemQElems + 2 * kStages * kSmemKVElems);
    static_assert(kSmemBytes == f16_layout::smem_bytes(kBlockM, kBlockN, kHeadDim, kStages), "host/kernel disagree");

    static_assert(tile::IsF16Type<T>::value, "T must be fa_jit::half_t or fa_jit::bf16_t");
    static_assert(kNWarps >= 1 && kNWarps <= 16, "kNWarps must be in 1..16");
    static_assert(kBlockM % (16 * kNWarps) == 0, "kBlockM must be a multiple of 16 * kNWarps");
    static_assert(kBlockN % 16 == 0 && kBlockN >= 16, "kBlockN must be a positive multiple of 16");
    static_assert(kHeadDim % 8 == 0 && kHeadDim >= 8 && kHeadDim <= 256, "kHeadDim must be a multiple of 8 in 8..256");
    static_assert(kStages >= 1 && kStages <= 4, "kStages must be in 1..4");
    static_assert(kSmemBytes <= f16_layout::kMaxSmemBytes, "tile does not fit in shared memory");
    static_assert(f16_layout::legal(kBlockM, kBlockN, kNWarps, kStages, kHeadDim), "legal() disagrees");
};

namespace f16_detail {

using namespace ptx;  // exp2_approx, cp_async_*, quad_max, quad_sum, shared / global accesses, ...
using tile::pack2;

using tile::ldmatrix_x4;
using tile::ldmatrix_x4_trans;
using tile::mma_16816;
using tile::swz_pair;

// Rows [row0, row0 + kRows) of a [rows_total, kHeadDim] matrix (row stride `stride` elements) -> swizzled shared
// tile (tile/copy.cuh); rows >= rows_total (checked unless kEven) and the padding columns are zero-filled.
template <class Tr, int kRows, bool kEven>
__device__ __forceinline__ void load_tile(unsigned smem, const unsigned short* gmem, long long stride, int row0,
                                          int rows_total) {
    tile::cp_async_tile<tile::SwizzleRows64<Tr::kDSmem>, Tr::kNThreads, kRows, Tr::kChunksLoad, Tr::kHeadDim, kEven>(
        smem, gmem, stride, row0, rows_total);
}

}  // namespace f16_detail

// ================================================================================================================
// The kernel
// ================================================================================================================
template <typename T, int kBlockM, int kBlockN, int kHeadDim, int kNWarps, int kStages, bool kCausal, bool kEvenMN,
          int kMods = 0, bool kVarlen = false, bool kPaged = false>
__global__ void __launch_bounds__(kNWarps * 32, 1) attention_fwd_f16(const __grid_constant__ AttentionParams p) {
    using namespace f16_detail;
    using Tr = AttentionFwdF16Traits<T, kBlockM, kBlockN, kHeadDim, kNWarps, kStages>;
    using Layout = tile::SwizzleRows64<Tr::kDSmem>;  // Q, K, V and the staged O
    constexpr bool kBf16 = Tr::kBf16;
    constexpr int kMTiles = Tr::kMTiles;
    constexpr int kNTilesS = Tr::kNTilesS;
    constexpr int kNTilesO = Tr::kNTilesO;
    constexpr int kKSteps = Tr::kKSteps;
    constexpr int kDS = Tr::kDSmem;
    const float kNegInf = neg_inf_f32();

    extern __shared__ float4 smem_raw[];
    const unsigned sQ = smem_address(smem_raw);
    const unsigned sKV = sQ + 2u * Tr::kSmemQElems;  // stage s: K at sKV + s * 2 * kvbytes, V right after
    constexpr unsigned kKVBytes = 2u * Tr::kSmemKVElems;

    const tile::BlockIndex bi = tile::block_index<kBlockM, kCausal>(p);
    const int m0 = bi.m0;

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int g = lane / 4;
    const int t = lane % 4;
    const int warp_row0 = warp * Tr::kWarpRows;

    // Score modifiers; a sliding window starts the keys at its first tile: K / V, seqlen_k and the causal offset move
    // there by key_shift rows (tile/mask.cuh, "Window origin"). Without one, the kernel reads p.seqlen_k and
    // p.causal_offset where it uses them, as before the modifiers.
    constexpr bool kWindow = (kMods & mods::kWindow) != 0;
    // Packed sequences: this block's sequence, its rows and lengths (one batch of total rows); past its end, nothing
    // to do.
    // A paged cache: the sequence's keys (seqused_k or seqlen_k) in pages.
    constexpr bool kSeq = kVarlen || kPaged;
    tile::SeqRows seq{};  // only under kSeq: reading the plain lengths here changed the plain kernels' SASS
    if constexpr (kSeq) seq = tile::seq_rows<kVarlen, kPaged>(p, bi.batch);
    if (kVarlen && m0 >= seq.seqlen_q) return;
    const int batch = kVarlen ? 0 : bi.batch;
    const auto seqlen_q = [&] { return kSeq ? seq.seqlen_q : p.seqlen_q; };
    const auto seq_keys = [&] { return kSeq ? seq.seqlen_k : p.seqlen_k; };
    const auto seq_offset = [&] { return kSeq ? seq.seqlen_k - seq.seqlen_q : p.causal_offset; };
    const tile::ScoreMod<kMods> mod = tile::ScoreMod<kMods>::make(p, bi.head);
    const tile::KeySpan span = tile::key_span<kBlockM, kBlockN, kCausal>(seq_keys(), seq_offset(), m0, mod);
    const int key_shift = kWindow ? span.first * kBlockN : 0;
    const auto seqlen_k = [&] { return kWindow ? seq_keys() - key_shift : seq_keys(); };
    const auto causal_offset = [&] { return kWindow ? seq_offset() - key_shift : seq_offset(); };
    const long long k_row0 = (kWindow ? key_shift : 0) + (kVarlen ? seq.k0 : 0);  // the first key row read

    // Bases inline, not tile::tensor_bases: O's base would move as in the copy-out below.
    const unsigned short* q = static_cast<const unsigned short*>(p.q) + batch * p.q_batch_stride +
                              bi.head * p.q_head_stride + (kVarlen ? seq.q0 * p.q_row_stride : 0);
    const unsigned short* k = static_cast<const unsigned short*>(p.k) + batch * p.k_batch_stride +
                              bi.head_kv * p.k_head_stride + (kWindow || kVarlen ? k_row0 * p.k_row_stride : 0);
    const unsigned short* v = static_cast<const unsigned short*>(p.v) + batch * p.v_batch_stride +
                              bi.head_kv * p.v_head_stride + (kWindow || kVarlen ? k_row0 * p.v_row_stride : 0);
    unsigned short* o = static_cast<unsigned short*>(p.o) + batch * p.o_batch_stride + bi.head * p.o_head_stride +
                        (kVarlen ? seq.q0 * p.o_row_stride : 0);
    float* lse = p.lse == nullptr ? nullptr
                 : kVarlen        ? p.lse + static_cast<long long>(bi.head) * p.total_q + seq.q0
                                  : p.lse + (static_cast<long long>(bi.batch) * p.heads_q + bi.head) * p.seqlen_q;
    const int n_block_max = kMods == 0 && !kSeq ? tile::key_tiles<kBlockM, kBlockN, kCausal>(p, m0) : span.count();

    float acc_o[kMTiles][kNTilesO][4];
    float m_i[kMTiles][2], l_i[kMTiles][2];
    tile::clear_o_state(acc_o, m_i, l_i, kNegInf);

    // ldmatrix lane roles: matrix index lane / 8, row within it lane % 8.
    const int lm_row = lane % 8;
    const int lm_mat = lane / 8;
    const unsigned k_lane_row = (lm_row + (lm_mat / 2) * 8) * (kDS * 2);  // K: rows n, chunk bit = lm_mat % 2
    const unsigned k_lane_x = (lm_mat % 2) ^ lm_row;
    const unsigned v_lane_row = (lm_row + (lm_mat % 2) * 8) * (kDS * 2);  // V: rows key, chunk bit = lm_mat / 2
    const unsigned v_lane_x = (lm_mat / 2) ^ lm_row;

    // K/V ring (tile/kv_ring.cuh): stage s holds K at sKV + 2 s kKVBytes, V right after.
    // Paged: keys counted from the sequence's first (key_shift + row0: a multiple of 16).
    using Paged = tile::PagedKv<unsigned short>;
    const Paged k_pages = kPaged ? Paged::keys(p, bi.head_kv, bi.batch) : Paged{};
    const Paged v_pages = kPaged ? Paged::values(p, bi.head_kv, bi.batch) : Paged{};
    const auto load_k = [&](unsigned smem, int row0) {
        if constexpr (kPaged)
            tile::cp_async_tile_paged<Layout, Tr::kNThreads, kBlockN, Tr::kChunksLoad, kHeadDim>(
                smem, k_pages, key_shift + row0, seq_keys());
        else
            load_tile<Tr, kBlockN, kEvenMN>(smem, k, p.k_row_stride, row0, seqlen_k());
    };
    const auto load_v = [&](unsigned smem, int row0) {
        if constexpr (kPaged)
            tile::cp_async_tile_paged<Layout, Tr::kNThreads, kBlockN, Tr::kChunksLoad, kHeadDim>(
                smem, v_pages, key_shift + row0, seq_keys());
        else
            load_tile<Tr, kBlockN, kEvenMN>(smem, v, p.v_row_stride, row0, seqlen_k());
    };
    tile::KVRing<kStages, kBlockN, kKVBytes> ring{sKV, 0};
    if (n_block_max > 0) {  // Q_i in the group of the first key tile
        load_tile<Tr, kBlockM, kEvenMN>(sQ, q, p.q_row_stride, m0, seqlen_q());
        ring.prologue(n_block_max, load_k, load_v);
    }
    // Q's fragments (tile::load_q_fragment): in registers where Tr::kQInRegs, else loaded per key tile.
    constexpr bool kQInRegs = Tr::kQInRegs;
    unsigned q_frag[kMTiles][kQInRegs ? kKSteps : 1][4];
    const unsigned q_lane = sQ + (warp_row0 + lm_row + (lm_mat % 2) * 8) * (kDS * 2);
    const unsigned q_lane_x = (lm_mat / 2) ^ lm_row;
    if (kQInRegs && n_block_max > 0) {
        ring.wait_current();
        __syncthreads();
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
            for (int ks = 0; ks < kKSteps; ++ks)
                tile::load_q_fragment<kDS>(q_frag[mt][kQInRegs ? ks : 0], q_lane, q_lane_x, mt, ks);
    }

    for (int it = 0; it < n_block_max; ++it) {
        const int n_block = n_block_max - 1 - it;  // last tile first: the masked tiles come first
        const int n0 = n_block * kBlockN;
        ring.wait_current();
        __syncthreads();  // tile `it` (its K, for kStages 1) landed; every warp is done with the buffer refilled below
        ring.refill(n_block, n0, load_k, load_v);
        const unsigned sK = ring.advance();
        const unsigned sV = sK + kKVBytes;

        // ---- S = Q K^T ---------------------------------------------------------------------------------------------
        float acc_s[kMTiles][kNTilesS][4];
        tile::clear_accumulator(acc_s);
        tile::gemm_qk_16816<kBf16, kQInRegs, kKSteps, kDS>(acc_s, q_frag, q_lane, q_lane_x, sK, k_lane_row, k_lane_x);

        // ---- mask tiles that straddle seqlen_k or the causal diagonal ---------------------------------------------
        // The predicate and coordinates of tile/mask.cuh in this kernel's own loop: tile::mask_fragment, which takes
        // the row base as an argument, loses the known low bits of warp_row0 + g, and the d-64 causal defaults grow by
        // 3 % SASS (bench/NOTES.md, "mma.sync kernel on the tile layer"). The inlined predicate leaves SASS counts,
        // registers and spills of every default tile unchanged (ptxas only flips some compares).
        // Softcap and ALiBi first (kMods only); the mask then overwrites the hidden scores.
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt)
            tile::modify_fragment(acc_s[mt], m0 + warp_row0 + mt * 16, n0, g, t, causal_offset(), mod);
        const bool need_mask = (!kEvenMN && n0 + kBlockN > seqlen_k()) ||
                               (kCausal && n0 + kBlockN - 1 > m0 + causal_offset()) ||
                               tile::window_needs_mask<kBlockM, kBlockN>(n0, m0, causal_offset(), mod);
        if (need_mask) {
#pragma unroll
            for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
                for (int nt = 0; nt < kNTilesS; ++nt)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int row = tile::frag_row(m0 + warp_row0 + mt * 16, e, g);
                        const int col = tile::frag_col(n0, nt, e, t);
                        if (tile::key_masked<kEvenMN, kCausal>(row, col, seqlen_k(), causal_offset()) ||
                            mod.outside(row, col, causal_offset()))
                            acc_s[mt][nt][e] = kNegInf;
                    }
        }

        ring.single_next_k(n_block, n0, load_k);

        // ---- online softmax (log2 units, scale folded into the exponent) ------------------------------------------
        // The per-row steps of tile/softmax.cuh in this kernel's loops: tile::online_softmax numbers the PTX registers
        // differently, and the CI tile <128, 32, 128, 4, 2> (sm_80) then spills 8 B.
        unsigned p_frag[kMTiles][kNTilesS][2];  // P as T pairs: [nt][h] = columns (2t, 2t+1) of row g + 8h
        // O's rescale factor exp2(m_old - m_new) per row: applied in the P V section as O = O * alpha + PV_j, one
        // FFMA per element (nvcc / NVRTC contract a multiply here and an add there anyway under the default -fmad=true:
        // same SASS; explicit so that it does not depend on that).
        float alpha[kMTiles][2];
        const float sl2 = p.scale_log2;
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
            float m_use[2];
#pragma unroll
            for (int h = 0; h < 2; ++h)
                m_use[h] = tile::softmax_row_max<false>(acc_s[mt], h, m_i[mt][h], alpha[mt][h], sl2, kNegInf);
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float row_sum = tile::softmax_row_exp<false>(
                    acc_s[mt], h, m_use[h], sl2,
                    [&](int nt, float p0, float p1) { p_frag[mt][nt][h] = pack2<kBf16>(p0, p1); });
                l_i[mt][h] = l_i[mt][h] * alpha[mt][h] + row_sum;
            }
        }

        // ---- O = O * alpha + P V_j: 16 output columns at a time, each into a fresh accumulator (see "Numerics")
        // -------
#pragma unroll
        for (int dc = 0; dc < kNTilesO / 2; ++dc) {
            float pv[kMTiles][2][4];
#pragma unroll
            for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
                for (int j = 0; j < 2; ++j) pv[mt][j][0] = pv[mt][j][1] = pv[mt][j][2] = pv[mt][j][3] = 0.f;
#pragma unroll
            for (int kc = 0; kc < kBlockN / 16; ++kc) {
                // V is [key][d] row-major = B row-major; .trans: matrices (keys 0-7, d 0-7), (keys 8-15, d 0-7),
                // (keys 0-7, d 8-15), (keys 8-15, d 8-15) -> b0, b1 of d n-tile 2dc and of 2dc + 1.
                unsigned b[4];
                ldmatrix_x4_trans(b, sV + v_lane_row + kc * 16 * (kDS * 2) + swz_pair(v_lane_x, dc));
#pragma unroll
                for (int mt = 0; mt < kMTiles; ++mt) {
                    // A fragment of P for keys 16kc..16kc+15: n-tiles 2kc (a0, a1) and 2kc + 1 (a2, a3).
                    const unsigned a[4] = {p_frag[mt][2 * kc][0], p_frag[mt][2 * kc][1], p_frag[mt][2 * kc + 1][0],
                                           p_frag[mt][2 * kc + 1][1]};
                    mma_16816<kBf16>(pv[mt][0], a, b[0], b[1]);
                    mma_16816<kBf16>(pv[mt][1], a, b[2], b[3]);
                }
            }
#pragma unroll
            for (int mt = 0; mt < kMTiles; ++mt) tile::rescale_add(acc_o[mt], 2 * dc, alpha[mt], pv[mt]);
        }
    }
    cp_async_wait<0>();  // nothing left in flight at exit (empty groups only)

    // ================================================================================================================
    // Epilogue: O / l, LSE = (m + log2 l) * ln 2; rows with no visible key: O = 0, LSE = -inf.
    // With one m-tile per warp, O goes through shared memory so that global stores are 16-byte and coalesced (the
    // accumulator layout gives 4-byte stores, each warp instruction touching 8 rows x 16 bytes): with a single CTA
    // per SM (d 256) nothing else hides the epilogue. Two m-tiles per warp sit at 255 registers, where the staging
    // code makes ptxas spill: they store straight from the accumulators.
    // ================================================================================================================
    constexpr bool kStageO = Tr::kMTiles == 1;
    // Staging buffer: this warp's own Q rows [warp_row0, +kWarpRows). Only this warp ever reads them (ldmatrix at
    // q_lane); the block-wide cp.async that filled them completed before the first __syncthreads of the prologue
    // (kQInRegs) or of the main loop, and nothing writes sQ after that. So ordering this warp's last ldmatrix of Q
    // before its own writes is enough: a warp barrier, not a block one.
    __syncwarp();
    // Row g + 8h of m-tile mt has (row & 7) == g (warp_row0 is a multiple of 16): chunk nt lives at (nt ^ g) & 7 | ...
    // The 8 rows x 4 lanes of one store then hit 32 distinct banks.
    const unsigned o_stage = sQ + (warp_row0 + g) * (kDS * 2) + 4 * t;
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const tile::RowTotals rt = tile::row_totals(l_i[mt][h]);
            const unsigned row_stage = o_stage + (mt * 16 + h * 8) * (kDS * 2);
            const int row = m0 + warp_row0 + mt * 16 + h * 8 + g;
            unsigned short* o_row = o + static_cast<long long>(row) * p.o_row_stride;
#pragma unroll
            for (int nt = 0; nt < kNTilesO; ++nt) {
                if (nt * 8 >= kHeadDim) break;  // padding columns are never stored
                const unsigned packed =
                    pack2<kBf16>(acc_o[mt][nt][2 * h] * rt.inv_l, acc_o[mt][nt][2 * h + 1] * rt.inv_l);
                if (kStageO)
                    st_shared_b32(row_stage + (((g ^ nt) & 7) | (nt & ~7)) * 16, packed);
                else if (kEvenMN || row < seqlen_q())
                    *reinterpret_cast<unsigned*>(o_row + nt * 8 + 2 * t) = packed;
            }
            if (lse != nullptr && t == 0 && (kEvenMN || row < seqlen_q()))
                lse[row] = tile::row_lse(m_i[mt][h], rt, kNegInf);
        }
    }
    if (!kStageO) return;
    __syncwarp();  // the warp's O rows are in shared memory

    // Copy out: lane i takes 16-byte chunk i, i + 32, ... of the warp's [kWarpRows, kHeadDim] block, so consecutive
    // lanes store consecutive 16 bytes of a row (whole rows per instruction once kHeadDim >= 256). Inline, not
    // tile::store_rows_16b: passing O's base moves its arithmetic up, and a d-160 tile spills 8 B more on sm_90a.
    constexpr int kChunksO = kHeadDim / 8;  // 16-byte chunks per output row (kHeadDim is a multiple of 8)
    constexpr int kChunksWarp = Tr::kWarpRows * kChunksO;
    const int o_row0 = m0 + warp_row0;
    if (32 % kChunksO == 0) {  // every lane keeps one column chunk: pointer bumps, no division
        constexpr int kRowsPerIter = 32 / kChunksO;
        const int ch = lane % kChunksO;
        const int r0 = lane / kChunksO;
        unsigned short* dst = o + static_cast<long long>(o_row0 + r0) * p.o_row_stride + ch * 8;
        const long long step = static_cast<long long>(kRowsPerIter) * p.o_row_stride;
#pragma unroll
        for (int i = 0; i * kRowsPerIter < Tr::kWarpRows; ++i) {
            const int r = r0 + i * kRowsPerIter;
            if (Tr::kWarpRows % kRowsPerIter != 0 && r >= Tr::kWarpRows) break;  // kHeadDim 8: 32 rows per step
            if (kEvenMN || o_row0 + r < seqlen_q()) {
                unsigned v[4];
                ld_shared_v4(v, sQ + Layout::offset(warp_row0 + r, ch));
                st_global_v4(dst, v);
            }
            dst += step;
        }
    } else {
#pragma unroll
        for (int c0 = 0; c0 < kChunksWarp; c0 += 32) {
            const int c = c0 + lane;
            if (kChunksWarp % 32 != 0 && c >= kChunksWarp) break;
            const int r = c / kChunksO;
            const int ch = c % kChunksO;
            if (kEvenMN || o_row0 + r < seqlen_q()) {
                unsigned v[4];
                ld_shared_v4(v, sQ + Layout::offset(warp_row0 + r, ch));
                st_global_v4(o + static_cast<long long>(o_row0 + r) * p.o_row_stride + ch * 8, v);
            }
        }
    }
}

}  // namespace fa_jit
