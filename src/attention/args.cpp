// AttentionArgs helpers and validation: every rejected argument is named, before anything reaches the GPU.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "fa_jit/attention.hpp"

namespace fa_jit {

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

namespace {

// The message is built only when the check fails: validation runs on every call and must not allocate.
#define FA_JIT_REQUIRE(ok, argument, expected, given)                \
    do {                                                             \
        if (!(ok)) throw InvalidArgument(argument, expected, given); \
    } while (0)

std::string pointer_string(const void* p) {
    char text[32];
    std::snprintf(text, sizeof text, "%p", p);
    return text;
}

// fp32 kernels read rows with 16-byte vector loads when rows allow it and fall back to narrower loads otherwise;
// what they cannot handle is an element that is not aligned to its own size. The fp16/bf16 kernel copies rows in
// 16-byte chunks (cp.async) only: base pointers 16-byte aligned and strides in whole chunks of 8 elements.
void check_tensor(const char* name, const void* pointer, const Strides& s, DType dtype, bool written, int head_dim) {
    const std::size_t elem = element_size(dtype);
    const bool chunked = dtype != DType::f32;
    const std::size_t align = chunked ? 16 : elem;
    FA_JIT_REQUIRE(pointer != nullptr, name, "a device pointer", "null");
    FA_JIT_REQUIRE(reinterpret_cast<std::uintptr_t>(pointer) % align == 0, name,
                   chunked ? "a 16-byte aligned pointer for fp16/bf16"
                           : "a pointer aligned to the element size (" + std::to_string(elem) + " bytes)",
                   pointer_string(pointer));
    FA_JIT_REQUIRE(s.batch >= 0 && s.head >= 0 && s.row >= 0, std::string(name) + " strides",
                   "non-negative element strides",
                   std::to_string(s.batch) + ", " + std::to_string(s.head) + ", " + std::to_string(s.row));
    FA_JIT_REQUIRE(!chunked || (s.batch % 8 == 0 && s.head % 8 == 0 && s.row % 8 == 0), std::string(name) + " strides",
                   "multiples of 8 elements (16 bytes) for fp16/bf16",
                   std::to_string(s.batch) + ", " + std::to_string(s.head) + ", " + std::to_string(s.row));
    if (written)  // rows of the output must not overlap, or threads would race on them
        FA_JIT_REQUIRE(s.row >= head_dim, std::string(name) + " strides",
                       "a row stride of at least head_dim (" + std::to_string(head_dim) + ") for an output",
                       std::to_string(s.row));
}

}  // namespace

void validate(const AttentionArgs& a) {
    FA_JIT_REQUIRE(a.dtype == DType::f32 || a.dtype == DType::f16 || a.dtype == DType::bf16, "dtype",
                   "fp32, fp16 or bf16", std::to_string(static_cast<int>(a.dtype)));
    const bool half = a.dtype != DType::f32;
    FA_JIT_REQUIRE(a.batch >= 0, "batch", ">= 0", std::to_string(a.batch));
    FA_JIT_REQUIRE(a.heads_q >= 0, "heads_q", ">= 0", std::to_string(a.heads_q));
    FA_JIT_REQUIRE(a.seqlen_q >= 0, "seqlen_q", ">= 0", std::to_string(a.seqlen_q));
    FA_JIT_REQUIRE(a.seqlen_k >= 0, "seqlen_k", ">= 0", std::to_string(a.seqlen_k));
    FA_JIT_REQUIRE(a.head_dim >= 1 && a.head_dim <= 256, "head_dim", "in [1, 256]", std::to_string(a.head_dim));
    // The fp16/bf16 kernel moves rows in 16-byte chunks: 8 elements.
    FA_JIT_REQUIRE(!half || a.head_dim % 8 == 0, "head_dim", "a multiple of 8 for fp16/bf16",
                   std::to_string(a.head_dim));
    FA_JIT_REQUIRE(a.heads_kv >= 1, "heads_kv", ">= 1", std::to_string(a.heads_kv));
    FA_JIT_REQUIRE(a.heads_q % a.heads_kv == 0, "heads_kv", "a divisor of heads_q (" + std::to_string(a.heads_q) + ")",
                   std::to_string(a.heads_kv));
    // The grid is (query tiles, heads_q, batch); y and z are limited to 65535 by the hardware.
    FA_JIT_REQUIRE(a.heads_q <= 65535, "heads_q", "<= 65535", std::to_string(a.heads_q));
    FA_JIT_REQUIRE(a.batch <= 65535, "batch", "<= 65535", std::to_string(a.batch));
    if (a.scale) FA_JIT_REQUIRE(std::isfinite(*a.scale), "scale", "a finite number", std::to_string(*a.scale));
    // The fp16/bf16 kernel takes each row's max before scaling, which only a positive scale commutes with.
    if (a.scale && half) FA_JIT_REQUIRE(*a.scale > 0, "scale", "a positive number for fp16/bf16", std::to_string(*a.scale));
    check_tensor("q", a.q, a.q_strides, a.dtype, false, a.head_dim);
    check_tensor("k", a.k, a.k_strides, a.dtype, false, a.head_dim);
    check_tensor("v", a.v, a.v_strides, a.dtype, false, a.head_dim);
    check_tensor("o", a.o, a.o_strides, a.dtype, true, a.head_dim);
    FA_JIT_REQUIRE(reinterpret_cast<std::uintptr_t>(a.lse) % alignof(float) == 0, "lse",
                   "a 4-byte aligned pointer or null", pointer_string(a.lse));
    FA_JIT_REQUIRE(a.o != a.q && a.o != a.k && a.o != a.v, "o", "a buffer distinct from q, k and v",
                   pointer_string(a.o));
}

}  // namespace fa_jit
