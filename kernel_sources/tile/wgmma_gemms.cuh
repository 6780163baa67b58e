// The two GEMMs of one key tile on Hopper warpgroup MMA (sm_90a), shared by the wgmma kernels (attention_f16_wgmma.cu,
// attention_decode_wgmma.cu). Q, K and V tiles are head_dim / 64 column blocks of [rows][64] with the 128-byte swizzle
// (tile/swizzle.cuh, Swizzle128B); the accumulators are in the mma.sync m16n8 layout, per warp of the warpgroup.
#pragma once

#include "tile/softmax.cuh"
#include "wgmma.cuh"

namespace fa_jit::tile {

// Issues S = Q K^T for the warpgroup's 64 rows (starting at row wg_row0 of the kBlockM-row Q tile) against the kBlockN
// keys of the K tile at sK, and commits it as one group: k step ks reads 16 columns (32 bytes) inside column block
// ks / 4. kInstrN keys per instruction (wgmma::mma_ss_n): a wider one reads the Q slice once for more keys.
// kStepped: each k step's descriptors are the tile's base descriptors advanced by a constant (wgmma::desc_advance), one
// add per wgmma where encoding each address anew takes a mask, a shift and an OR; false keeps that encoding (for the
// one kernel that measured faster with it, attention_f16_ws.cu).
// extra(acc_s) may issue more wgmmas into S before the commit (tile/alibi_columns.cuh).
struct NoExtraStep {
    template <class Acc>
    __device__ __forceinline__ void operator()(Acc&) const {}
};
template <bool kBf16, int kBlockM, int kBlockN, int kHeadDim, int kInstrN = 64, class KvLayout = Swizzle128B<kBlockN>,
          bool kStepped = true, class Extra = NoExtraStep>
__device__ __forceinline__ void issue_qk(float (&acc_s)[kBlockN / 8][4], unsigned sQ, int wg_row0, unsigned sK,
                                         const Extra& extra = Extra{}) {
    static_assert(kBlockN % kInstrN == 0, "whole instructions per key tile");
    wgmma::fence();
    const unsigned long long a0 = wgmma::desc_sw128(sQ + wg_row0 * 128u, 16, 1024);
    const unsigned long long b0 = wgmma::desc_sw128(sK, 16, KvLayout::kGroupStride);
#pragma unroll
    for (int ks = 0; ks < kHeadDim / 16; ++ks) {
        const unsigned a_offset = (ks / 4) * (kBlockM * 128u) + (ks % 4) * 32u;
        const unsigned long long a =
            kStepped ? wgmma::desc_advance(a0, a_offset) : wgmma::desc_sw128(sQ + wg_row0 * 128u + a_offset, 16, 1024);
#pragma unroll
        for (int nc = 0; nc < kBlockN / kInstrN; ++nc) {
            const unsigned b_offset =
                (ks / 4) * KvLayout::kBlockStride + nc * (kInstrN / 8) * KvLayout::kGroupStride + (ks % 4) * 32u;
            const unsigned long long b = kStepped ? wgmma::desc_advance(b0, b_offset)
                                                  : wgmma::desc_sw128(sK + b_offset, 16, KvLayout::kGroupStride);
            wgmma::mma_ss_n<kInstrN, kBf16>(acc_s + (kInstrN / 8) * nc, a, b, ks > 0);
        }
    }
    extra(acc_s);
    wgmma::commit();
}

// S = Q K^T as issue_qk, waited for.
template <bool kBf16, int kBlockM, int kBlockN, int kHeadDim>
__device__ __forceinline__ void wgmma_qk(float (&acc_s)[kBlockN / 8][4], unsigned sQ, int wg_row0, unsigned sK) {
    issue_qk<kBf16, kBlockM, kBlockN, kHeadDim>(acc_s, sQ, wg_row0, sK);
    wgmma::wait<0>();
    wgmma::hold(acc_s);
}

// The A operand of P V for keys 16kc..16kc+15 (n-tiles 2kc: a0, a1 and 2kc + 1: a2, a3), and the descriptor of the
// matching 16 rows (two 8-row groups) of the V column block at sV_block, MN-major.
template <int kNT>
__device__ __forceinline__ void pv_a_fragment(const unsigned (&p_frag)[kNT][2], int kc, unsigned (&a)[4]) {
    a[0] = p_frag[2 * kc][0], a[1] = p_frag[2 * kc][1], a[2] = p_frag[2 * kc + 1][0], a[3] = p_frag[2 * kc + 1][1];
}
template <class KvLayout, bool kStepped = true>
__device__ __forceinline__ unsigned long long v_rows_desc(unsigned sV_block, int kc) {
    if (!kStepped)
        return wgmma::desc_sw128(sV_block + 2 * kc * KvLayout::kGroupStride, KvLayout::kBlockStride,
                                 KvLayout::kGroupStride);
    return wgmma::desc_advance(wgmma::desc_sw128(sV_block, KvLayout::kBlockStride, KvLayout::kGroupStride),
                               2 * kc * KvLayout::kGroupStride);
}

// Issues the P V product of one 64-column chunk of the V tile (column block at sV_chunk) into a fresh accumulator
// pv, and commits it as one group. P is the register A operand (p_frag[nt][h]: columns 2t, 2t + 1 of row g + 8h as a T
// pair); V is MN-major, transposed by the tensor core.
template <bool kBf16, int kBlockN, class KvLayout = Swizzle128B<kBlockN>>
__device__ __forceinline__ void issue_pv_chunk(float (&pv)[8][4], const unsigned (&p_frag)[kBlockN / 8][2],
                                               unsigned sV_chunk) {
    wgmma::fence();
#pragma unroll
    for (int kc = 0; kc < kBlockN / 16; ++kc) {
        unsigned a[4];
        pv_a_fragment(p_frag, kc, a);
        wgmma::mma_rs_bt<kBf16>(pv, a, v_rows_desc<KvLayout>(sV_chunk, kc), kc > 0);
    }
    wgmma::commit();
}

// O = O * alpha + P V for the V tile at sV, 64 output columns at a time: chunk c computes while chunk c - 1 is added
// to O. Each chunk goes into a fresh accumulator and is added to the rescaled O with an ordinary FFMA, so the tensor
// core's truncating accumulation does not bias long rows. kPipelined = false waits for each chunk before issuing the
// next: half the accumulator registers, for kernels short of them. (128-column chunks measured no faster:
// bench/NOTES.md.)
template <bool kBf16, int kBlockN, int kHeadDim, bool kPipelined = true, class KvLayout = Swizzle128B<kBlockN>>
__device__ __forceinline__ void wgmma_pv(float (&acc_o)[kHeadDim / 64][8][4], const unsigned (&p_frag)[kBlockN / 8][2],
                                         const float (&alpha)[2], unsigned sV) {
    constexpr int kChunks = kHeadDim / 64;
    constexpr int kBuffers = kPipelined ? 2 : 1;
    float pv[kBuffers][8][4];
    const auto add_chunk = [&](int c) {
        wgmma::hold(pv[c % kBuffers]);
        rescale_add(acc_o[c], 0, alpha, pv[c % kBuffers]);
    };
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
        issue_pv_chunk<kBf16, kBlockN, KvLayout>(pv[c % kBuffers], p_frag, sV + c * KvLayout::kBlockStride);
        if (!kPipelined) {
            wgmma::wait<0>();
            add_chunk(c);
        } else if (c > 0) {
            wgmma::wait<1>();
            add_chunk(c - 1);
        }
    }
    if (kPipelined) {
        wgmma::wait<0>();
        add_chunk(kChunks - 1);
    }
}

// The columns of O that P V computes for a head dim of kColumns padded to kHeadDimP (whole 64-column blocks): all,
// or all but the last block's upper half where the head dim leaves it empty (d 72-96, 136-160, 200-224).
__host__ __device__ constexpr int pv_columns(int kHeadDimP, int kColumns) {
    return kHeadDimP > 64 && kColumns <= kHeadDimP - 32 ? kHeadDimP - 32 : kHeadDimP;
}

// O += P V for the V tile at sV with the tensor core accumulating into O itself (the caller rescales O by alpha
// before), all column blocks in one commit group. Needs no second accumulator, so S of the next key tile has registers
// while this runs; the price is the tensor core's truncating accumulation over a row's key tiles (bench/NOTES.md).
// One instruction per k step spans every column block: the P fragment reaches the tensor core once (1-3 % faster
// than one instruction per block at d 128 / 256). Only the first pv_columns(kHeadDim, kColumns) columns are computed:
// the n-tiles past them stay as they are (hold_o and rescale_o skip them too). kStepped as in issue_qk.
template <bool kBf16, int kBlockN, int kHeadDim, class KvLayout = Swizzle128B<kBlockN>, int kColumns = kHeadDim,
          bool kStepped = true>
__device__ __forceinline__ void issue_pv_into_o(float (&acc_o)[kHeadDim / 64][8][4],
                                                const unsigned (&p_frag)[kBlockN / 8][2], unsigned sV) {
    constexpr int kBlocks = kHeadDim / 64;
    wgmma::fence();
#pragma unroll
    for (int kc = 0; kc < kBlockN / 16; ++kc) {
        unsigned a[4];
        pv_a_fragment(p_frag, kc, a);
        if constexpr (kBlocks > 1)
            wgmma::mma_rs_bt_blocks<kBf16, kBlocks, pv_columns(kHeadDim, kColumns)>(
                acc_o, a, v_rows_desc<KvLayout, kStepped>(sV, kc), 1);
        else
            wgmma::mma_rs_bt<kBf16>(acc_o[0], a, v_rows_desc<KvLayout, kStepped>(sV, kc), 1);
    }
    wgmma::commit();
}

// f(tile) for each n-tile of O in its first kN columns (pv_columns): the n-tiles P V writes.
template <int kN, int kBlocks, class F>
__device__ __forceinline__ void for_pv_tiles(float (&acc_o)[kBlocks][8][4], const F& f) {
#pragma unroll
    for (int c = 0; c < kBlocks; ++c)
#pragma unroll
        for (int i = 0; i < 8; ++i)
            if (c * 64 + i * 8 < kN) f(acc_o[c][i]);
}
// wgmma::hold and rescale_rows over those n-tiles.
template <int kN, int kBlocks>
__device__ __forceinline__ void hold_o(float (&acc_o)[kBlocks][8][4]) {
    for_pv_tiles<kN>(acc_o, [](float(&tile)[4]) {
#pragma unroll
        for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(tile[e])::"memory");
    });
}
template <int kN, int kBlocks>
__device__ __forceinline__ void rescale_o(float (&acc_o)[kBlocks][8][4], const float (&alpha)[2]) {
    for_pv_tiles<kN>(acc_o, [&](float(&tile)[4]) {
#pragma unroll
        for (int e = 0; e < 4; ++e) tile[e] *= alpha[e / 2];
    });
}

}  // namespace fa_jit::tile
