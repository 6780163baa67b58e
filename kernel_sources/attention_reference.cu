// Reference attention forward: plainly correct, not fast. Used to validate the fast kernels before timing them.
//
//   template <typename T, bool kCausal>
//   __global__ void attention_reference(const __grid_constant__ AttentionParams p);
//   T in {float, fa_jit::half_t, fa_jit::bf16_t}; head_dim is read at run time from p.head_dim (1..256).
//
// Name expression:  fa_jit::attention_reference<float, false>   (or <fa_jit::half_t, true>, <fa_jit::bf16_t, …>)
// Launch:           grid (ceil(seqlen_q / 128), heads_q, batch), block 128 threads, no dynamic shared memory.
//
// Packed sequences (p.cu_seqlens_q, read at run time): the grid's batch is the sequence, rows come from
// tile::seq_rows, LSE is [heads_q][total_q]. A paged cache (p.block_table, read at run time): keys through the table
// (tile/paged_kv.cuh).
// One thread per query row, float64 throughout, two passes over the keys (row max, then sum and P @ V):
//   s_j = scale * q . k_j    for visible keys j (j < used and, if causal, j <= i + off; inside the sliding window
//                            i + off - window_left <= j <= i + off + window_right), where used is seqlen_k or the
//                            clamped seqused_k[batch] and off = used - seqlen_q
//   then s_j = softcap * tanh(s_j / softcap) if softcap > 0, and s_j -= slope[head] * |i + off - j| with ALiBi.
// The score modifiers are read at run time (the window bounds of AttentionParams are set with or without one).
//   m = max_j s_j,  l = sum_j exp(s_j - m),  o = sum_j exp(s_j - m) v_j / l,  lse = m + log(l)
// A row that sees no key gets o = 0 and lse = -inf. O is rounded once to T; LSE is written as float.
#pragma once

#include "attention_params.cuh"
#include "dtypes.cuh"
#include "tile/coords.cuh"

namespace fa_jit {

constexpr int kReferenceThreads = 128;
constexpr int kReferenceMaxHeadDim = 256;

template <typename T, bool kCausal>
__global__ void __launch_bounds__(kReferenceThreads) attention_reference(const __grid_constant__ AttentionParams p) {
    const int row = blockIdx.x * kReferenceThreads + threadIdx.x;
    const int head = blockIdx.y;
    const int batch = blockIdx.z;
    // Packed sequences (read at run time): the sequence's rows in one batch of total rows.
    const bool varlen = p.cu_seqlens_q != nullptr, paged = p.block_table != nullptr;
    const tile::SeqRows seq = varlen
                                  ? (paged ? tile::seq_rows<true, true>(p, batch) : tile::seq_rows<true>(p, batch))
                                  : (paged ? tile::seq_rows<false, true>(p, batch) : tile::seq_rows<false>(p, batch));
    if (row >= seq.seqlen_q) return;
    const int head_kv = head / p.group_size;
    const int d = p.head_dim;
    const long long b = varlen ? 0 : batch;

    const T* q =
        static_cast<const T*>(p.q) + b * p.q_batch_stride + head * p.q_head_stride + (seq.q0 + row) * p.q_row_stride;
    const T* k =
        static_cast<const T*>(p.k) + b * p.k_batch_stride + head_kv * p.k_head_stride + seq.k0 * p.k_row_stride;
    const T* v =
        static_cast<const T*>(p.v) + b * p.v_batch_stride + head_kv * p.v_head_stride + seq.k0 * p.v_row_stride;
    T* o = static_cast<T*>(p.o) + b * p.o_batch_stride + head * p.o_head_stride + (seq.q0 + row) * p.o_row_stride;

    // Keys [first, n_visible) are visible to this row.
    const int used = min(tile::used_keys(p, batch), seq.seqlen_k);
    const long long diagonal = static_cast<long long>(row) + used - seq.seqlen_q;  // i + off
    long long last = kCausal ? diagonal : used - 1LL;
    if (last > diagonal + p.window_right) last = diagonal + p.window_right;
    if (last > used - 1) last = used - 1;
    const long long first_key = diagonal - p.window_left;
    const int first =
        first_key < 0 ? 0 : (first_key > last + 1 ? static_cast<int>(last + 1) : static_cast<int>(first_key));
    const int n_visible = last < 0 ? 0 : static_cast<int>(last + 1);
    const double slope = p.alibi_slopes != nullptr ? static_cast<double>(p.alibi_slopes[head]) : 0.0;

    double q_row[kReferenceMaxHeadDim];
    double acc[kReferenceMaxHeadDim];
    for (int c = 0; c < d; ++c) {
        q_row[c] = static_cast<double>(to_float(q[c]));
        acc[c] = 0.0;
    }
    const auto k_pages = tile::PagedKv<T>::keys(p, head_kv, batch);
    const auto v_pages = tile::PagedKv<T>::values(p, head_kv, batch);
    auto score = [&](int j) {
        const T* k_row = paged ? k_pages.row(j) : k + j * p.k_row_stride;
        double s = 0.0;
        for (int c = 0; c < d; ++c) s += q_row[c] * static_cast<double>(to_float(k_row[c]));
        s *= static_cast<double>(p.scale);
        if (p.softcap > 0.f) s = p.softcap * tanh(s / p.softcap);
        const double distance = static_cast<double>(diagonal - j);
        return s - slope * (distance < 0 ? -distance : distance);
    };

    double m = neg_inf_f64();
    for (int j = first; j < n_visible; ++j) {
        const double s = score(j);
        m = s > m ? s : m;
    }
    double l = 0.0;
    for (int j = first; j < n_visible; ++j) {
        const double pj = exp(score(j) - m);
        l += pj;
        const T* v_row = paged ? v_pages.row(j) : v + j * p.v_row_stride;
        for (int c = 0; c < d; ++c) acc[c] += pj * static_cast<double>(to_float(v_row[c]));
    }

    const double inv_l = l > 0.0 ? 1.0 / l : 0.0;
    for (int c = 0; c < d; ++c) o[c] = from_float<T>(static_cast<float>(acc[c] * inv_l));
    if (p.lse != nullptr) {
        p.lse[varlen ? static_cast<long long>(head) * p.total_q + seq.q0 + row
                     : (static_cast<long long>(batch) * p.heads_q + head) * p.seqlen_q + row] =
            l > 0.0 ? static_cast<float>(m + log(l)) : neg_inf_f32();
    }
}

}  // namespace fa_jit
