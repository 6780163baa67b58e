// The README's JIT example, compiled and run as far as a machine without a GPU allows.
#include <catch2/catch.hpp>
#include <fa_jit/attention.hpp>
#include <fa_jit/jit.hpp>
#include <fa_jit/tuning.hpp>

TEST_CASE("the README example compiles a kernel for an explicit arch", "[readme]") {
    fa_jit::CompileRequest request;
    request.source = fa_jit::kernel_source("sample.cu");
    request.name_expressions = {"fa_jit::sample::scale_add<3>"};
    request.arch = "sm_90a";
    fa_jit::Compiled compiled = fa_jit::compile(request);
    CHECK(compiled.lowered_name("fa_jit::sample::scale_add<3>").rfind("_Z", 0) == 0);

    // The attention example's arguments pass validation (pointers are only checked, not used).
    float storage[4];
    fa_jit::AttentionArgs args;
    args.q = storage; args.k = storage; args.v = storage; args.o = storage + 1;
    args.batch = 4; args.heads_q = 32; args.heads_kv = 8;
    args.seqlen_q = 1000; args.seqlen_k = 1000; args.head_dim = 128;
    args.causal = true;
    args.layout_bshd();
    CHECK_NOTHROW(fa_jit::validate(args));
    CHECK(args.q_strides.row == 32 * 128);
    CHECK(args.k_strides.row == 8 * 128);

    // The score-modifier example (slopes: a device pointer, only checked).
    const float* slopes = storage;
    args.window_left = 4096;
    args.window_right = 0;
    args.softcap = 50.0f;
    args.alibi_slopes = slopes;
    CHECK_NOTHROW(fa_jit::validate(args));
    CHECK(fa_jit::ProblemClass::of(args).mods.bits() == 7);
}
