// The kernels' host-device arithmetic on a GPU: the device computes the bits the host computes (the CPU tests in
// tests/cpu/test_kernel_math.cpp check the host's against double precision).
#include "fa_jit/jit.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../../kernel_sources/exp2_fma.cuh"

using namespace fa_jit;

namespace {

// Every softmax exponent the kernels can meet, densely (steps that are not powers of two), then the edges.
std::vector<float> exponents() {
    std::vector<float> x;
    for (float v = -130.f; v < 100.f; v += 1.f / 257) x.push_back(v);
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    for (float v : {-inf, inf, nan, -nan, -1e30f, -127.5f, -127.f, -126.5f, -126.f, -0.f, 0.f, 0.5f, -0.5f})
        x.push_back(v);
    return x;
}

template <int kDegree>
void check_degree() {
    INFO("degree " << kDegree);
    CompileRequest r;
    r.source = kernel_source("kernel_math_sample.cu");
    const std::string name = "fa_jit::sample::exp2_fma_each<" + std::to_string(kDegree) + ">";
    r.name_expressions = {name};
    const Kernel kernel = get_kernel(r, name);
    REQUIRE(kernel);
    const std::vector<float> x = exponents();
    const long long n = static_cast<long long>(x.size());
    DeviceBuffer dx(n * 4), dy(n * 4);
    dx.upload(x.data(), n * 4);
    dy.fill_bytes(0xFF);  // NaN: an unwritten element fails
    Stream stream;
    launch(kernel, {{static_cast<unsigned>((n + 255) / 256)}, {256}, 0, stream.get()}, dx.get(), dy.get(), n);
    stream.synchronize();
    std::vector<float> y(n);
    dy.download(y.data(), n * 4);
    std::size_t differ = 0;
    for (long long i = 0; i < n; ++i) {
        const float host = exp2_fma<kDegree>(x[i]);
        const bool same = std::isnan(host) ? std::isnan(y[i]) : std::memcmp(&host, &y[i], 4) == 0;
        // Results below the smallest normal float may be flushed to zero on the device.
        const bool flushed = y[i] == 0.f && std::abs(host) < std::numeric_limits<float>::min();
        if (!same && !flushed) {
            if (differ++ < 5) UNSCOPED_INFO("x " << x[i] << ": device " << y[i] << ", host " << host);
        }
    }
    CHECK(differ == 0);
    // NaN stays NaN on the device too (ex2's behaviour; a NaN score must show in its row's output).
    for (long long i = 0; i < n; ++i)
        if (std::isnan(x[i])) CHECK(std::isnan(y[i]));
}

}  // namespace

TEST_CASE("exp2_fma computes on the device the bits it computes on the host", "[jit][kernel-math]") {
    current_device();
    check_degree<3>();
    check_degree<4>();
}
