// Parameters of every attention kernel. Shared by the host library (C++17) and the kernels (NVRTC), so it uses only
// built-in types: no CUDA toolkit header, no <cstdint>.
#pragma once

namespace fa_jit {

// Score modifiers: compile-time features of a kernel (the bits of its kMods template argument), each carrying its
// cost only in the kernels that use it. Their values are in AttentionParams.
namespace mods {
constexpr int kWindow = 1;   // sliding window: query i sees keys [i + offset - window_left, i + offset + window_right]
constexpr int kSoftcap = 2;  // logit soft-capping: s = softcap * tanh(scale * q.k / softcap)
constexpr int kAlibi = 4;    // ALiBi: s -= slope[head] * |i + offset - j|
constexpr int kAll = kWindow | kSoftcap | kAlibi;
}  // namespace mods

// Softcap bounds a score to [-softcap, softcap], so p = exp(score) lies in [2^-79.3, 2^79.3] for softcap <= 55: normal
// in fp32 and bf16, and sums of up to 2^31 of them times |v| < 2^17 stay finite. The bf16 kernels skip the running
// max there (AttentionParams::softcap_no_max).
constexpr float kSoftcapNoMaxLimit = 55.f;

// Element strides are counted in elements, not bytes. The last dimension (head_dim) is always contiguous.
// Tensors are indexed [batch][head][row][col]; any batch/head/row strides express both BSHD and BHSD.
struct AttentionParams {
    const void* q;  // [batch, heads_q,  seqlen_q, head_dim]
    const void* k;  // [batch, heads_kv, seqlen_k, head_dim]
    const void* v;  // [batch, heads_kv, seqlen_k, head_dim]
    void* o;        // [batch, heads_q,  seqlen_q, head_dim], same dtype as q
    float* lse;     // [batch, heads_q, seqlen_q] contiguous, natural log; may be null (not written)

    long long q_batch_stride, q_head_stride, q_row_stride;
    long long k_batch_stride, k_head_stride, k_row_stride;
    long long v_batch_stride, v_head_stride, v_row_stride;
    long long o_batch_stride, o_head_stride, o_row_stride;

    int batch;
    int heads_q;
    int heads_kv;
    int group_size;  // heads_q / heads_kv: query head h reads key/value head h / group_size (GQA, MQA)
    int seqlen_q;
    int seqlen_k;
    int head_dim;    // equal to the kernel's compile-time head dim; kept for checks

    float scale;       // softmax scale, usually 1/sqrt(head_dim)
    float scale_log2;  // scale * log2(e): kernels compute exp2(s * scale_log2 - m) instead of exp(s * scale - m)

    // Causal masking, aligned bottom-right: query row i sees key column j iff j <= i + causal_offset,
    // with causal_offset = seqlen_k - seqlen_q. Rows that see no key produce O = 0 and LSE = -inf.
    int causal_offset;

    // Per-sequence KV lengths (decode against a preallocated cache), or null: sequence b uses its first seqused_k[b]
    // keys, clamped to [0, seqlen_k] in the kernel (device data the host never sees is never trusted). With it, the
    // causal offset is seqused_k[b] - seqlen_q (tile::used_keys, tile::causal_offset).
    const int* seqused_k;

    // Split-KV (the decode family): the keys of each (sequence, KV head) are split into num_splits blocks. With more
    // than one, each block writes its normalised partial O and its LSE to the workspace and a combine kernel merges
    // them; with one, the block writes O and LSE itself.
    int num_splits;
    float* partial_lse;  // [num_splits][batch][heads_q][seqlen_q]
    float* partial_o;    // [num_splits][batch][heads_q][seqlen_q][head_dim]

    // Score modifiers (mods::), read only by kernels compiled with them. offset is the causal offset (against the used
    // keys under seqused_k).
    //   window_left / window_right: the sliding window, both >= 0 (an unbounded side holds seqlen_q + seqlen_k, past
    //     every key), so a kernel compares without branching.
    //   softcap_scale = scale / softcap: with kSoftcap a kernel's raw score is tanh(q.k * softcap_scale), and
    //     scale_log2 is softcap * log2 e, so the softmax code is unchanged.
    //   alibi_slopes: device fp32 [heads_q]; alibi_unit converts a bias into raw-score units (1 / scale, or 1 / softcap
    //     with kSoftcap): raw += -slope * alibi_unit * |i + offset - j|.
    //   softcap: the cap itself (0: off), for the reference kernel.
    int window_left, window_right;
    float softcap, softcap_scale;
    int softcap_no_max;  // 1: softcap <= kSoftcapNoMaxLimit and bf16; such kernels take exp2 without a running max
    const float* alibi_slopes;
    float alibi_unit;

    // Variable-length sequences (kVarlen kernels; tile::seq_rows): sequence b's rows [cu_seqlens_q[b], +len) of the
    // packed [total_q, heads, d] q / o and [total_k, heads, d] k / v, clamped into the totals and to seqlen_q /
    // seqlen_k (the bounds); LSE [heads_q][total_q]. Null without.
    const int* cu_seqlens_q;
    const int* cu_seqlens_k;
    int total_q, total_k;

    // Paged KV cache (kPaged kernels; tile/paged_kv.cuh): k / v hold num_pages pages of page_size rows, indexed
    // [page][head][row][col] through the strides above (the batch stride is the page stride), and sequence b's key j
    // is row j % page_size of page block_table[b * pages_per_seq + j / page_size]. Its keys: seqused_k[b] (clamped) or
    // seqlen_k. page_size is a multiple of 16; j / page_size = (umulhi(j, page_magic) + j) >> page_shift. Null without.
    const int* block_table;
    int pages_per_seq, page_size, num_pages;
    unsigned page_magic;
    int page_shift;
    // The f16-ws K / V maps of a row-grouped paged cache (ws_layout::kv_row_groups): 8-row groups from one page to the
    // next when the map numbers the rows of all pages at once; 0 when its 5th dimension is the page (8-row boxes).
    int page_row_groups;
    // The f16-ws block-table map of a ws_layout::paged_table_map cache: the table's 16-bit halves from a 16-byte
    // aligned address table_map_offset halves before p.block_table (the map's base).
    int table_map_offset;
};

}  // namespace fa_jit
