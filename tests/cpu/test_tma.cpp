// The Hopper primitives without a GPU: the TMA sample kernels and the warp-specialized kernel compile for sm_90a
// only, and tensor maps are checked against the driver's rules before any driver call.
#include <catch2/catch.hpp>

#include "fa_jit/errors.hpp"
#include "fa_jit/jit.hpp"
#include "launch/tensor_map.hpp"

using namespace fa_jit;

namespace {

CompileRequest tma_request(const std::string& arch) {
    CompileRequest r;
    r.source = kernel_source("tma_sample.cu");
    r.name_expressions = {"fa_jit::tma_sample::box_roundtrip<64>", "fa_jit::tma_sample::ring_copy<64, 3>"};
    r.arch = arch;
    return r;
}

// A [200][104] 16-bit tensor in [64][64] boxes.
TensorMapDesc matrix_desc() {
    TensorMapDesc d;
    d.base = reinterpret_cast<const void*>(std::uintptr_t{0x10000});
    d.rank = 2;
    d.dims[0] = 104, d.dims[1] = 200;
    d.strides_bytes[1] = 208;
    d.box[0] = 64, d.box[1] = 64;
    return d;
}

void check_refused(const TensorMapDesc& d, const std::string& field) {
    INFO(field);
    CHECK_THROWS_WITH(check_tensor_map(d), Catch::Contains("'" + field + "'"));
}

}  // namespace

TEST_CASE("the TMA sample kernels compile for sm_90a and refuse sm_80", "[compile]") {
    const Compiled c = compile(tma_request("sm_90a"));
    CHECK_FALSE(c.is_ptx);
    CHECK(c.lowered_names.size() == 2);
    CHECK_THROWS_WITH(compile(tma_request("sm_80")), Catch::Contains("needs -arch=sm_90a"));
}

TEST_CASE("the warp-specialized Hopper kernel compiles for sm_90a and refuses sm_80", "[compile]") {
    CompileRequest r;
    r.source = kernel_source("attention_f16_ws.cu");
    r.name_expressions = {"fa_jit::attention_fwd_f16_ws<fa_jit::bf16_t, 128, 128, 2, true>",
                          "fa_jit::attention_fwd_f16_ws<fa_jit::half_t, 128, 64, 3, false>"};
    r.arch = "sm_90a";
    const Compiled c = compile(r);
    CHECK(c.lowered_names.size() == 2);
    r.arch = "sm_80";
    CHECK_THROWS_WITH(compile(r), Catch::Contains("needs -arch=sm_90a"));
}

TEST_CASE("tensor maps are checked against the driver's rules, naming the field", "[launch]") {
    CHECK_NOTHROW(check_tensor_map(matrix_desc()));
    TensorMapDesc d = matrix_desc();
    d.rank = 6;
    check_refused(d, "rank");
    d = matrix_desc();
    d.base = reinterpret_cast<const void*>(std::uintptr_t{0x10008});
    check_refused(d, "base");
    d = matrix_desc();
    d.dims[1] = 0;
    check_refused(d, "dims[1]");
    d = matrix_desc();
    d.dims[0] = (std::uint64_t{1} << 32) + 1;
    check_refused(d, "dims[0]");
    d = matrix_desc();
    d.strides_bytes[1] = 200;  // rows of 100 elements: not a multiple of 16 bytes
    check_refused(d, "strides_bytes[1]");
    d = matrix_desc();
    d.box[1] = 257;
    check_refused(d, "box[1]");
    d = matrix_desc();
    d.box[0] = 12;  // 24 bytes
    check_refused(d, "box[0]");
    d = matrix_desc();
    d.box[0] = 128;  // 256 bytes: wider than the 128-byte swizzle
    check_refused(d, "box[0]");
    d.swizzle_128b = false;
    CHECK_NOTHROW(check_tensor_map(d));
}
