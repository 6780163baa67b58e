// Argument packing and the checks made before a launch, without a GPU.
#include "launch/checks.hpp"

#include <catch2/catch.hpp>

using namespace fa_jit;

namespace {
struct Params {
    const float* q;
    int n;
    float scale;
};
}  // namespace

TEST_CASE("arguments are packed at the offsets the kernel's parameter block has", "[launch]") {
    const char c = 'x';
    const double d = 2.5;
    const int i = 7;
    const float* ptr = nullptr;
    const Params params{nullptr, 3, 0.5f};
    auto packed = pack_arguments(c, d, i, ptr, params);
    REQUIRE(packed.count == 5);
    // char at 0; double aligned to 8; int after it; pointer aligned to 8; struct (align 8, size 16) aligned to 8.
    CHECK(packed.layout[0].offset == 0);
    CHECK(packed.layout[0].size == 1);
    CHECK(packed.layout[1].offset == 8);
    CHECK(packed.layout[1].size == 8);
    CHECK(packed.layout[2].offset == 16);
    CHECK(packed.layout[2].size == 4);
    CHECK(packed.layout[3].offset == 24);
    CHECK(packed.layout[3].size == 8);
    CHECK(packed.layout[4].offset == 32);
    CHECK(packed.layout[4].size == sizeof(Params));
    // The pointers cuLaunchKernel copies from are the caller's values.
    CHECK(packed.args[0] == &c);
    CHECK(packed.args[1] == &d);
    CHECK(*static_cast<const int*>(packed.args[2]) == 7);
    CHECK(packed.args[4] == &params);
}

TEST_CASE("a wrong argument count, size or offset is refused, naming the parameter", "[launch]") {
    // The layout of kernel(const float*, float*, float, long long) as cuFuncGetParamInfo reports it.
    const std::vector<KernelParam> expected = {{0, 8}, {8, 8}, {16, 4}, {24, 8}};
    const float* x = nullptr;
    float* y = nullptr;

    auto right = pack_arguments(x, y, 1.0f, 10ll);
    CHECK_NOTHROW(check_kernel_arguments(expected, right.layout, right.count, "k"));

    auto too_few = pack_arguments(x, y, 1.0f);
    CHECK_THROWS_WITH(check_kernel_arguments(expected, too_few.layout, too_few.count, "k"),
                      Catch::Contains("kernel arguments") && Catch::Contains("expected 4"));

    auto wrong_size = pack_arguments(x, y, 1.0f, 10);  // int instead of long long
    try {
        check_kernel_arguments(expected, wrong_size.layout, wrong_size.count, "k");
        FAIL("accepted");
    } catch (const InvalidArgument& e) {
        CHECK(e.argument() == "kernel parameter 3");
        CHECK(e.expected() == "8 bytes");
        CHECK(e.given() == "4 bytes");
    }

    auto wrong_offset = pack_arguments(x, 1.0f, y, 10ll);  // float where a pointer was: the pointer moves to 16
    try {
        check_kernel_arguments(expected, wrong_offset.layout, wrong_offset.count, "k");
        FAIL("accepted");
    } catch (const InvalidArgument& e) {
        CHECK(e.argument() == "kernel parameter 1");  // the size differs first (4 bytes instead of 8)
    }
}

TEST_CASE("after a parameter aligned beyond 16 bytes only the sizes are compared", "[launch]") {
    // kernel(Params240, TensorMap, TensorMap) on an H200: the driver puts the first 64-byte-aligned map at offset
    // 240, where a struct layout from 0 puts it at 256 (the parameter block starts inside a 64-byte line).
    struct Params240 {
        char bytes[240];
    };
    struct alignas(64) Map {
        unsigned long long opaque[16];
    };
    const std::vector<KernelParam> expected = {{0, 240}, {240, 128}, {368, 128}};
    const Params240 p{};
    const Map m{};
    auto packed = pack_arguments(p, m, m);
    CHECK(packed.layout[1].offset == 256);
    CHECK_NOTHROW(check_kernel_arguments(expected, packed.layout, packed.count, "k"));

    auto wrong_size = pack_arguments(p, m, 1ll);
    CHECK_THROWS_WITH(check_kernel_arguments(expected, wrong_size.layout, wrong_size.count, "k"),
                      Catch::Contains("kernel parameter 2") && Catch::Contains("128 bytes"));
}
