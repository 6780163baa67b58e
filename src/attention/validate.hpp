// Argument validation shared by attention() and the families' preconditions. Every rejected argument is named,
// before anything reaches the GPU; the message is built only when a check fails (validation runs on every call and
// must not allocate).
#pragma once

#include <string>

#include "fa_jit/attention.hpp"

#define FA_JIT_REQUIRE(ok, argument, expected, given)                          \
    do {                                                                       \
        if (!(ok)) throw ::fa_jit::InvalidArgument(argument, expected, given); \
    } while (0)

namespace fa_jit {

std::string pointer_string(const void* p);
std::string strides_string(const Strides& s);

// The checks every kernel family relies on, in two parts. The problem: dtype, sizes, head_dim in [1, 256], heads,
// a finite scale, cu_seqlens_q / cu_seqlens_k together, window bounds >= -1, a finite softcap >= 0, aligned metadata
// pointers. The tensors: non-null pointers aligned to the element size, non-negative strides whose largest addressed
// element stays below 2^48 bytes (64-bit index math cannot overflow and no address wraps), output rows that do not
// overlap, o distinct from the inputs.
void validate_problem(const AttentionArgs& args);
void validate_tensors(const AttentionArgs& args);

}  // namespace fa_jit
