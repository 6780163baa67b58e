// attention(): FlashAttention forward on device pointers the caller owns, on the caller's stream.
//
//   O = softmax(S) V,   LSE = log(sum(exp(S)))   (per query row, over the keys the row sees)
//   S = scale * Q K^T, then optionally softcap * tanh(S / softcap), then minus the ALiBi bias slope * |i + off - j|;
//   masks (causal, sliding window) hide keys; off = seqlen_k - seqlen_q aligns them bottom-right.
//
// The first call for a new problem class compiles a kernel specialized for it (or loads it from the disk cache);
// later calls only validate and launch. Tile configurations, kernel families and tuning: fa_jit/tuning.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fa_jit/cuda_types.hpp"
#include "fa_jit/errors.hpp"
#include "fa_jit/export.hpp"

namespace fa_jit {

enum class DType { f32, f16, bf16 };
FA_JIT_API std::string to_string(DType dtype);
// "fp32"/"f32"/"float32", "fp16"/"f16"/"float16", "bf16"/"bfloat16"; throws InvalidArgument naming "dtype".
FA_JIT_API DType parse_dtype(std::string_view name);
FA_JIT_API std::size_t element_size(DType dtype);

// Element strides of a [batch, heads, seqlen, head_dim] tensor whose last dimension is contiguous.
struct Strides {
    std::int64_t batch = 0;
    std::int64_t head = 0;
    std::int64_t row = 0;

    // [batch, seqlen, heads, head_dim] contiguous (BSHD, as FlashAttention's API).
    static Strides bshd(std::int64_t seqlen, std::int64_t heads, std::int64_t head_dim) {
        return {seqlen * heads * head_dim, head_dim, heads * head_dim};
    }
    // [batch, heads, seqlen, head_dim] contiguous (BHSD, as PyTorch SDPA's).
    static Strides bhsd(std::int64_t seqlen, std::int64_t heads, std::int64_t head_dim) {
        return {heads * seqlen * head_dim, seqlen * head_dim, head_dim};
    }
};

struct FA_JIT_API AttentionArgs {
    const void* q = nullptr;  // [batch, heads_q,  seqlen_q, head_dim]
    const void* k = nullptr;  // [batch, heads_kv, seqlen_k, head_dim]
    const void* v = nullptr;  // [batch, heads_kv, seqlen_k, head_dim]
    void* o = nullptr;        // [batch, heads_q,  seqlen_q, head_dim], written
    float* lse = nullptr;     // optional: [batch, heads_q, seqlen_q] contiguous fp32, natural log, written

    DType dtype = DType::f32;  // of q, k, v and o
    int batch = 0;
    int heads_q = 0;
    int heads_kv = 0;  // heads_q must be a multiple (GQA; 1 = MQA)
    int seqlen_q = 0;
    int seqlen_k = 0;
    int head_dim = 0;
    Strides q_strides, k_strides, v_strides, o_strides;  // in elements; every addressed element below 2^48 bytes

    std::optional<float> scale;  // default 1 / sqrt(head_dim); fp16/bf16 need it positive
    // Causal mask aligned bottom-right: query i sees key j iff j <= i + seqlen_k - seqlen_q.
    // A query that sees no key gets O = 0 and LSE = -inf.
    bool causal = false;

    // ---- Masks and score modifiers (each compiles into the kernel only when used) ----
    // Sliding window, as FlashAttention-2 defines it: query i sees key j iff i + off - window_left <= j <= i + off +
    // window_right (off as for causal); -1 leaves that side unbounded. With causal the two masks intersect
    // (window_right then only matters if it is 0). Both -1: no window.
    int window_left = -1;
    int window_right = -1;
    // Logit soft-capping (0 = off, else > 0): S = softcap * tanh(scale * q.k / softcap), after the scale.
    float softcap = 0.f;
    // Optional device fp32 [heads_q]: ALiBi slopes; S -= slope[h] * |i + off - j| (after softcap). O matches
    // FlashAttention-2's convention, causal or not; LSE includes the bias (FlashAttention-2's causal LSE differs from
    // it by slope * (i + off) per row).
    const float* alibi_slopes = nullptr;

    // ---- Variable-length sequences (packed, no padding) ----
    // Optional device int32 [batch + 1] prefix sums, both or neither (cu_seqlens_q alone with a paged KV cache):
    // sequence b's queries are rows [cu_seqlens_q[b], cu_seqlens_q[b + 1]) of q and o, its keys rows
    // [cu_seqlens_k[b], cu_seqlens_k[b + 1]) of k and v. The tensors are then [total_q or total_k rows, heads,
    // head_dim] (the batch strides are unused), seqlen_q and seqlen_k are upper bounds of the sequences' lengths
    // (FlashAttention's max_seqlen: the grid), and LSE is [heads_q, total_q]. The host never reads them; kernels clamp
    // each sequence into [0, total) and to the bounds, and a sequence with malformed entries (negative, decreasing,
    // past the total, longer than the bound) attends to nothing: its clamped rows get O = 0, LSE = -inf.
    const int* cu_seqlens_q = nullptr;
    const int* cu_seqlens_k = nullptr;
    int total_q = 0;  // rows of q and o
    int total_k = 0;  // rows of k and v

    // ---- Paged KV cache ----
    // Optional device int32 [batch, pages_per_seq] (row-major): k and v then hold num_pages pages of page_size rows,
    // [num_pages, page_size, heads_kv, head_dim] with k_strides / v_strides as (page, head, row) strides (Strides::
    // batch is the page stride; Strides::bshd(page_size, heads_kv, head_dim) for that layout), and sequence b's key j
    // is row j % page_size of page block_table[b][j / page_size]. A sequence has seqused_k[b] keys (clamped), or
    // seqlen_k without seqused_k; seqlen_k <= pages_per_seq * page_size. Composes with packed queries (cu_seqlens_q
    // with cu_seqlens_k null: chunked prefill against the cache). The host never reads the table; a sequence whose
    // used entries name a page outside [0, num_pages) gets O = 0 and LSE = -inf (FA_JIT_CHECK=1 rejects it instead).
    const int* block_table = nullptr;
    int pages_per_seq = 0;  // entries per row of block_table
    int page_size = 0;      // rows per page: a positive multiple of 16
    int num_pages = 0;      // pages in k and v

    // ---- KV cache (decode) ----
    // Optional device int32 [batch]: sequence b attends to the first seqused_k[b] keys of its seqlen_k (a KV cache
    // preallocated to seqlen_k). Causal alignment uses the used length. The host never reads it; kernels clamp each
    // entry to [0, seqlen_k] (FA_JIT_CHECK=1 rejects a bad entry instead, see README).
    const int* seqused_k = nullptr;
    // Split-KV: key blocks each (sequence, KV head) is split into, for families that split (decode); 0 = choose.
    int num_splits = 0;
    // Optional device scratch of at least attention_workspace_size(*this) bytes, 256-byte aligned, used only during
    // the call (stream-ordered). Null: the library's workspace for (device, stream), grown on demand and reused.
    void* workspace = nullptr;
    std::size_t workspace_bytes = 0;

    // Fills all four stride sets for contiguous BSHD or BHSD tensors.
    AttentionArgs& layout_bshd();
    AttentionArgs& layout_bhsd();
};

// Runs attention on `stream`. Throws InvalidArgument (naming the argument) before anything reaches the GPU,
// CompileError or CudaError. Zero-size problems return at once.
FA_JIT_API void attention(const AttentionArgs& args, CUstream stream);

// Device scratch bytes attention(args, stream) needs on the current device (0 for most prefill problems). A call
// captured in a CUDA graph must not allocate: pass a workspace of this size, or make one call on the stream first.
FA_JIT_API std::size_t attention_workspace_size(const AttentionArgs& args);
// Frees the library's workspace for `stream` in the current context, in stream order; a later call allocates again.
// Call it before destroying a stream. Otherwise the buffer stays until a stream that reuses the handle makes its
// first call outside a capture (the stream id tells them apart); a capture on such a stream still gets the old one.
FA_JIT_API void attention_release_workspace(CUstream stream);

// Plain attention with float64 accumulation, for checking results (slow; same semantics and arguments).
FA_JIT_API void attention_reference(const AttentionArgs& args, CUstream stream);

// Throws InvalidArgument for the first argument attention() would reject on any GPU: the checks common to every
// kernel, then the preconditions of every kernel family that can run this dtype and head dim.
FA_JIT_API void validate(const AttentionArgs& args);

}  // namespace fa_jit
