// FlashAttention forward for fp16 / bf16 on Hopper (sm_90a only), compiled at run time by NVRTC: warpgroup MMA
// (wgmma) reading Q, K and V straight from shared memory, so that the four warps of a warpgroup share each operand
// read (mma.sync re-reads K and V once per warp, which bounds attention_f16.cu by shared-memory bandwidth on H100).
//
//   template <typename T, int kBlockM, int kBlockN, int kHeadDim, int kStages, bool kCausal, bool kEvenMN,
//             int kMods = 0, bool kVarlen = false, bool kPaged = false>
//   __global__ void attention_fwd_f16_wgmma(const __grid_constant__ AttentionParams p);
//
//   T        fa_jit::half_t or fa_jit::bf16_t (q, k, v, o all of type T; lse fp32).
//   kBlockM  query rows per block, 64 or 128: one warpgroup (128 threads) per 64 rows, each warp owning 16 of them.
//   kBlockN  keys per step, 64 or 128 (S = Q K^T in 64-key wgmma chunks).
//   kHeadDim exactly p.head_dim: 64, 128, 192 or 256 (P V in 64-column wgmma chunks).
//   kStages  K/V shared-memory buffers (cp.async ring), 2..4: tile j + kStages - 1 loads while j computes.
//   kCausal, kEvenMN, kMods: as in attention_fwd_f16 (bottom-right causal mask; no row bounds checks; score
//            modifiers, the name's 8th argument only when nonzero; packed sequences; a paged KV cache).
//   kVarlen, kPaged: as in attention_fwd_f16 (packed sequences; K / V in pages).
//
// Name expression: fa_jit::attention_fwd_f16_wgmma<fa_jit::bf16_t, 128, 64, 256, 2, false, true>
// Launch:          grid (ceil(seqlen_q / kBlockM), heads_q, batch), block 2 * kBlockM threads, dynamic shared memory
//                  wgmma_layout::smem_bytes(kBlockM, kBlockN, kHeadDim, kStages).
// Preconditions (validated by the host): 16-byte aligned q, k, v, o; strides multiples of 8 elements; seqlen_q >= 1.
//
// Shared memory: every tile is head_dim / 64 column blocks of [rows][64] with wgmma's 128-byte swizzle
// (wgmma_layout.cuh); cp.async fills them (zeros past seqlen), fence.proxy.async publishes them to wgmma.
// Per key tile, per warpgroup: S = Q K^T (wgmma, both operands from shared memory), mask, online softmax in
// registers (as attention_f16.cu), P converted to T in registers and fed as wgmma's register A operand against
// V (MN-major, transposed by the tensor core), 64 output columns at a time, two chunks in flight.
//
// Numerics as attention_fwd_f16: each tile's P V_j goes into a fresh accumulator and is added to the rescaled O with
// an ordinary FFMA (O = O * alpha + PV_j), so the tensor core's truncating accumulation does not bias long rows.
#pragma once

#include "attention_params.cuh"
#include "attention_wgmma_layout.cuh"
#include "dtypes.cuh"
#include "ptx.cuh"
#include "tile/coords.cuh"
#include "tile/copy.cuh"
#include "tile/epilogue.cuh"
#include "tile/f16_types.cuh"
#include "tile/kv_ring.cuh"
#include "tile/mask.cuh"
#include "tile/softmax.cuh"
#include "tile/swizzle.cuh"
#include "tile/warpgroup.cuh"
#include "wgmma.cuh"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "attention_f16_wgmma.cu needs -arch=sm_90a: wgmma exists only on the arch-specific Hopper target"
#endif

namespace fa_jit {

template <typename T, int kBlockM_, int kBlockN_, int kHeadDim_, int kStages_>
struct AttentionFwdWgmmaTraits {
    static constexpr int kBlockM = kBlockM_;
    static constexpr int kBlockN = kBlockN_;
    static constexpr int kHeadDim = kHeadDim_;
    static constexpr int kStages = kStages_;
    static constexpr int kNWarps = kBlockM / 16;
    static constexpr int kNThreads = kNWarps * 32;
    static constexpr bool kBf16 = tile::IsBf16<T>::value;

    static constexpr int kNTilesS = kBlockN / 8;    // 8-column n-tiles of S per thread row pair
    static constexpr int kChunksS = kBlockN / 64;   // 64-key wgmma chunks of S
    static constexpr int kDBlocks = kHeadDim / 64;  // 64-column blocks of Q, K, V and O
    static constexpr int kKSteps = kHeadDim / 16;   // k steps of Q K^T
    static constexpr unsigned kQBytes = 2u * kBlockM * kHeadDim;
    static constexpr unsigned kKVBytes = 2u * kBlockN * kHeadDim;

    static_assert(tile::IsF16Type<T>::value, "T must be fa_jit::half_t or fa_jit::bf16_t");
    static_assert(wgmma_layout::legal(kBlockM, kBlockN, kNWarps, kStages, kHeadDim),
                  "illegal tile (wgmma_layout::legal)");
};

template <typename T, int kBlockM, int kBlockN, int kHeadDim, int kStages, bool kCausal, bool kEvenMN, int kMods = 0,
          bool kVarlen = false, bool kPaged = false>
__global__ void __launch_bounds__(kBlockM * 2, 1) attention_fwd_f16_wgmma(const __grid_constant__ AttentionParams p) {
    using namespace tile;
    using Tr = AttentionFwdWgmmaTraits<T, kBlockM, kBlockN, kHeadDim, kStages>;
    const float kNegInf = neg_inf_f32();

    extern __shared__ float4 smem_raw[];
    const unsigned sQ = (ptx::smem_address(smem_raw) + 1023u) & ~1023u;  // swizzle atoms need 1024-byte alignment

    // Block coordinates (tile/coords.cuh). Where the bases and the key range are computed changes ptxas's allocation
    // at 255 registers, and the two masks want different places (H100, d 128, against the kernel before the tile
    // layer): before the lane roles, causal runs 2.5-3 % slower; after them, non-causal runs 1.5-2 % slower
    // (bench/NOTES.md, "Kernel families and the tile layer on the GPU").
    const BlockIndex bi = block_index<kBlockM, kCausal>(p);
    const int m0 = bi.m0;
    // Packed sequences: this block's sequence; past its end, nothing to do. A paged cache: the sequence's keys.
    constexpr bool kSeq = kVarlen || kPaged;
    SeqRows seq{};
    if constexpr (kSeq) {
        seq = seq_rows<kVarlen, kPaged>(p, bi.batch);
        if (kVarlen && m0 >= seq.seqlen_q) return;
    }
    TensorBases<unsigned short> bc;
    int n_block_max;
    if constexpr (!kCausal) {
        bc = tensor_bases<unsigned short>(p, bi);
        n_block_max = key_tiles<kBlockM, kBlockN, kCausal>(p, m0);
    }

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int g = lane / 4;
    const int t = lane % 4;
    const int warp_row0 = warp * 16;      // this warp's 16 accumulator rows
    const int wg_row0 = warpgroup::index() * 64;  // its warpgroup's 64 rows (the A operand of S)
    if constexpr (kCausal) {
        bc = tensor_bases<unsigned short>(p, bi);
        n_block_max = key_tiles<kBlockM, kBlockN, kCausal>(p, m0);
    }
    // Score modifiers; a sliding window starts the keys at its first tile: K / V, seqlen_k and the causal offset move
    // there by key_shift rows (tile/mask.cuh, "Window origin").
    constexpr bool kWindow = (kMods & mods::kWindow) != 0;
    const ScoreMod<kMods> mod = ScoreMod<kMods>::make(p, bi.head);
    const auto seqlen_q = [&] { return kSeq ? seq.seqlen_q : p.seqlen_q; };
    const auto seq_keys = [&] { return kSeq ? seq.seqlen_k : p.seqlen_k; };
    const auto seq_offset = [&] { return kSeq ? seq.seqlen_k - seq.seqlen_q : p.causal_offset; };
    if constexpr (kVarlen) {  // one batch of total rows, LSE [heads_q][total_q]
        bc = tensor_bases<unsigned short>(p, {m0, bi.head, 0, bi.head_kv});
        bc.q += seq.q0 * p.q_row_stride, bc.o += seq.q0 * p.o_row_stride;
        bc.k += seq.k0 * p.k_row_stride, bc.v += seq.k0 * p.v_row_stride;
        bc.lse = p.lse == nullptr ? nullptr : p.lse + static_cast<long long>(bi.head) * p.total_q + seq.q0;
    }
    int key_shift = 0;
    if constexpr (kWindow || kSeq) {
        const KeySpan span = key_span<kBlockM, kBlockN, kCausal>(seq_keys(), seq_offset(), m0, mod);
        n_block_max = span.count();
        key_shift = kWindow ? span.first * kBlockN : 0;
        bc.k += key_shift * p.k_row_stride;
        bc.v += key_shift * p.v_row_stride;
    }
    const auto seqlen_k = [&] { return kWindow ? seq_keys() - key_shift : seq_keys(); };
    const auto causal_offset = [&] { return kWindow ? seq_offset() - key_shift : seq_offset(); };

    float acc_o[Tr::kDBlocks][8][4];
    clear_accumulator(acc_o);
    float m_i[2] = {kNegInf, kNegInf};
    float l_i[2] = {0.f, 0.f};

    // K / V tiles of kBlockN rows; Q of kBlockM rows; all [rows][64]-column blocks with the 128-byte swizzle.
    // Paged: keys counted from the sequence's first (key_shift + row0: a multiple of 16).
    const PagedKv<unsigned short> k_pages =
        kPaged ? PagedKv<unsigned short>::keys(p, bi.head_kv, bi.batch) : PagedKv<unsigned short>{};
    const PagedKv<unsigned short> v_pages =
        kPaged ? PagedKv<unsigned short>::values(p, bi.head_kv, bi.batch) : PagedKv<unsigned short>{};
    auto load_k = [&](unsigned smem, int row0) {
        if constexpr (kPaged)
            cp_async_tile_paged<Swizzle128B<kBlockN>, Tr::kNThreads, kBlockN, kHeadDim / 8, kHeadDim>(
                smem, k_pages, key_shift + row0, seq_keys());
        else
            cp_async_tile<Swizzle128B<kBlockN>, Tr::kNThreads, kBlockN, kHeadDim / 8, kHeadDim, kEvenMN>(
                smem, bc.k, p.k_row_stride, row0, seqlen_k());
    };
    auto load_v = [&](unsigned smem, int row0) {
        if constexpr (kPaged)
            cp_async_tile_paged<Swizzle128B<kBlockN>, Tr::kNThreads, kBlockN, kHeadDim / 8, kHeadDim>(
                smem, v_pages, key_shift + row0, seq_keys());
        else
            cp_async_tile<Swizzle128B<kBlockN>, Tr::kNThreads, kBlockN, kHeadDim / 8, kHeadDim, kEvenMN>(
                smem, bc.v, p.v_row_stride, row0, seqlen_k());
    };
    KVRing<kStages, kBlockN, Tr::kKVBytes> ring{sQ + Tr::kQBytes, 0};
    if (n_block_max > 0) {  // Q_i with the first key tile in group 0, then kStages - 2 more tiles
        cp_async_tile<Swizzle128B<kBlockM>, Tr::kNThreads, kBlockM, kHeadDim / 8, kHeadDim, kEvenMN>(
            sQ, bc.q, p.q_row_stride, m0, seqlen_q());
        ring.prologue(n_block_max, load_k, load_v);
    }

    for (int it = 0; it < n_block_max; ++it) {
        const int n_block = n_block_max - 1 - it;  // last tile first: the masked tiles come first
        const int n0 = n_block * kBlockN;
        ring.wait_current();
        wgmma::fence_proxy_async();
        __syncthreads();  // tile `it` landed and is visible to wgmma; every warpgroup is done with the buffer refilled
        ring.refill(n_block, n0, load_k, load_v);
        const unsigned sK = ring.advance();
        const unsigned sV = sK + Tr::kKVBytes;

        // ---- S = Q K^T: k step ks reads 16 columns (32 bytes) inside column block ks / 4 ----------------------------
        float acc_s[Tr::kNTilesS][4];
        wgmma::fence();
        const unsigned long long a0 = wgmma::desc_sw128(sQ + wg_row0 * 128u, 16, 1024);
        const unsigned long long b0 = wgmma::desc_sw128(sK, 16, 1024);
#pragma unroll
        for (int ks = 0; ks < Tr::kKSteps; ++ks) {
            const unsigned long long a = wgmma::desc_advance(a0, (ks / 4) * (kBlockM * 128u) + (ks % 4) * 32u);
#pragma unroll
            for (int nc = 0; nc < Tr::kChunksS; ++nc) {
                const unsigned long long b =
                    wgmma::desc_advance(b0, (ks / 4) * (kBlockN * 128u) + nc * (64 * 128u) + (ks % 4) * 32u);
                wgmma::mma_ss<Tr::kBf16>(acc_s + 8 * nc, a, b, ks > 0);
            }
        }
        wgmma::commit();
        wgmma::wait<0>();
        wgmma::hold(acc_s);

        // ---- mask, online softmax
        // -------------------------------------------------------------------------------------
        if constexpr (kMods == 0 && !kSeq) {
            if (tile_needs_mask<kBlockN, kEvenMN, kCausal>(n0, m0, p.seqlen_k, p.causal_offset))
                mask_fragment<kEvenMN, kCausal>(acc_s, m0 + warp_row0, n0, g, t, p.seqlen_k, p.causal_offset, kNegInf);
        } else {
            modify_fragment(acc_s, m0 + warp_row0, n0, g, t, causal_offset(), mod);
            if (tile_needs_mask<kBlockN, kEvenMN, kCausal>(n0, m0, seqlen_k(), causal_offset()) ||
                window_needs_mask<kBlockM, kBlockN>(n0, m0, causal_offset(), mod))
                mask_fragment<kEvenMN, kCausal>(acc_s, m0 + warp_row0, n0, g, t, seqlen_k(), causal_offset(), kNegInf,
                                                mod);
        }
        unsigned p_frag[Tr::kNTilesS][2];  // P as T pairs: [nt][h] = columns (2t, 2t+1) of row g + 8h
        float alpha[2];
        online_softmax(acc_s, m_i, l_i, alpha, p.scale_log2, kNegInf,
                       [&](int nt, int h, float p0, float p1) { p_frag[nt][h] = pack2<Tr::kBf16>(p0, p1); });

        // ---- O = O * alpha + P V_j, 64 columns at a time: chunk dc computes while chunk dc - 1 is added to O
        // ---------
        float pv[2][8][4];
#pragma unroll
        for (int dc = 0; dc < Tr::kDBlocks; ++dc) {
            wgmma::fence();
#pragma unroll
            for (int kc = 0; kc < kBlockN / 16; ++kc) {
                // A fragment of P for keys 16kc..16kc+15: n-tiles 2kc (a0, a1) and 2kc + 1 (a2, a3). V rows 16kc..: two
                // 8-row groups of 1024 bytes inside column block dc.
                const unsigned a[4] = {p_frag[2 * kc][0], p_frag[2 * kc][1], p_frag[2 * kc + 1][0],
                                       p_frag[2 * kc + 1][1]};
                const unsigned long long b = wgmma::desc_advance(wgmma::desc_sw128(sV, kBlockN * 128u, 1024),
                                                                 dc * (kBlockN * 128u) + kc * (16 * 128u));
                wgmma::mma_rs_bt<Tr::kBf16>(pv[dc % 2], a, b, kc > 0);
            }
            wgmma::commit();
            if (dc > 0) {
                wgmma::wait<1>();
                wgmma::hold(pv[(dc - 1) % 2]);
                rescale_add(acc_o[dc - 1], 0, alpha, pv[(dc - 1) % 2]);
            }
        }
        wgmma::wait<0>();
        wgmma::hold(pv[(Tr::kDBlocks - 1) % 2]);
        rescale_add(acc_o[Tr::kDBlocks - 1], 0, alpha, pv[(Tr::kDBlocks - 1) % 2]);
    }
    ptx::cp_async_wait<0>();  // nothing left in flight at exit (empty groups only)

    // ---- epilogue (tile/epilogue.cuh). Staging reuses this warp's own Q rows: only its warpgroup's wgmmas read them,
    // and every one of those has completed (wait<0> above), so a warp barrier orders the rest.
    __syncwarp();
    const unsigned o_stage = sQ + (warp_row0 + g) * 128u + 4u * t;  // row & 7 == g: chunk nt lives at nt ^ g
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const RowTotals rt = row_totals(l_i[h]);
        const int row = m0 + warp_row0 + h * 8 + g;
        stage_o_row_sw128<Tr::kBf16, kBlockM>(o_stage, h, g, acc_o, rt.inv_l);
        if (bc.lse != nullptr && t == 0 && (kEvenMN || row < seqlen_q())) bc.lse[row] = row_lse(m_i[h], rt, kNegInf);
    }
    __syncwarp();  // the warp's O rows are in shared memory
    store_rows_16b<Swizzle128B<kBlockM>, 16, kHeadDim, kEvenMN>(sQ, warp_row0, bc.o, p.o_row_stride, m0 + warp_row0,
                                                                seqlen_q(), lane);
}

}  // namespace fa_jit
