// Parameters of every attention kernel. Shared by the host library (C++17) and the kernels (NVRTC), so it uses only
// built-in types: no CUDA toolkit header, no <cstdint>.
#pragma once

namespace fa_jit {

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
};

}  // namespace fa_jit
