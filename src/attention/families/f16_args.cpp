#include "attention/families/f16_args.hpp"

#include <cstdint>
#include <string>

#include "attention/validate.hpp"

namespace fa_jit::families {
namespace {

void check_chunked(const char* name, const void* pointer, const Strides& s) {
    FA_JIT_REQUIRE(reinterpret_cast<std::uintptr_t>(pointer) % 16 == 0, name, "a 16-byte aligned pointer for fp16/bf16",
                   pointer_string(pointer));
    FA_JIT_REQUIRE(s.batch % 8 == 0 && s.head % 8 == 0 && s.row % 8 == 0, std::string(name) + " strides",
                   "multiples of 8 elements (16 bytes) for fp16/bf16", strides_string(s));
}

}  // namespace

void check_f16_args(const AttentionArgs& a) {
    FA_JIT_REQUIRE(a.head_dim % 8 == 0, "head_dim", "a multiple of 8 for fp16/bf16", std::to_string(a.head_dim));
    check_chunked("q", a.q, a.q_strides);
    check_chunked("k", a.k, a.k_strides);
    check_chunked("v", a.v, a.v_strides);
    check_chunked("o", a.o, a.o_strides);
    if (a.scale) FA_JIT_REQUIRE(*a.scale > 0, "scale", "a positive number for fp16/bf16", std::to_string(*a.scale));
}

}  // namespace fa_jit::families
