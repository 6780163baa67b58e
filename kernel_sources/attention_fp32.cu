// FlashAttention-2 forward pass in fp32 (Dao 2023, Algorithm 1), compiled at run time by NVRTC.
//
//   template <int kBlockM, int kBlockN, int kHeadDim, int kNWarps, bool kCausal, int kMath = kMath3xTF32,
//             int kMinBlocksPerSm = 1, bool kSequsedK = false, int kMods = 0, bool kVarlen = false,
//             bool kPaged = false>
//   __global__ void attention_fwd_fp32(const __grid_constant__ AttentionParams p);
//
//   kBlockM  B_r: query rows per block; a multiple of 16 * kNWarps (each warp owns kBlockM / kNWarps rows).
//   kBlockN  B_c: key/value rows per step of the inner loop; a multiple of 8.
//   kHeadDim d: exactly p.head_dim, any value 1..256 (the on-chip tile is rounded up to 16 and zero-padded).
//   kNWarps  warps per block (block = 32 * kNWarps threads).
//   kCausal  bottom-right aligned causal mask: query row i sees key j iff j <= i + seqlen_k - seqlen_q, where seqlen_k
//            is the sequence's used length under per-sequence lengths (p.seqused_k, clamped).
//   kMath    kMath3xTF32 (default): tensor-core mma.sync m16n8k8 TF32 with the 3xTF32 split
//              (a = a_big + a_small; a*b ~ a_big*b_big + a_big*b_small + a_small*b_big), about fp32 accuracy;
//            kMathSimt: plain fp32 FMAs on CUDA cores (slower; a fallback and an accuracy cross-check).
//   kMinBlocksPerSm  second __launch_bounds__ argument: ptxas keeps registers <= 64K / (32 * kNWarps * this).
//            1 (default) lets ptxas use up to 255 registers; without it ptxas picks its own occupancy target and
//            spills a few bytes in some shapes (e.g. 168 registers for 128 threads). Larger values trade registers
//            for occupancy; keep configs whose -Xptxas -v shows 0 spill bytes.
//   kSequsedK  reads per-sequence KV lengths (p.seqused_k, clamped): a compile-time feature, so that kernels without
//            it carry none of its registers (read at run time, it made ptxas spill 8-32 bytes more at d 192 / 256).
//   kMods    score modifiers (mods:: bits; tile/mask.cuh): a sliding window moves K / V to its first key tile.
//   kVarlen  packed sequences (p.cu_seqlens_q / _k, tile::seq_rows): a block past its sequence's end exits.
//   kPaged   K / V in a paged cache (p.block_table, tile/paged_kv.cuh), keys seqused_k[b] or seqlen_k.
//
// Name expression:  fa_jit::attention_fwd_fp32<64, 64, 128, 4, false, 1, 1>   (always render the first 7 arguments)
// Launch:           grid (ceil(seqlen_q / kBlockM), heads_q, batch), block kNWarps * 32,
//                   dynamic shared memory = AttentionFwdFp32Traits<...>::kSmemBytes (over 48 KB: raise the limit).
// Requires sm_80+ (cp.async, tf32 mma). seqlen_q must be >= 1 (a grid of 0 blocks cannot be launched).
//
// Register layout (both maths): warp w owns query rows [w * kWarpRows, (w + 1) * kWarpRows) of the block's tile.
// With lane = 4 * g + t (g = lane / 4 in 0..7, t = lane % 4), a thread holds, for every 16-row m-tile mt and every
// 8-column n-tile nt, the elements (row mt*16 + g + 8h, column nt*8 + 2t + c), h, c in {0, 1}: the accumulator
// ("C") layout of mma.m16n8k8. A row is therefore spread over the 4 lanes of one quad, and row reductions are two
// __shfl_xor_sync steps (xor 1, xor 2).
#pragma once

#include "attention_fp32_layout.cuh"
#include "attention_params.cuh"
#include "dtypes.cuh"
#include "ptx.cuh"
#include "tile/coords.cuh"
#include "tile/copy.cuh"
#include "tile/epilogue.cuh"
#include "tile/mask.cuh"
#include "tile/softmax.cuh"

namespace fa_jit {

enum : int { kMathSimt = 0, kMath3xTF32 = 1 };

// ================================================================================================================
// Traits: the tile shape and everything derived from it
// ================================================================================================================
template <int kBlockM_, int kBlockN_, int kHeadDim_, int kNWarps_, int kMath_>
struct AttentionFwdFp32Traits {
    static constexpr int kBlockM = kBlockM_;  // B_r
    static constexpr int kBlockN = kBlockN_;  // B_c
    static constexpr int kHeadDim = kHeadDim_;
    static constexpr int kNWarps = kNWarps_;
    static constexpr int kMath = kMath_;
    static constexpr int kNThreads = kNWarps * 32;

    static constexpr int kWarpRows = kBlockM / kNWarps;  // query rows owned by one warp
    static constexpr int kMTiles = kWarpRows / 16;       // 16-row m-tiles per warp
    static constexpr int kNTilesS = kBlockN / 8;         // 8-column n-tiles of S = Q K^T
    static constexpr int kHeadDimPad = fp32_layout::head_dim_pad(kHeadDim);
    static constexpr int kNTilesO = kHeadDimPad / 8;  // 8-column n-tiles of O

    static constexpr int kQKStride = fp32_layout::qk_stride(kHeadDim);  // bank-conflict-free strides: see the layout
    static constexpr int kVStride = fp32_layout::v_stride(kHeadDim);

    static constexpr int kSmemQFloats = kBlockM * kQKStride;
    static constexpr int kSmemKFloats = kBlockN * kQKStride;
    static constexpr int kSmemVFloats = kBlockN * kVStride;
    static constexpr int kSmemBytes = 4 * (kSmemQFloats + kSmemKFloats + kSmemVFloats);
    static_assert(kSmemBytes == fp32_layout::smem_bytes(kBlockM, kBlockN, kHeadDim), "host and kernel disagree");

    static_assert(kNWarps >= 1 && kNWarps <= 16, "kNWarps must be in 1..16 (at most 512 threads)");
    static_assert(kBlockM % (16 * kNWarps) == 0, "kBlockM must be a multiple of 16 * kNWarps (16-row mma tiles)");
    static_assert(kBlockN % 8 == 0 && kBlockN >= 8, "kBlockN must be a positive multiple of 8 (mma n/k = 8)");
    static_assert(kHeadDim >= 1 && kHeadDim <= 256, "kHeadDim must be in 1..256");
    static_assert(kMath == kMathSimt || kMath == kMath3xTF32, "kMath must be kMathSimt (0) or kMath3xTF32 (1)");
    static_assert(kSmemBytes <= 227 * 1024, "tile does not fit in shared memory (227 KB on sm_90, 163 KB on sm_80)");
};

namespace fp32_detail {

using namespace ptx;  // exp2_approx, cp_async_*, quad_max, quad_sum, ...

// ---- 3xTF32 ------------------------------------------------------------------------------------------------------
// x = big + small with big = x truncated to TF32 (19 bits: the tensor core ignores the low 13 mantissa bits) and
// small = x - big exactly. The tensor core truncates small to TF32 too, so each product keeps ~2^-21 relative error
// (fp32-grade); the dropped small*small term is of the same order.
struct Tf32Split {
    unsigned big, small;
};
__device__ __forceinline__ Tf32Split split_tf32(float x) {
    const unsigned big = float_as_bits(x) & 0xffffe000u;
    return {big, float_as_bits(x - bits_as_float(big))};
}
// The same, but never hoisted or shared between uses by the compiler (a volatile asm is not common-subexpression
// eliminated): recomputing a split costs two instructions, keeping it alive costs two registers per element.
__device__ __forceinline__ Tf32Split split_tf32_here(float x) {
    unsigned big;
    asm volatile("and.b32 %0, %1, 0xffffe000;" : "=r"(big) : "r"(float_as_bits(x)));
    return {big, float_as_bits(x - bits_as_float(big))};
}

// D[16x8] += A[16x8] (row-major) * B[8x8] (column-major), TF32 inputs, fp32 accumulate.
__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// A and B fragments of one m16n8k8 step, each already split into big and small parts.
struct FragA {
    unsigned big[4], small[4];
};
struct FragB {
    unsigned big[2], small[2];
};
__device__ __forceinline__ FragA make_frag_a(float a0, float a1, float a2, float a3) {
    const float v[4] = {a0, a1, a2, a3};
    FragA f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const Tf32Split s = split_tf32_here(v[i]);
        f.big[i] = s.big;
        f.small[i] = s.small;
    }
    return f;
}
__device__ __forceinline__ FragB make_frag_b(float b0, float b1) {
    const Tf32Split s0 = split_tf32(b0), s1 = split_tf32(b1);
    return {{s0.big, s1.big}, {s0.small, s1.small}};
}
// Small terms first so that they are not absorbed by the large partial sum before being added.
__device__ __forceinline__ void mma_3xtf32(float (&d)[4], const FragA& a, const FragB& b) {
    mma_tf32(d, a.small, b.big);
    mma_tf32(d, a.big, b.small);
    mma_tf32(d, a.big, b.big);
}

// ---- global -> shared tile loads (tile/copy.cuh) -----------------------------------------------------------------
template <class Tr, int kRows, int kSmemStride>
__device__ __forceinline__ void load_tile(float* smem, const float* gmem, long long stride, int row0, int rows_total,
                                          bool vec) {
    tile::cp_async_tile_fp32<Tr::kNThreads, kRows, kSmemStride, Tr::kHeadDimPad, Tr::kHeadDim>(smem, gmem, stride, row0,
                                                                                               rows_total, vec);
}

__device__ __forceinline__ bool aligned16(const void* ptr, long long s0, long long s1, long long s2) {
    return (reinterpret_cast<unsigned long long>(ptr) & 15ull) == 0 && ((s0 | s1 | s2) & 3ll) == 0;
}

}  // namespace fp32_detail

// ================================================================================================================
// The kernel
// ================================================================================================================
template <int kBlockM, int kBlockN, int kHeadDim, int kNWarps, bool kCausal, int kMath = kMath3xTF32,
          int kMinBlocksPerSm = 1, bool kSequsedK = false, int kMods = 0, bool kVarlen = false, bool kPaged = false>
__global__ void __launch_bounds__(kNWarps * 32, kMinBlocksPerSm)
    attention_fwd_fp32(const __grid_constant__ AttentionParams p) {
    using namespace fp32_detail;
    const float kNegInf = neg_inf_f32();
    using Tr = AttentionFwdFp32Traits<kBlockM, kBlockN, kHeadDim, kNWarps, kMath>;
    constexpr int kMTiles = Tr::kMTiles;
    constexpr int kNTilesS = Tr::kNTilesS;
    constexpr int kNTilesO = Tr::kNTilesO;

    extern __shared__ float4 smem_raw[];             // float4: 16-byte aligned for cp.async.cg and ld.shared.v4
    float* sQ = reinterpret_cast<float*>(smem_raw);  // Q_i [kBlockM][kQKStride]
    float* sK = sQ + Tr::kSmemQFloats;               // K_j [kBlockN][kQKStride]
    float* sV = sK + Tr::kSmemKFloats;               // V_j [kBlockN][kVStride]

    // ---- which tile (tile/coords.cuh: heavy causal tiles first, GQA head, 64-bit bases, visible key tiles) ------
    const tile::BlockIndex bi = tile::block_index<kBlockM, kCausal>(p);
    const int m0 = bi.m0;  // first query row of this block

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int g = lane / 4;  // row within an 8-row group
    const int t = lane % 4;  // column pair within an 8-column n-tile
    const int warp_row0 = warp * Tr::kWarpRows;

    // Packed sequences: this block's sequence (one batch of total rows, LSE [heads_q][total_q]); past its end, nothing
    // to do.
    // A paged cache: the sequence's keys (seqused_k or seqlen_k) in pages.
    constexpr bool kSeq = kVarlen || kPaged;
    tile::SeqRows seq{};
    tile::TensorBases<float> tb = tile::tensor_bases<float>(p, bi);
    if constexpr (kSeq) {
        seq = tile::seq_rows<kVarlen, kPaged>(p, bi.batch);
        if (kVarlen && m0 >= seq.seqlen_q) return;
    }
    if constexpr (kVarlen) {
        tb = tile::tensor_bases<float>(p, {bi.m0, bi.head, 0, bi.head_kv});
        tb.q += seq.q0 * p.q_row_stride, tb.k += seq.k0 * p.k_row_stride, tb.v += seq.k0 * p.v_row_stride;
        tb.lse = p.lse == nullptr ? nullptr : p.lse + static_cast<long long>(bi.head) * p.total_q + seq.q0;
    }
    const auto seqlen_q = [&] { return kSeq ? seq.seqlen_q : p.seqlen_q; };
    const float* q = tb.q;
    // Score modifiers; a sliding window starts the keys at its first tile: K / V, seqlen_k and the causal offset move
    // there by key_shift rows (tile/mask.cuh, "Window origin").
    constexpr bool kWindow = (kMods & mods::kWindow) != 0;
    const tile::ScoreMod<kMods> mod = tile::ScoreMod<kMods>::make(p, bi.head);
    const int used_k = kSequsedK ? tile::used_keys(p, bi.batch) : 0;
    const int used_offset = kSequsedK ? tile::causal_offset(p, used_k) : 0;
    // The sequence's (used) keys: with packed sequences its own length, cut by seqused_k; the causal offset aligns
    // to them.
    const int keys = kSeq ? (kSequsedK ? min(used_k, seq.seqlen_k) : seq.seqlen_k) : kSequsedK ? used_k : p.seqlen_k;
    const int offset = kSeq ? keys - seq.seqlen_q : kSequsedK ? used_offset : p.causal_offset;
    const tile::KeySpan span = tile::key_span<kBlockM, kBlockN, kCausal>(keys, offset, m0, mod);
    const int key_shift = kWindow ? span.first * kBlockN : 0;
    const float* k = tb.k + (kWindow ? key_shift * p.k_row_stride : 0);
    const float* v = tb.v + (kWindow ? key_shift * p.v_row_stride : 0);
    // O's base here, not tb.o: from the helper it lands elsewhere in the PTX, and ptxas spills 8 (sm_80) / 16 (sm_90a)
    // more bytes in <128, 64, 64, 4>, 8 in <128, 32, 160, 8> (sm_80).
    float* o = static_cast<float*>(p.o) + (kVarlen ? 0 : bi.batch) * p.o_batch_stride + bi.head * p.o_head_stride +
               (kVarlen ? seq.q0 * p.o_row_stride : 0);
    float* lse = tb.lse;
    // The keys this sequence uses (p.seqused_k, clamped) and the causal offset aligned to them. Without kSequsedK the
    // kernel reads p.seqlen_k and p.causal_offset where it uses them, as before the feature: the same values held in
    // locals changed ptxas's allocation at 255 registers (SASS of the causal d-128 default differed throughout).
    const auto seqlen_k = [&] { return (kSeq ? keys : kSequsedK ? used_k : p.seqlen_k) - key_shift; };
    const auto causal_offset = [&] { return (kSeq ? offset : kSequsedK ? used_offset : p.causal_offset) - key_shift; };
    const int n_block_max = kMods != 0 || kSeq ? span.count()
                            : kSequsedK        ? tile::key_tiles<kBlockM, kBlockN, kCausal>(used_k, used_offset, m0)
                                               : tile::key_tiles<kBlockM, kBlockN, kCausal>(p, m0);

    float acc_o[kMTiles][kNTilesO][4];  // O_i, unnormalised
    float m_i[kMTiles][2];              // running row max of S * scale_log2 (log2 units)
    float l_i[kMTiles][2];              // running row sum of exp2(S * scale_log2 - m_i); this thread's columns only
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
        for (int nt = 0; nt < kNTilesO; ++nt) {
#pragma unroll
            for (int e = 0; e < 4; ++e) acc_o[mt][nt][e] = 0.f;
        }
        m_i[mt][0] = m_i[mt][1] = kNegInf;
        l_i[mt][0] = l_i[mt][1] = 0.f;
    }

    const bool q_vec = aligned16(q, p.q_batch_stride, p.q_head_stride, p.q_row_stride);
    const bool k_vec = aligned16(k, p.k_batch_stride, p.k_head_stride, p.k_row_stride);
    const bool v_vec = aligned16(v, p.v_batch_stride, p.v_head_stride, p.v_row_stride);
    // K / V tiles from key row0 (counted from key_shift); paged: through the block table.
    using Paged = tile::PagedKv<float>;
    const Paged k_pages = kPaged ? Paged::keys(p, bi.head_kv, bi.batch) : Paged{};
    const Paged v_pages = kPaged ? Paged::values(p, bi.head_kv, bi.batch) : Paged{};
    const auto load_k = [&](int row0) {
        if constexpr (kPaged)
            tile::cp_async_tile_fp32_paged<Tr::kNThreads, kBlockN, Tr::kQKStride, Tr::kHeadDimPad, Tr::kHeadDim>(
                sK, k_pages, key_shift + row0, keys, k_vec);
        else
            load_tile<Tr, kBlockN, Tr::kQKStride>(sK, k, p.k_row_stride, row0, seqlen_k(), k_vec);
    };
    const auto load_v = [&](int row0) {
        if constexpr (kPaged)
            tile::cp_async_tile_fp32_paged<Tr::kNThreads, kBlockN, Tr::kVStride, Tr::kHeadDimPad, Tr::kHeadDim>(
                sV, v_pages, key_shift + row0, keys, v_vec);
        else
            load_tile<Tr, kBlockN, Tr::kVStride>(sV, v, p.v_row_stride, row0, seqlen_k(), v_vec);
    };

    // ---- prologue: Q_i and the first K_j in flight
    // -------------------------------------------------------------------- Key tiles are visited from the last to the
    // first, so the (at most two) tiles that need masking come first. If no row of this block sees any key (seqlen_k ==
    // 0, or causal above the diagonal), nothing is loaded, the loop does not run and the epilogue writes O = 0, LSE =
    // -inf (l_i = 0).
    if (n_block_max > 0) {
        load_tile<Tr, kBlockM, Tr::kQKStride>(sQ, q, p.q_row_stride, m0, seqlen_q(), q_vec);
        load_k((n_block_max - 1) * kBlockN);
        cp_async_commit();
    }

    for (int n_block = n_block_max - 1; n_block >= 0; --n_block) {
        const int n0 = n_block * kBlockN;
        cp_async_wait_all();
        __syncthreads();  // K_j landed; every warp is done reading V_{j+1}
        load_v(n0);
        cp_async_commit();

        // ---- S[B_r][B_c] = Q_i @ K_j^T  (this warp: kWarpRows x B_c) ------------------------------------------------
        float acc_s[kMTiles][kNTilesS][4];
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
            for (int nt = 0; nt < kNTilesS; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc_s[mt][nt][e] = 0.f;

        if (kMath == kMath3xTF32) {
            // The dot-product index d is a free permutation: per 16 columns, lane (g, t) reads 4 consecutive
            // columns 4t..4t+3 with one float4 and uses {4t, 4t+1} as the k-step's (t, t+4) and {4t+2, 4t+3} as the
            // next k-step's: one 128-bit load per 2 k-steps instead of four 32-bit loads.
#pragma unroll
            for (int kk = 0; kk < Tr::kHeadDimPad / 16; ++kk) {
                FragA a[kMTiles][2];
#pragma unroll
                for (int mt = 0; mt < kMTiles; ++mt) {
                    const float* q_lo = sQ + (warp_row0 + mt * 16 + g) * Tr::kQKStride + kk * 16 + 4 * t;
                    const float4 x0 = *reinterpret_cast<const float4*>(q_lo);                      // row g
                    const float4 x1 = *reinterpret_cast<const float4*>(q_lo + 8 * Tr::kQKStride);  // row g + 8
                    a[mt][0] = make_frag_a(x0.x, x1.x, x0.y, x1.y);
                    a[mt][1] = make_frag_a(x0.z, x1.z, x0.w, x1.w);
                }
#pragma unroll
                for (int nt = 0; nt < kNTilesS; ++nt) {
                    const float4 y =
                        *reinterpret_cast<const float4*>(sK + (nt * 8 + g) * Tr::kQKStride + kk * 16 + 4 * t);
                    const FragB b0 = make_frag_b(y.x, y.y), b1 = make_frag_b(y.z, y.w);
#pragma unroll
                    for (int mt = 0; mt < kMTiles; ++mt) {
                        mma_3xtf32(acc_s[mt][nt], a[mt][0], b0);
                        mma_3xtf32(acc_s[mt][nt], a[mt][1], b1);
                    }
                }
            }
        } else {
            // SIMT: each thread forms its own S elements as float4 dot products. Lanes with different t start at
            // different float4 columns (rotation by t) so that the K reads of a quarter-warp hit distinct banks.
            constexpr int kD4 = Tr::kHeadDimPad / 4;
#pragma unroll 4
            for (int kk = 0; kk < kD4; ++kk) {
                int kc = kk + t;
                if (kc >= kD4) kc -= kD4;
                float4 x[kMTiles][2];
#pragma unroll
                for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
                    for (int h = 0; h < 2; ++h)
                        x[mt][h] = *reinterpret_cast<const float4*>(
                            sQ + (warp_row0 + mt * 16 + h * 8 + g) * Tr::kQKStride + 4 * kc);
#pragma unroll
                for (int nt = 0; nt < kNTilesS; ++nt)
#pragma unroll
                    for (int c = 0; c < 2; ++c) {
                        const float4 y =
                            *reinterpret_cast<const float4*>(sK + (nt * 8 + 2 * t + c) * Tr::kQKStride + 4 * kc);
#pragma unroll
                        for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
                            for (int h = 0; h < 2; ++h) {
                                float& s = acc_s[mt][nt][2 * h + c];
                                s = fmaf(x[mt][h].x, y.x, s);
                                s = fmaf(x[mt][h].y, y.y, s);
                                s = fmaf(x[mt][h].z, y.z, s);
                                s = fmaf(x[mt][h].w, y.w, s);
                            }
                    }
            }
        }

        // ---- scale to log2 units (any finite scale); mask tiles that straddle seqlen_k or the causal diagonal
        // ----------
        // Softcap and ALiBi (kMods) on the raw score first.
        const bool need_mask = tile::tile_needs_mask<kBlockN, false, kCausal>(n0, m0, seqlen_k(), causal_offset()) ||
                               tile::window_needs_mask<kBlockM, kBlockN>(n0, m0, causal_offset(), mod);
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
            for (int nt = 0; nt < kNTilesS; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    float s = acc_s[mt][nt][e] * p.scale_log2;
                    if constexpr (kMods != 0)
                        s = mod.template apply<true>(acc_s[mt][nt][e], tile::frag_row(m0 + warp_row0 + mt * 16, e, g),
                                                     tile::frag_col(n0, nt, e, t), causal_offset()) *
                            p.scale_log2;
                    if (need_mask) {  // nested, not `need_mask && ...`: the flattened form spills at 255 registers
                        const int row = tile::frag_row(m0 + warp_row0 + mt * 16, e, g);
                        const int col = tile::frag_col(n0, nt, e, t);
                        if (tile::key_masked<false, kCausal>(row, col, seqlen_k(), causal_offset()) ||
                            mod.outside(row, col, causal_offset()))
                            s = kNegInf;
                    }
                    acc_s[mt][nt][e] = s;
                }

                // ---- online softmax (tile/softmax.cuh, scores already scaled): m_i, l_i, P = exp2(S - m_i) in place,
                // O_i *= exp2(m_old - m_new)
                // ------------------------------------------------------------------------------------
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float alpha;
                const float m_use = tile::softmax_row_max<true>(acc_s[mt], h, m_i[mt][h], alpha, 0.f, kNegInf);
                const float row_sum =
                    tile::softmax_row_exp<true>(acc_s[mt], h, m_use, 0.f, [&](int nt, float p0, float p1) {
                        acc_s[mt][nt][2 * h] = p0;
                        acc_s[mt][nt][2 * h + 1] = p1;
                    });
                l_i[mt][h] = l_i[mt][h] * alpha + row_sum;
#pragma unroll
                for (int nt = 0; nt < kNTilesO; ++nt) {
                    acc_o[mt][nt][2 * h] *= alpha;
                    acc_o[mt][nt][2 * h + 1] *= alpha;
                }
            }

        cp_async_wait_all();
        __syncthreads();  // V_j landed; every warp is done reading K_j
        if (n_block > 0) {
            load_k(n0 - kBlockN);
            cp_async_commit();
        }

        // ---- O_i[B_r][d] += P[B_r][B_c] @ V_j[B_c][d]
        // -----------------------------------------------------------------
        if (kMath == kMath3xTF32) {
            // P's accumulator layout holds columns (2t, 2t+1) of each 8-key n-tile; the A operand wants k = (t, t+4).
            // Relabel the summation index: logical k = t is key 2t and k = t + 4 is key 2t + 1, and read V's rows in
            // the same order. No shuffles needed.
            //
            // The tensor core rounds its fp32 accumulation toward zero. Accumulating every tile into O_i directly
            // would shrink |O_i| by about 2^-24 per mma, a relative error that grows with seqlen_k (1e-4 at 16k keys).
            // So each tile's P V_j goes to a fresh accumulator, which O_i takes with one correctly rounded add.
#ifndef FA_JIT_PV_CHUNK
#define FA_JIT_PV_CHUNK 2
#endif
            constexpr int kChunk = kNTilesO < FA_JIT_PV_CHUNK ? kNTilesO : FA_JIT_PV_CHUNK;  // n-tiles of O per pass
#pragma unroll
            for (int nt0 = 0; nt0 < kNTilesO; nt0 += kChunk) {
                float pv[kMTiles][kChunk][4];
#pragma unroll
                for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
                    for (int j = 0; j < kChunk; ++j) pv[mt][j][0] = pv[mt][j][1] = pv[mt][j][2] = pv[mt][j][3] = 0.f;
#pragma unroll
                for (int kc = 0; kc < kNTilesS; ++kc) {
                    FragA a[kMTiles];
#pragma unroll
                    for (int mt = 0; mt < kMTiles; ++mt)
                        a[mt] = make_frag_a(acc_s[mt][kc][0], acc_s[mt][kc][2], acc_s[mt][kc][1], acc_s[mt][kc][3]);
                    const float* v_rows = sV + (kc * 8 + 2 * t) * Tr::kVStride + g;
#pragma unroll
                    for (int j = 0; j < kChunk; ++j) {
                        if (nt0 + j >= kNTilesO) break;
                        const FragB b = make_frag_b(v_rows[(nt0 + j) * 8], v_rows[Tr::kVStride + (nt0 + j) * 8]);
#pragma unroll
                        for (int mt = 0; mt < kMTiles; ++mt) mma_3xtf32(pv[mt][j], a[mt], b);
                    }
                }
#pragma unroll
                for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
                    for (int j = 0; j < kChunk; ++j)
                        if (nt0 + j < kNTilesO)
#pragma unroll
                            for (int e = 0; e < 4; ++e) acc_o[mt][nt0 + j][e] += pv[mt][j][e];
            }
        } else {
            // SIMT: key j's probabilities live in lane (g, t_j) of the quad; broadcast them with shuffles.
#pragma unroll
            for (int kc = 0; kc < kNTilesS; ++kc)
#pragma unroll
                for (int tj = 0; tj < 4; ++tj)
#pragma unroll
                    for (int c = 0; c < 2; ++c) {
                        float pj[kMTiles][2];
#pragma unroll
                        for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
                            for (int h = 0; h < 2; ++h)
                                pj[mt][h] = __shfl_sync(0xffffffffu, acc_s[mt][kc][2 * h + c], (lane & ~3) | tj);
                        const float* v_row = sV + (kc * 8 + 2 * tj + c) * Tr::kVStride + 2 * t;
#pragma unroll
                        for (int nt = 0; nt < kNTilesO; ++nt) {
                            const float2 y = *reinterpret_cast<const float2*>(v_row + nt * 8);
#pragma unroll
                            for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
                                for (int h = 0; h < 2; ++h) {
                                    acc_o[mt][nt][2 * h] = fmaf(pj[mt][h], y.x, acc_o[mt][nt][2 * h]);
                                    acc_o[mt][nt][2 * h + 1] = fmaf(pj[mt][h], y.y, acc_o[mt][nt][2 * h + 1]);
                                }
                        }
                    }
        }
    }

    // ---- epilogue: O_i / l_i and LSE = ln(sum exp(s * scale)) = (m_i + log2 l_i) * ln 2
    // ---------------------------------
    float inv_l[kMTiles][2], lse_row[kMTiles][2];
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const tile::RowTotals rt = tile::row_totals(l_i[mt][h]);  // rt.any: false only for rows that see no key
            inv_l[mt][h] = rt.inv_l;
            lse_row[mt][h] = tile::row_lse(m_i[mt][h], rt, kNegInf);
        }

        // ---- write O_i (rows < seqlen_q, columns < d) and LSE; a thread holds rows warp_row0 + mt*16 + h*8 + g
        // -----------
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = m0 + warp_row0 + mt * 16 + h * 8 + g;
            if (row >= seqlen_q()) continue;
            float* o_row = o + row * p.o_row_stride;
#pragma unroll
            for (int nt = 0; nt < kNTilesO; ++nt) {
#pragma unroll
                for (int c = 0; c < 2; ++c) {
                    const int col = nt * 8 + 2 * t + c;
                    if (col < kHeadDim) o_row[col] = acc_o[mt][nt][2 * h + c] * inv_l[mt][h];
                }
            }
            if (lse != nullptr && t == 0) lse[row] = lse_row[mt][h];
        }
    }
}

}  // namespace fa_jit
