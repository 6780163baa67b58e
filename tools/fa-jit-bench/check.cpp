#include "check.hpp"

#include <fmt/format.h>

#include <cmath>

namespace fa_jit::bench {

Tolerance tolerance(DType dtype) {
    switch (dtype) {
        case DType::f32: return kToleranceFp32;
        case DType::f16: return kToleranceFp16;
        case DType::bf16: return kToleranceBf16;
    }
    return kToleranceFp32;
}

CheckResult compare(const HostOutput& out, const HostOutput& ref, DType dtype) {
    CheckResult r;
    const Tolerance tol = tolerance(dtype);
    double diff2 = 0, ref2 = 0;
    for (std::size_t i = 0; i < ref.o.size(); ++i) {
        const double o = out.o[i], e = ref.o[i];
        if (!std::isfinite(o)) {
            ++r.non_finite;
            continue;
        }
        const double d = o - e;
        diff2 += d * d;
        ref2 += e * e;
        r.max_abs_error = std::max(r.max_abs_error, std::abs(d));
    }
    r.rel_l2_error = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
    for (std::size_t i = 0; i < ref.lse.size(); ++i) {
        const double l = out.lse[i], e = ref.lse[i];
        if (std::isinf(e) && e < 0) {  // no visible key: -inf expected
            if (!(std::isinf(l) && l < 0)) ++r.non_finite;
            continue;
        }
        if (!std::isfinite(l)) {
            ++r.non_finite;
            continue;
        }
        r.lse_max_error = std::max(r.lse_max_error, std::abs(l - e));
    }

    if (r.non_finite)
        r.why = fmt::format("{} elements of O/LSE not finite (NaN: never written)", r.non_finite);
    else if (r.rel_l2_error > tol.rel_l2)
        r.why = fmt::format("relative L2 error {:.2e} > {:.1e}", r.rel_l2_error, tol.rel_l2);
    else if (r.max_abs_error > tol.max_abs)
        r.why = fmt::format("max abs error {:.2e} > {:.1e}", r.max_abs_error, tol.max_abs);
    else if (r.lse_max_error > tol.max_abs)
        r.why = fmt::format("LSE max error {:.2e} > {:.1e}", r.lse_max_error, tol.max_abs);
    r.ok = r.why.empty();
    return r;
}

}  // namespace fa_jit::bench
