// FA_JIT_API marks what libfa_jit exports. The library is built with hidden symbols by default, so only the
// declarations in include/fa_jit/ that carry this macro are part of its ABI; everything in src/ stays internal.
#pragma once

#if defined(FA_JIT_STATIC_DEFINE)
#define FA_JIT_API
#else
#define FA_JIT_API __attribute__((visibility("default")))
#endif
