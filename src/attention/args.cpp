// AttentionArgs helpers and the validation every kernel family relies on.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "attention/families/decode_splits.hpp"
#include "attention/validate.hpp"

namespace fa_jit {

using families::kMaxSplits;

std::string to_string(DType dtype) {
    switch (dtype) {
        case DType::f32:
            return "fp32";
        case DType::f16:
            return "fp16";
        case DType::bf16:
            return "bf16";
    }
    return "unknown";
}

DType parse_dtype(std::string_view name) {
    if (name == "fp32" || name == "f32" || name == "float32" || name == "float") return DType::f32;
    if (name == "fp16" || name == "f16" || name == "float16" || name == "half") return DType::f16;
    if (name == "bf16" || name == "bfloat16") return DType::bf16;
    throw InvalidArgument("dtype", "fp32, fp16 or bf16", std::string(name));
}

std::size_t element_size(DType dtype) {
    return dtype == DType::f32 ? 4 : 2;
}

AttentionArgs& AttentionArgs::layout_bshd() {
    q_strides = o_strides = Strides::bshd(seqlen_q, heads_q, head_dim);
    k_strides = v_strides = Strides::bshd(seqlen_k, heads_kv, head_dim);
    return *this;
}

AttentionArgs& AttentionArgs::layout_bhsd() {
    q_strides = o_strides = Strides::bhsd(seqlen_q, heads_q, head_dim);
    k_strides = v_strides = Strides::bhsd(seqlen_k, heads_kv, head_dim);
    return *this;
}

std::string pointer_string(const void* p) {
    char text[32];
    std::snprintf(text, sizeof text, "%p", p);
    return text;
}

std::string strides_string(const Strides& s) {
    return std::to_string(s.batch) + ", " + std::to_string(s.head) + ", " + std::to_string(s.row);
}

namespace {

// The most a GPU addresses: 48-bit virtual addresses (2^48 bytes).
constexpr std::uint64_t kMaxTensorBytes = std::uint64_t{1} << 48;

// Bytes from a tensor's base to the end of its last addressed element, or nullopt-like UINT64_MAX on overflow.
std::uint64_t extent_bytes(const Strides& s, int batch, int heads, int rows, int head_dim, std::size_t elem) {
    std::uint64_t offset = static_cast<std::uint64_t>(head_dim) - 1, term = 0;
    const std::pair<std::int64_t, int> dims[] = {{s.batch, batch}, {s.head, heads}, {s.row, rows}};
    for (const auto& [stride, count] : dims) {
        if (count <= 1) continue;
        if (__builtin_mul_overflow(static_cast<std::uint64_t>(stride), static_cast<std::uint64_t>(count - 1), &term) ||
            __builtin_add_overflow(offset, term, &offset))
            return std::numeric_limits<std::uint64_t>::max();
    }
    if (__builtin_add_overflow(offset, 1, &offset) || __builtin_mul_overflow(offset, elem, &offset))
        return std::numeric_limits<std::uint64_t>::max();
    return offset;
}

void check_tensor(const char* name, const void* pointer, const Strides& s, const AttentionArgs& a, int batch, int heads,
                  int rows, bool written) {
    const std::size_t elem = element_size(a.dtype);
    FA_JIT_REQUIRE(pointer != nullptr, name, "a device pointer", "null");
    FA_JIT_REQUIRE(reinterpret_cast<std::uintptr_t>(pointer) % elem == 0, name,
                   "a pointer aligned to the element size (" + std::to_string(elem) + " bytes)",
                   pointer_string(pointer));
    FA_JIT_REQUIRE(s.batch >= 0 && s.head >= 0 && s.row >= 0, std::string(name) + " strides",
                   "non-negative element strides", strides_string(s));
    const std::uint64_t bytes = extent_bytes(s, batch, heads, rows, a.head_dim, elem);
    FA_JIT_REQUIRE(bytes <= kMaxTensorBytes &&
                       bytes <= std::numeric_limits<std::uintptr_t>::max() - reinterpret_cast<std::uintptr_t>(pointer),
                   std::string(name) + " strides",
                   "strides whose last element (batch, head, row) lies within 2^48 bytes of the base pointer",
                   strides_string(s));
    if (written)  // rows of the output must not overlap, or threads would race on them
        FA_JIT_REQUIRE(s.row >= a.head_dim, std::string(name) + " strides",
                       "a row stride of at least head_dim (" + std::to_string(a.head_dim) + ") for an output",
                       std::to_string(s.row));
}

}  // namespace

void validate_problem(const AttentionArgs& a) {
    FA_JIT_REQUIRE(a.dtype == DType::f32 || a.dtype == DType::f16 || a.dtype == DType::bf16, "dtype",
                   "fp32, fp16 or bf16", std::to_string(static_cast<int>(a.dtype)));
    FA_JIT_REQUIRE(a.batch >= 0, "batch", ">= 0", std::to_string(a.batch));
    FA_JIT_REQUIRE(a.heads_q >= 0, "heads_q", ">= 0", std::to_string(a.heads_q));
    FA_JIT_REQUIRE(a.seqlen_q >= 0, "seqlen_q", ">= 0", std::to_string(a.seqlen_q));
    FA_JIT_REQUIRE(a.seqlen_k >= 0, "seqlen_k", ">= 0", std::to_string(a.seqlen_k));
    FA_JIT_REQUIRE(a.head_dim >= 1 && a.head_dim <= 256, "head_dim", "in [1, 256]", std::to_string(a.head_dim));
    FA_JIT_REQUIRE(a.heads_kv >= 1, "heads_kv", ">= 1", std::to_string(a.heads_kv));
    FA_JIT_REQUIRE(a.heads_q % a.heads_kv == 0, "heads_kv", "a divisor of heads_q (" + std::to_string(a.heads_q) + ")",
                   std::to_string(a.heads_kv));
    // The grid is (query tiles, heads_q, batch); y and z are limited to 65535 by the hardware.
    FA_JIT_REQUIRE(a.heads_q <= 65535, "heads_q", "<= 65535", std::to_string(a.heads_q));
    FA_JIT_REQUIRE(a.batch <= 65535, "batch", "<= 65535", std::to_string(a.batch));
    if (a.scale) FA_JIT_REQUIRE(std::isfinite(*a.scale), "scale", "a finite number", std::to_string(*a.scale));
    FA_JIT_REQUIRE(a.window_left >= -1, "window_left", ">= -1 (-1: unbounded)", std::to_string(a.window_left));
    FA_JIT_REQUIRE(a.window_right >= -1, "window_right", ">= -1 (-1: unbounded)", std::to_string(a.window_right));
    // Window bounds are compared as i + off +- window in 32-bit arithmetic (off = seqlen_k - seqlen_q).
    if (a.window_left >= 0 || a.window_right >= 0)
        FA_JIT_REQUIRE(static_cast<std::int64_t>(a.seqlen_q) + a.seqlen_k < (std::int64_t{1} << 30), "seqlen_k",
                       "seqlen_q + seqlen_k below 2^30 with a sliding window", std::to_string(a.seqlen_k));
    FA_JIT_REQUIRE(std::isfinite(a.softcap) && a.softcap >= 0.f, "softcap", "a finite number >= 0 (0: off)",
                   std::to_string(a.softcap));
    FA_JIT_REQUIRE(reinterpret_cast<std::uintptr_t>(a.alibi_slopes) % alignof(float) == 0, "alibi_slopes",
                   "a 4-byte aligned device pointer or null", pointer_string(a.alibi_slopes));
    if (a.alibi_slopes && a.softcap == 0.f && a.scale)  // the bias is added in units of the scale
        FA_JIT_REQUIRE(*a.scale != 0.f, "scale", "nonzero with alibi_slopes", std::to_string(*a.scale));
    if (a.block_table) {  // a paged cache: packed queries only; keys from seqused_k or seqlen_k
        FA_JIT_REQUIRE(a.cu_seqlens_k == nullptr, "cu_seqlens_k",
                       "null with block_table (a sequence's keys are seqused_k[b] or seqlen_k)",
                       pointer_string(a.cu_seqlens_k));
    } else {
        FA_JIT_REQUIRE((a.cu_seqlens_q == nullptr) == (a.cu_seqlens_k == nullptr),
                       a.cu_seqlens_q ? "cu_seqlens_k" : "cu_seqlens_q", "set together with the other (or both null)",
                       pointer_string(a.cu_seqlens_q ? a.cu_seqlens_k : a.cu_seqlens_q));
    }
    for (const auto& [name, pointer] : {std::pair{"cu_seqlens_q", a.cu_seqlens_q}, {"cu_seqlens_k", a.cu_seqlens_k}})
        FA_JIT_REQUIRE(reinterpret_cast<std::uintptr_t>(pointer) % alignof(int) == 0, name,
                       "a 4-byte aligned device pointer or null", pointer_string(pointer));
    FA_JIT_REQUIRE(a.total_q >= 0, "total_q", ">= 0", std::to_string(a.total_q));
    FA_JIT_REQUIRE(a.total_k >= 0, "total_k", ">= 0", std::to_string(a.total_k));
    FA_JIT_REQUIRE(reinterpret_cast<std::uintptr_t>(a.block_table) % alignof(int) == 0, "block_table",
                   "a 4-byte aligned device pointer or null", pointer_string(a.block_table));
    if (a.block_table) {
        FA_JIT_REQUIRE(a.page_size > 0 && a.page_size % 16 == 0, "page_size", "a positive multiple of 16",
                       std::to_string(a.page_size));
        FA_JIT_REQUIRE(a.num_pages >= 1, "num_pages", ">= 1 with block_table", std::to_string(a.num_pages));
        FA_JIT_REQUIRE(a.pages_per_seq >= 1, "pages_per_seq", ">= 1 with block_table", std::to_string(a.pages_per_seq));
        FA_JIT_REQUIRE(static_cast<std::int64_t>(a.pages_per_seq) * a.page_size >= a.seqlen_k, "pages_per_seq",
                       ">= seqlen_k / page_size (" + std::to_string(a.seqlen_k) + " / " + std::to_string(a.page_size) +
                           ", rounded up)",
                       std::to_string(a.pages_per_seq));
        // Keys and table entries are counted in 32 bits.
        FA_JIT_REQUIRE(static_cast<std::int64_t>(a.pages_per_seq) * a.page_size < (std::int64_t{1} << 31),
                       "pages_per_seq", "pages_per_seq * page_size below 2^31", std::to_string(a.pages_per_seq));
        FA_JIT_REQUIRE(static_cast<std::int64_t>(a.pages_per_seq) * a.batch < (std::int64_t{1} << 31), "pages_per_seq",
                       "batch * pages_per_seq below 2^31", std::to_string(a.pages_per_seq));
    } else {
        for (const auto& [name, value] :
             {std::pair{"page_size", a.page_size}, {"num_pages", a.num_pages}, {"pages_per_seq", a.pages_per_seq}})
            FA_JIT_REQUIRE(value == 0, name, "0 without block_table", std::to_string(value));
    }
    FA_JIT_REQUIRE(a.num_splits >= 0 && a.num_splits <= kMaxSplits, "num_splits",
                   "in [0, " + std::to_string(kMaxSplits) + "] (0: choose)", std::to_string(a.num_splits));
    FA_JIT_REQUIRE(reinterpret_cast<std::uintptr_t>(a.seqused_k) % alignof(int) == 0, "seqused_k",
                   "a 4-byte aligned device pointer or null", pointer_string(a.seqused_k));
    FA_JIT_REQUIRE(reinterpret_cast<std::uintptr_t>(a.workspace) % 256 == 0, "workspace",
                   "a 256-byte aligned device pointer or null", pointer_string(a.workspace));
    FA_JIT_REQUIRE(a.workspace != nullptr || a.workspace_bytes == 0, "workspace_bytes", "0 when workspace is null",
                   std::to_string(a.workspace_bytes));
}

void validate_tensors(const AttentionArgs& a) {
    // Packed sequences: one "batch" of total rows (the batch strides are unused). A paged cache: num_pages "batches"
    // of page_size rows.
    const bool varlen = a.cu_seqlens_q != nullptr, paged = a.block_table != nullptr;
    const int batch_q = varlen ? 1 : a.batch, rows_q = varlen ? a.total_q : a.seqlen_q;
    const int batch_k = paged ? a.num_pages : varlen ? 1 : a.batch;
    const int rows_k = paged ? a.page_size : varlen ? a.total_k : a.seqlen_k;
    check_tensor("q", a.q, a.q_strides, a, batch_q, a.heads_q, rows_q, false);
    check_tensor("k", a.k, a.k_strides, a, batch_k, a.heads_kv, rows_k, false);
    check_tensor("v", a.v, a.v_strides, a, batch_k, a.heads_kv, rows_k, false);
    check_tensor("o", a.o, a.o_strides, a, batch_q, a.heads_q, rows_q, true);
    FA_JIT_REQUIRE(reinterpret_cast<std::uintptr_t>(a.lse) % alignof(float) == 0, "lse",
                   "a 4-byte aligned pointer or null", pointer_string(a.lse));
    if (a.lse)  // contiguous [batch, heads_q, seqlen_q], or [heads_q, total_q] with packed sequences
        FA_JIT_REQUIRE(extent_bytes(Strides{static_cast<std::int64_t>(a.heads_q) * rows_q, rows_q, 1},
                                    varlen ? 1 : a.batch, a.heads_q, rows_q, 1, sizeof(float)) <= kMaxTensorBytes,
                       "lse", "at most 2^48 bytes (batch * heads_q * seqlen_q floats)", pointer_string(a.lse));
    FA_JIT_REQUIRE(a.o != a.q && a.o != a.k && a.o != a.v, "o", "a buffer distinct from q, k and v",
                   pointer_string(a.o));
}

}  // namespace fa_jit
