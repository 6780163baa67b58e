// Without a CUDA driver, fa_jit loads, compiles, and fails GPU operations with a clear CudaError.
#include "fa_jit/jit.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <map>
#include <string>

namespace {

std::map<std::string, std::string> run_probe() {
    const std::string command = std::string("FA_JIT_CUDA_LIBRARY=/nonexistent/libcuda.so.1 ") + FA_JIT_WORKER_DIR +
                                "/driver_probe 2>/dev/null";
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::map<std::string, std::string> values;
    std::array<char, 4096> line{};
    while (std::fgets(line.data(), line.size(), pipe)) {
        std::string text(line.data());
        if (!text.empty() && text.back() == '\n') text.pop_back();
        const auto eq = text.find('=');
        if (eq != std::string::npos) values[text.substr(0, eq)] = text.substr(eq + 1);
    }
    REQUIRE(pclose(pipe) == 0);
    return values;
}

}  // namespace

TEST_CASE("with no driver, GPU operations fail with a CudaError that says so", "[driver]") {
    auto v = run_probe();
    CHECK(v["device_count"] == "0");
    CHECK(v["driver_version"] == "0");
    CHECK(v["current_device.result_name"] == "CUDA_ERROR_NO_DRIVER");
    CHECK_THAT(v["current_device.what"], Catch::Contains("no CUDA driver: libcuda.so.1 not found"));
    CHECK(v["alloc.call"] == "dlopen");
    CHECK(v["compile_bytes_positive"] == "1");  // NVRTC needs no driver
    CHECK(v["c_api.status"] == "2");            // FA_JIT_ERROR_CUDA
    CHECK_THAT(v["c_api.error"], Catch::Contains("no CUDA driver"));
}

TEST_CASE("an unknown FA_JIT_LOG level warns once and falls back to warn", "[driver][log]") {
    const std::string command = std::string("FA_JIT_LOG=chatty FA_JIT_CUDA_LIBRARY=/nonexistent/libcuda.so.1 ") +
                                FA_JIT_WORKER_DIR + "/driver_probe 2>&1 >/dev/null";
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string err;
    std::array<char, 4096> chunk{};
    while (std::fgets(chunk.data(), chunk.size(), pipe)) err += chunk.data();
    REQUIRE(pclose(pipe) == 0);
    INFO(err);
    const std::string warning = "FA_JIT_LOG=chatty is not a level (off, warn, info, debug); using warn";
    const std::size_t first = err.find(warning);
    CHECK(first != std::string::npos);
    CHECK(err.find(warning, first + 1) == std::string::npos);
}
