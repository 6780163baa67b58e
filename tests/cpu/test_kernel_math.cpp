// Kernel arithmetic that host and device compute alike (kernel_sources/*.cuh marked FA_JIT_HOST_DEVICE), checked
// here on the CPU against double precision.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "../../kernel_sources/exp2_fma.cuh"
#include "fa_jit/jit.hpp"

namespace {

// Max relative error of exp2_fma<kDegree> against exp2 in double over x = lo, lo + step, ... < hi.
template <int kDegree>
double max_relative_error(float lo, float hi, float step) {
    double worst = 0;
    for (float x = lo; x < hi; x += step) {
        const double exact = std::exp2(static_cast<double>(x));
        worst = std::max(worst, std::abs(fa_jit::exp2_fma<kDegree>(x) / exact - 1.0));
    }
    return worst;
}

}  // namespace

TEST_CASE("exp2_fma: 2^x on the FMA pipe within its fitted error, exact zeros below the range", "[kernel-math]") {
    SECTION("relative error over the softmax's range (results well above the smallest normal float)") {
        // Steps that are not powers of two, so that x lands everywhere inside [-1/2, 1/2] around each integer.
        CHECK(max_relative_error<3>(-125.f, 0.5f, 1.f / 1031) < 7.6e-5);
        CHECK(max_relative_error<4>(-125.f, 0.5f, 1.f / 1031) < 2.8e-6);
        // Dense near 0, where the softmax's largest terms are.
        CHECK(max_relative_error<3>(-4.f, 0.f, 1.f / 65537) < 7.6e-5);
        CHECK(max_relative_error<4>(-4.f, 0.f, 1.f / 65537) < 2.8e-6);
    }
    SECTION("integers are where the polynomial is least exact at f = 0: still within the bound") {
        for (int j = -125; j <= 0; ++j) {
            const double exact = std::exp2(static_cast<double>(j));
            CHECK(std::abs(fa_jit::exp2_fma<3>(static_cast<float>(j)) / exact - 1.0) < 7.6e-5);
            CHECK(std::abs(fa_jit::exp2_fma<4>(static_cast<float>(j)) / exact - 1.0) < 2.8e-6);
        }
    }
    SECTION("masked scores and underflow give 0, like ex2") {
        const float inf = std::numeric_limits<float>::infinity();
        for (float x : {-inf, -1e30f, -1000.f, -128.f, -127.5f, -127.f, -126.6f}) {
            CAPTURE(x);
            CHECK(fa_jit::exp2_fma<3>(x) == 0.f);
            CHECK(fa_jit::exp2_fma<4>(x) == 0.f);
        }
    }
    SECTION("NaN stays NaN, as with ex2, so that a NaN score shows in its row's output") {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        CHECK(std::isnan(fa_jit::exp2_fma<3>(nan)));
        CHECK(std::isnan(fa_jit::exp2_fma<4>(-nan)));
    }
    SECTION("between -127.5 and -125: zero or about the smallest normal float, never negative or NaN") {
        for (float x = -127.5f; x <= -125.f; x += 1.f / 4096) {
            CAPTURE(x);
            const float y3 = fa_jit::exp2_fma<3>(x), y4 = fa_jit::exp2_fma<4>(x);
            CHECK((y3 >= 0.f && y3 <= 4.f * std::numeric_limits<float>::min()));
            CHECK((y4 >= 0.f && y4 <= 4.f * std::numeric_limits<float>::min()));
        }
    }
    SECTION("softcap without a running max: exponents up to softcap * log2 e (kSoftcapNoMaxLimit 55: 79.3)") {
        CHECK(max_relative_error<3>(0.f, 80.f, 1.f / 1031) < 7.6e-5);
        CHECK(max_relative_error<4>(0.f, 80.f, 1.f / 1031) < 2.8e-6);
    }
    SECTION("rounding slop above the row max (x slightly positive) stays accurate") {
        for (float x : {1e-7f, 1e-3f, 0.25f, 0.49f}) {
            CAPTURE(x);
            CHECK(std::abs(fa_jit::exp2_fma<4>(x) / std::exp2(static_cast<double>(x)) - 1.0) < 2.8e-6);
        }
    }
}

TEST_CASE("the device sample of exp2_fma compiles for sm_80 and sm_90a (its GPU test compares the bits)",
          "[kernel-math][compile]") {
    for (const char* arch : {"sm_80", "sm_90a"}) {
        INFO("arch " << arch);
        fa_jit::CompileRequest r;
        r.source = fa_jit::kernel_source("kernel_math_sample.cu");
        r.name_expressions = {"fa_jit::sample::exp2_fma_each<3>", "fa_jit::sample::exp2_fma_each<4>"};
        r.arch = arch;
        const fa_jit::Compiled c = fa_jit::compile(r);
        CHECK_FALSE(c.is_ptx);
        CHECK(c.lowered_names.size() == 2);
    }
}
