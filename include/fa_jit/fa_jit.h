/* fa_jit's C ABI, for FFI users (Python ctypes, Rust, Julia). Every function returns a status; on failure,
 * fa_jit_last_error() returns the message of the last error on the calling thread. */
#ifndef FA_JIT_H
#define FA_JIT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* What libfa_jit exports (it is built with hidden symbols by default). */
#if defined(__GNUC__) && !defined(FA_JIT_STATIC_DEFINE)
#define FA_JIT_C_API __attribute__((visibility("default")))
#else
#define FA_JIT_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fa_jit_status {
    FA_JIT_SUCCESS = 0,
    FA_JIT_ERROR_INVALID_ARGUMENT = 1, /* an argument was rejected; nothing reached the GPU */
    FA_JIT_ERROR_CUDA = 2,             /* a CUDA driver call failed, or no driver is installed */
    FA_JIT_ERROR_COMPILE = 3,          /* NVRTC rejected a kernel or is missing */
    FA_JIT_ERROR_INTERNAL = 4          /* anything else */
} fa_jit_status;

typedef enum fa_jit_dtype { FA_JIT_F32 = 0, FA_JIT_F16 = 1, FA_JIT_BF16 = 2 } fa_jit_dtype;

/* Element strides (batch, head, row) of a tensor whose last dimension is contiguous. */
typedef struct fa_jit_strides {
    int64_t batch, head, row;
} fa_jit_strides;

/* Extensible: a caller fills the struct with fa_jit_attention_args_init(), which sets struct_size to the size it was
 * compiled with and every field to its default, then sets what it needs. The library reads only the fields that
 * struct_size covers (later fields keep their defaults), so code compiled against an older header keeps working when
 * fields are added at the end. A struct_size short of the first version's fields (0: a struct set with memset) is
 * rejected; one larger than the library's struct (a newer header) is accepted only if the bytes the library does not
 * know are zero, i.e. no feature it lacks is asked for. */
typedef struct fa_jit_attention_args {
    uint32_t struct_size; /* sizeof(fa_jit_attention_args) of the caller's header: set by fa_jit_attention_args_init */
    const void* q;        /* [batch, heads_q,  seqlen_q, head_dim] */
    const void* k;        /* [batch, heads_kv, seqlen_k, head_dim] */
    const void* v;        /* [batch, heads_kv, seqlen_k, head_dim] */
    void* o;              /* [batch, heads_q,  seqlen_q, head_dim] */
    float* lse;           /* optional, may be NULL: [batch, heads_q, seqlen_q] fp32, natural log */
    fa_jit_dtype dtype;
    int32_t batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim;
    fa_jit_strides q_strides, k_strides, v_strides, o_strides;
    float scale;    /* 0 means 1/sqrt(head_dim) */
    int32_t causal; /* nonzero: causal mask aligned bottom-right */
    /* ---- KV cache (decode) ---- */
    const int32_t* seqused_k; /* optional device int32 [batch]: keys each sequence uses (clamped to [0, seqlen_k]) */
    int32_t num_splits;       /* split-KV block count per (sequence, KV head); 0 = choose */
    void* workspace;          /* optional device scratch, >= fa_jit_attention_workspace_size() bytes; NULL = pooled */
    uint64_t workspace_bytes;
    /* ---- Masks and score modifiers (zero: none) ---- */
    int32_t sliding_window;    /* nonzero: query i sees keys i + off - window_left .. i + off + window_right */
    int32_t window_left;       /* with sliding_window: -1 = unbounded on that side (else >= 0) */
    int32_t window_right;      /* off = seqlen_k - seqlen_q; with causal the two masks intersect */
    float softcap;             /* > 0: scores become softcap * tanh(score / softcap); 0 = off */
    const float* alibi_slopes; /* optional device fp32 [heads_q]: score -= slope * |i + off - j| */
    /* ---- Variable-length sequences (packed): both or neither (cu_seqlens_q alone with block_table); see AttentionArgs
     * in attention.hpp ---- */
    const int32_t* cu_seqlens_q; /* device int32 [batch + 1]: sequence b's rows of q / o */
    const int32_t* cu_seqlens_k; /* device int32 [batch + 1]: its rows of k / v */
    int32_t total_q, total_k;    /* rows of the packed tensors; seqlen_q / seqlen_k: the longest sequences */
    /* ---- Paged KV cache (block_table NULL: none); see AttentionArgs in attention.hpp ---- */
    const int32_t* block_table; /* device int32 [batch, pages_per_seq]: key j of sequence b: page [b][j / page_size] */
    int32_t pages_per_seq;      /* entries per row of block_table */
    int32_t page_size;          /* rows per page, a multiple of 16; k / v: [num_pages, page_size, heads_kv, head_dim] */
    int32_t num_pages;          /* pages in k and v; k_strides.batch / v_strides.batch: the page strides */
} fa_jit_attention_args;

/* Sets every field to its default (zeros: no tensors, fp32, default scale, not causal) and struct_size to the size of
 * the struct this header declares. Inline, so the size is the caller's, never the library's: a library with a longer
 * struct cannot write past a caller's shorter one. FFI callers (ctypes, ...) zero their struct and set struct_size to
 * their struct's size themselves. */
static inline void fa_jit_attention_args_init(fa_jit_attention_args* args) {
    if (!args) return;
    memset(args, 0, sizeof *args);
    args->struct_size = (uint32_t)sizeof *args;
}

/* The device workspace bytes fa_jit_attention(args) needs on the current device, in *bytes. */
FA_JIT_C_API fa_jit_status fa_jit_attention_workspace_size(const fa_jit_attention_args* args, uint64_t* bytes);

/* What fa_jit_attention(args) runs on the current device, compiling nothing: the kernel family and tile, written
 * NUL-terminated into `family` and `tile` (e.g. "decode", "16x128w4s2-split"; `capacity` bytes each, 64 hold every
 * name; "" for a problem with no elements), the split-KV blocks per (sequence, KV head) (1 where the family does not
 * split) and the workspace bytes. Outputs may be NULL; a name longer than capacity - 1 is an error naming
 * "capacity". */
FA_JIT_C_API fa_jit_status fa_jit_attention_choice(const fa_jit_attention_args* args, char* family, char* tile,
                                                   size_t capacity, int32_t* num_splits, uint64_t* workspace_bytes);

/* Runs attention on `stream` (a CUstream / cudaStream_t; NULL for the default stream). */
FA_JIT_C_API fa_jit_status fa_jit_attention(const fa_jit_attention_args* args, void* stream);

/* Fills the strides of args for contiguous BSHD ([batch, seqlen, heads, head_dim]) or BHSD tensors. */
FA_JIT_C_API void fa_jit_layout_bshd(fa_jit_attention_args* args);
FA_JIT_C_API void fa_jit_layout_bhsd(fa_jit_attention_args* args);

/* The message of the last failure on this thread ("" if none). Valid until the next fa_jit call on the thread. */
FA_JIT_C_API const char* fa_jit_last_error(void);

/* The library version, e.g. "0.1.0". */
FA_JIT_C_API const char* fa_jit_version(void);

#ifdef __cplusplus
}
#endif

#endif /* FA_JIT_H */
