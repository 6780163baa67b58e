// The JIT on a GPU: compile -> load -> launch -> check, argument checks before launch, large shared memory.
#include "fa_jit/jit.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

using namespace fa_jit;

namespace {

CompileRequest sample() {
    CompileRequest r;
    r.source = kernel_source("sample.cu");
    r.name_expressions = {"fa_jit::sample::scale_add<3>", "fa_jit::sample::reverse_in_shared"};
    return r;
}

std::vector<float> random_floats(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

}  // namespace

TEST_CASE("a kernel compiled at run time computes the right result", "[jit]") {
    current_device();
    const Kernel kernel = get_kernel(sample(), "fa_jit::sample::scale_add<3>");
    REQUIRE(kernel);
    CHECK(kernel.params_known());
    CHECK(kernel.params().size() == 4);

    const long long n = 100003;  // not a multiple of the block
    const std::vector<float> x = random_floats(n, 1);
    DeviceBuffer dx(n * 4), dy(n * 4);
    dx.upload(x.data(), n * 4);
    dy.fill_bytes(0xFF);  // NaN: an unwritten element fails
    Stream stream;
    launch(kernel, {{static_cast<unsigned>((n + 255) / 256)}, {256}, 0, stream.get()}, dx.get(), dy.get(), 0.5f, n);
    stream.synchronize();
    std::vector<float> y(n);
    dy.download(y.data(), n * 4);
    std::size_t wrong = 0;  // NVRTC may fuse the multiply-add: allow one rounding's difference
    for (long long i = 0; i < n; ++i)
        if (!(std::abs(y[i] - (3.0f * x[i] + 0.5f)) <= 1e-6f)) ++wrong;
    CHECK(wrong == 0);

    // The second request is served from the in-process table: the same function.
    CHECK(get_kernel(sample(), "fa_jit::sample::scale_add<3>").get() == kernel.get());
}

TEST_CASE("a launch with a wrong argument is refused before it reaches the GPU", "[jit]") {
    current_device();
    const Kernel kernel = get_kernel(sample(), "fa_jit::sample::scale_add<3>");
    DeviceBuffer dx(1024), dy(1024);
    const int n_as_int = 256;  // the kernel takes long long
    try {
        launch(kernel, {{1}, {256}}, dx.get(), dy.get(), 0.5f, n_as_int);
        FAIL("launch accepted an int for a long long parameter");
    } catch (const InvalidArgument& e) {
        CHECK(e.argument() == "kernel parameter 3");
        CHECK(e.expected() == "8 bytes");
        CHECK(e.given() == "4 bytes");
    }
    CHECK_THROWS_AS(launch(kernel, {{1}, {256}}, dx.get(), dy.get(), 0.5f), InvalidArgument);  // too few
    CHECK_THROWS_WITH(launch(kernel, {{1}, {4096}}, dx.get(), dy.get(), 0.5f, 256ll), Catch::Contains("block"));
    CHECK_THROWS_WITH(launch(kernel, {{0}, {256}}, dx.get(), dy.get(), 0.5f, 256ll), Catch::Contains("grid"));
    CHECK_THROWS_WITH(launch(kernel, {{1}, {256}, 1u << 30}, dx.get(), dy.get(), 0.5f, 256ll),
                      Catch::Contains("shared_bytes"));
    synchronize();  // nothing was launched, nothing failed
}

TEST_CASE("more than 48 KB of dynamic shared memory works", "[jit]") {
    current_device();
    const Kernel kernel = get_kernel(sample(), "fa_jit::sample::reverse_in_shared");
    const int n = 40000;  // 160 KB of shared memory (sm_80: 163 KB, sm_90: 227 KB)
    const std::vector<float> x = random_floats(n, 2);
    DeviceBuffer dx(n * 4), dy(n * 4);
    dx.upload(x.data(), n * 4);
    dy.fill_bytes(0xFF);
    launch(kernel, {{1}, {512}, n * 4u}, dx.get(), dy.get(), n);
    synchronize();
    std::vector<float> y(n);
    dy.download(y.data(), n * 4);
    std::size_t wrong = 0;
    for (int i = 0; i < n; ++i)
        if (!(y[i] == x[n - 1 - i])) ++wrong;
    CHECK(wrong == 0);
}
