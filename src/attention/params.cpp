#include "attention/params.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "attention/page_divisor.hpp"

namespace fa_jit {

AttentionParams make_params(const AttentionArgs& a) {
    AttentionParams p{};
    p.q = a.q;
    p.k = a.k;
    p.v = a.v;
    p.o = a.o;
    p.lse = a.lse;
    p.q_batch_stride = a.q_strides.batch, p.q_head_stride = a.q_strides.head, p.q_row_stride = a.q_strides.row;
    p.k_batch_stride = a.k_strides.batch, p.k_head_stride = a.k_strides.head, p.k_row_stride = a.k_strides.row;
    p.v_batch_stride = a.v_strides.batch, p.v_head_stride = a.v_strides.head, p.v_row_stride = a.v_strides.row;
    p.o_batch_stride = a.o_strides.batch, p.o_head_stride = a.o_strides.head, p.o_row_stride = a.o_strides.row;
    p.batch = a.batch;
    p.heads_q = a.heads_q;
    p.heads_kv = a.heads_kv;
    p.group_size = a.heads_q / a.heads_kv;
    p.seqlen_q = a.seqlen_q;
    p.seqlen_k = a.seqlen_k;
    p.head_dim = a.head_dim;
    p.scale = a.scale ? *a.scale : 1.0f / std::sqrt(static_cast<float>(a.head_dim));
    p.scale_log2 = p.scale * 1.4426950408889634f;  // log2(e)
    p.causal_offset = a.seqlen_k - a.seqlen_q;
    p.seqused_k = a.seqused_k;
    // An unbounded window side reaches past every key: |i + off| < seqlen_q + seqlen_k (validated below 2^30).
    const int unbounded =
        static_cast<int>(std::min<std::int64_t>(std::int64_t{a.seqlen_q} + a.seqlen_k, std::int64_t{1} << 30));
    p.window_left = a.window_left >= 0 ? std::min(a.window_left, unbounded) : unbounded;
    p.window_right = a.window_right >= 0 ? std::min(a.window_right, unbounded) : unbounded;
    p.softcap = a.softcap;
    p.alibi_slopes = a.alibi_slopes;
    p.alibi_unit = 1.0f / p.scale;
    p.cu_seqlens_q = a.cu_seqlens_q, p.cu_seqlens_k = a.cu_seqlens_k;
    p.total_q = a.total_q, p.total_k = a.total_k;
    if (a.block_table) {
        p.block_table = a.block_table;
        p.pages_per_seq = a.pages_per_seq, p.page_size = a.page_size, p.num_pages = a.num_pages;
        const PageDivisor d = page_divisor(a.page_size);
        p.page_magic = d.magic, p.page_shift = d.shift;
    }
    if (a.softcap > 0.f) {
        p.softcap_scale = p.scale / a.softcap;
        p.scale_log2 = a.softcap * 1.4426950408889634f;
        p.alibi_unit = 1.0f / a.softcap;
        p.softcap_no_max = a.dtype == DType::bf16 && a.softcap <= kSoftcapNoMaxLimit ? 1 : 0;
    }
    p.num_splits = 1;
    return p;
}

}  // namespace fa_jit
