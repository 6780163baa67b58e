// Correctness of one config's output against attention_reference(), before any timing is trusted.
#pragma once

#include "workspace.hpp"

#include "fa_jit/attention.hpp"

#include <string>

namespace fa_jit::bench {

// Accepted error, by element type: relative L2 error ||o - ref|| / ||ref|| and largest absolute error of O.
// fp32 accumulates like the reference; fp16/bf16 round P and O to 11 / 8 significant bits.
struct Tolerance {
    double rel_l2;
    double max_abs;
};
inline constexpr Tolerance kToleranceFp32{1e-4, 1e-3};
inline constexpr Tolerance kToleranceFp16{2e-3, 1e-2};
inline constexpr Tolerance kToleranceBf16{1.6e-2, 6e-2};
Tolerance tolerance(DType dtype);

struct CheckResult {
    bool ok = false;
    double max_abs_error = 0;  // O
    double rel_l2_error = 0;   // O
    double lse_max_error = 0;  // LSE, absolute (natural log)
    std::size_t non_finite = 0;  // O or LSE elements NaN/inf where the reference is finite (NaN: never written)
    std::string why;             // empty when ok
};

// Compares `out` with `ref`. LSE uses the absolute tolerance of O; a row the reference gives LSE = -inf (no key
// visible) must be -inf too.
CheckResult compare(const HostOutput& out, const HostOutput& ref, DType dtype);

}  // namespace fa_jit::bench
