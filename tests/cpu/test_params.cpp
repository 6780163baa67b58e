// The kernel parameters of a call (make_params): what the host decides for the kernels without a GPU.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "attention/params.hpp"
#include "fa_jit/fa_jit.h"

using namespace fa_jit;

namespace {

AttentionArgs softcap_args(DType dtype, float softcap) {
    AttentionArgs a;
    a.dtype = dtype;
    a.batch = 1, a.heads_q = 4, a.heads_kv = 4, a.seqlen_q = 64, a.seqlen_k = 64, a.head_dim = 128;
    a.layout_bshd();
    a.softcap = softcap;
    return a;
}

}  // namespace

TEST_CASE("softcap skips the running max only in bf16, up to kSoftcapNoMaxLimit", "[attention][params]") {
    const float above = std::nextafter(kSoftcapNoMaxLimit, std::numeric_limits<float>::infinity());
    CHECK(make_params(softcap_args(DType::bf16, kSoftcapNoMaxLimit)).softcap_no_max == 1);
    CHECK(make_params(softcap_args(DType::bf16, 30.f)).softcap_no_max == 1);
    CHECK(make_params(softcap_args(DType::bf16, above)).softcap_no_max == 0);
    CHECK(make_params(softcap_args(DType::f16, 30.f)).softcap_no_max == 0);  // fp16 P would underflow
    CHECK(make_params(softcap_args(DType::f32, 30.f)).softcap_no_max == 0);
    CHECK(make_params(softcap_args(DType::bf16, 0.f)).softcap_no_max == 0);  // softcap off
    // The bound the kernels rely on: exp of a capped score, in log2 units, within 2^±(limit * log2 e) < 2^80.
    CHECK(kSoftcapNoMaxLimit * 1.4426950408889634 < 80.0);
}

TEST_CASE("softcap's factors: the raw score becomes tanh(q.k * softcap_scale), exp2 takes softcap * log2 e",
          "[attention][params]") {
    const AttentionParams p = make_params(softcap_args(DType::bf16, 50.f));
    const float scale = 1.0f / std::sqrt(128.0f);
    CHECK(p.scale == Approx(scale));
    CHECK(p.softcap_scale == Approx(scale / 50.f));
    CHECK(p.scale_log2 == Approx(50.f * 1.4426950408889634f));
    CHECK(p.alibi_unit == Approx(1.f / 50.f));
    const AttentionParams plain = make_params(softcap_args(DType::bf16, 0.f));
    CHECK(plain.scale_log2 == Approx(scale * 1.4426950408889634f));
    CHECK(plain.softcap_no_max == 0);
}
