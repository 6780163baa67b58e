// The C ABI: exceptions become status codes, and their messages the thread's last error.
//
// fa_jit_attention_args is extensible: the caller's struct_size says how much of the struct it has. The library
// reads only those bytes (never past the caller's struct), and a field they do not cover keeps its default.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <string>

#include "fa_jit/attention.hpp"
#include "fa_jit/fa_jit.h"
#include "fa_jit/tuning.hpp"

namespace {

thread_local std::string last_error;

template <typename Fn>
fa_jit_status guarded(Fn&& fn) noexcept {
    try {
        last_error.clear();
        fn();
        return FA_JIT_SUCCESS;
    } catch (const fa_jit::InvalidArgument& e) {
        last_error = e.what();
        return FA_JIT_ERROR_INVALID_ARGUMENT;
    } catch (const fa_jit::CudaError& e) {
        last_error = e.what();
        return FA_JIT_ERROR_CUDA;
    } catch (const fa_jit::CompileError& e) {
        last_error = e.what();
        return FA_JIT_ERROR_COMPILE;
    } catch (const std::exception& e) {
        last_error = e.what();
        return FA_JIT_ERROR_INTERNAL;
    } catch (...) {
        last_error = "unknown error";
        return FA_JIT_ERROR_INTERNAL;
    }
}

// Version 1 of the struct: the fields up to `causal`, which every header has had. A smaller struct_size is not a
// struct any header describes (typically a struct set to zero with memset instead of fa_jit_attention_args_init).
constexpr std::size_t kArgsV1Size = offsetof(fa_jit_attention_args, seqused_k);
// No header's struct comes near this: a larger struct_size is garbage, and its bytes are not scanned.
constexpr std::size_t kArgsMaxSize = 4096;

// Whether a caller's struct of `size` bytes holds all of the field at `offset` of `bytes` bytes.
constexpr bool covers(std::size_t size, std::size_t offset, std::size_t bytes) {
    return offset + bytes <= size;
}
#define FA_JIT_COVERS(size, field) \
    covers(size, offsetof(fa_jit_attention_args, field), sizeof(static_cast<fa_jit_attention_args*>(nullptr)->field))

// The caller's struct as this library's version of it: checked struct_size, uncovered fields at their defaults.
fa_jit_attention_args read_args(const fa_jit_attention_args* caller) {
    if (!caller) throw fa_jit::InvalidArgument("args", "a pointer to fa_jit_attention_args", "NULL");
    std::uint32_t size32 = 0;
    std::memcpy(&size32, caller, sizeof size32);
    const std::size_t size = size32;
    const std::string init_hint = "call fa_jit_attention_args_init(&args) before setting fields";
    if (size == 0)
        throw fa_jit::InvalidArgument("args.struct_size", "at least " + std::to_string(kArgsV1Size) + ": " + init_hint,
                                      "0 (a struct set to zero with memset is not initialized)");
    if (size < kArgsV1Size)
        throw fa_jit::InvalidArgument("args.struct_size", "at least " + std::to_string(kArgsV1Size) + ": " + init_hint,
                                      std::to_string(size));
    if (size > kArgsMaxSize)
        throw fa_jit::InvalidArgument("args.struct_size",
                                      "the size of fa_jit_attention_args set by fa_jit_attention_args_init (" +
                                          std::to_string(sizeof(fa_jit_attention_args)) + " in this library)",
                                      std::to_string(size) + ", larger than any version of the struct");
    if (size > sizeof(fa_jit_attention_args)) {
        // A caller compiled against a newer header: fields this library does not know must be left at their
        // defaults (zero), or the caller asks for something this library cannot do.
        const auto* bytes = reinterpret_cast<const unsigned char*>(caller);
        for (std::size_t i = sizeof(fa_jit_attention_args); i < size; ++i)
            if (bytes[i] != 0)
                throw fa_jit::InvalidArgument(
                    "args.struct_size",
                    "at most " + std::to_string(sizeof(fa_jit_attention_args)) + " (this library, fa_jit " +
                        FA_JIT_VERSION +
                        ", is older than the header the caller was compiled with, and does not know the fields it "
                        "sets)",
                    std::to_string(size) + ", with a nonzero byte at offset " + std::to_string(i));
    }
    fa_jit_attention_args c;
    fa_jit_attention_args_init(&c);
    const fa_jit_attention_args defaults = c;
    std::memcpy(&c, caller, std::min(size, sizeof c));
    // A field the caller's struct ends inside (or before) keeps its default.
    if (!FA_JIT_COVERS(size, seqused_k)) c.seqused_k = defaults.seqused_k;
    if (!FA_JIT_COVERS(size, num_splits)) c.num_splits = defaults.num_splits;
    if (!FA_JIT_COVERS(size, workspace)) c.workspace = defaults.workspace;
    if (!FA_JIT_COVERS(size, workspace_bytes)) c.workspace_bytes = defaults.workspace_bytes;
    if (!FA_JIT_COVERS(size, sliding_window)) c.sliding_window = defaults.sliding_window;
    if (!FA_JIT_COVERS(size, window_left)) c.window_left = defaults.window_left;
    if (!FA_JIT_COVERS(size, window_right)) c.window_right = defaults.window_right;
    if (!FA_JIT_COVERS(size, softcap)) c.softcap = defaults.softcap;
    if (!FA_JIT_COVERS(size, alibi_slopes)) c.alibi_slopes = defaults.alibi_slopes;
    if (!FA_JIT_COVERS(size, cu_seqlens_q)) c.cu_seqlens_q = defaults.cu_seqlens_q;
    if (!FA_JIT_COVERS(size, cu_seqlens_k)) c.cu_seqlens_k = defaults.cu_seqlens_k;
    if (!FA_JIT_COVERS(size, total_q)) c.total_q = defaults.total_q;
    if (!FA_JIT_COVERS(size, total_k)) c.total_k = defaults.total_k;
    if (!FA_JIT_COVERS(size, block_table)) c.block_table = defaults.block_table;
    if (!FA_JIT_COVERS(size, pages_per_seq)) c.pages_per_seq = defaults.pages_per_seq;
    if (!FA_JIT_COVERS(size, page_size)) c.page_size = defaults.page_size;
    if (!FA_JIT_COVERS(size, num_pages)) c.num_pages = defaults.num_pages;
    c.struct_size = static_cast<std::uint32_t>(sizeof c);
    return c;
}

fa_jit::Strides strides(const fa_jit_strides& s) {
    return {s.batch, s.head, s.row};
}
fa_jit_strides c_strides(const fa_jit::Strides& s) {
    return {s.batch, s.head, s.row};
}

fa_jit::AttentionArgs to_args(const fa_jit_attention_args& c) {
    fa_jit::AttentionArgs a;
    a.q = c.q, a.k = c.k, a.v = c.v, a.o = c.o, a.lse = c.lse;
    switch (c.dtype) {
        case FA_JIT_F32:
            a.dtype = fa_jit::DType::f32;
            break;
        case FA_JIT_F16:
            a.dtype = fa_jit::DType::f16;
            break;
        case FA_JIT_BF16:
            a.dtype = fa_jit::DType::bf16;
            break;
        default:
            throw fa_jit::InvalidArgument("dtype", "FA_JIT_F32, FA_JIT_F16 or FA_JIT_BF16",
                                          std::to_string(static_cast<int>(c.dtype)));
    }
    a.batch = c.batch, a.heads_q = c.heads_q, a.heads_kv = c.heads_kv;
    a.seqlen_q = c.seqlen_q, a.seqlen_k = c.seqlen_k, a.head_dim = c.head_dim;
    a.q_strides = strides(c.q_strides), a.k_strides = strides(c.k_strides);
    a.v_strides = strides(c.v_strides), a.o_strides = strides(c.o_strides);
    if (c.scale != 0.0f) a.scale = c.scale;
    a.causal = c.causal != 0;
    a.seqused_k = c.seqused_k;
    a.num_splits = c.num_splits;
    a.workspace = c.workspace;
    if constexpr (sizeof(std::size_t) < sizeof(std::uint64_t)) {
        if (c.workspace_bytes > std::numeric_limits<std::size_t>::max())
            throw fa_jit::InvalidArgument("workspace_bytes", "a size this process can address",
                                          std::to_string(c.workspace_bytes));
    }
    a.workspace_bytes = static_cast<std::size_t>(c.workspace_bytes);
    if (c.sliding_window != 0) a.window_left = c.window_left, a.window_right = c.window_right;
    a.softcap = c.softcap;
    a.alibi_slopes = c.alibi_slopes;
    a.cu_seqlens_q = c.cu_seqlens_q, a.cu_seqlens_k = c.cu_seqlens_k;
    a.total_q = c.total_q, a.total_k = c.total_k;
    a.block_table = c.block_table;
    a.pages_per_seq = c.pages_per_seq, a.page_size = c.page_size, a.num_pages = c.num_pages;
    return a;
}

// Reads and writes only version-1 fields, which every caller's struct has.
template <typename Layout>
void set_layout(fa_jit_attention_args* c, Layout layout) {
    if (!c) return;
    fa_jit::AttentionArgs a;
    a.heads_q = c->heads_q, a.heads_kv = c->heads_kv, a.seqlen_q = c->seqlen_q, a.seqlen_k = c->seqlen_k;
    a.head_dim = c->head_dim;
    (a.*layout)();
    c->q_strides = c_strides(a.q_strides), c->k_strides = c_strides(a.k_strides);
    c->v_strides = c_strides(a.v_strides), c->o_strides = c_strides(a.o_strides);
}

}  // namespace

extern "C" {

fa_jit_status fa_jit_attention_workspace_size(const fa_jit_attention_args* args, uint64_t* bytes) {
    if (bytes) *bytes = 0;
    return guarded([&] {
        if (!args) throw fa_jit::InvalidArgument("args", "a pointer to fa_jit_attention_args", "NULL");
        if (!bytes) throw fa_jit::InvalidArgument("bytes", "a pointer to a uint64_t", "NULL");
        *bytes = fa_jit::attention_workspace_size(to_args(read_args(args)));
    });
}

fa_jit_status fa_jit_attention_choice(const fa_jit_attention_args* args, char* family, char* tile, size_t capacity,
                                      int32_t* num_splits, uint64_t* workspace_bytes) {
    for (char* out : {family, tile})
        if (out && capacity > 0) out[0] = '\0';
    if (num_splits) *num_splits = 0;
    if (workspace_bytes) *workspace_bytes = 0;
    return guarded([&] {
        const fa_jit::AttentionChoice choice = fa_jit::attention_choice(to_args(read_args(args)));
        const std::string tile_name = choice.tile.empty() ? std::string() : choice.tile.to_string();
        const auto write = [capacity](char* out, const std::string& name) {
            if (!out) return;
            if (name.size() >= capacity)
                throw fa_jit::InvalidArgument("capacity", "at least " + std::to_string(name.size() + 1) + " bytes",
                                              std::to_string(capacity));
            std::memcpy(out, name.c_str(), name.size() + 1);
        };
        write(family, choice.family);
        write(tile, tile_name);
        if (num_splits) *num_splits = choice.num_splits;
        if (workspace_bytes) *workspace_bytes = choice.workspace_bytes;
    });
}

fa_jit_status fa_jit_attention(const fa_jit_attention_args* args, void* stream) {
    return guarded([&] { fa_jit::attention(to_args(read_args(args)), static_cast<CUstream>(stream)); });
}

void fa_jit_layout_bshd(fa_jit_attention_args* args) {
    set_layout(args, &fa_jit::AttentionArgs::layout_bshd);
}
void fa_jit_layout_bhsd(fa_jit_attention_args* args) {
    set_layout(args, &fa_jit::AttentionArgs::layout_bhsd);
}

const char* fa_jit_last_error(void) {
    return last_error.c_str();
}

const char* fa_jit_version(void) {
    return FA_JIT_VERSION;
}

}  // extern "C"
