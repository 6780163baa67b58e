// compile(): NVRTC through the public API, without a GPU.
#include "fa_jit/jit.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <string>

using namespace fa_jit;

namespace {

CompileRequest sample_request(const std::string& arch) {
    CompileRequest r;
    r.source = kernel_source("sample.cu");
    r.name_expressions = {"fa_jit::sample::scale_add<3>", "fa_jit::sample::reverse_in_shared"};
    r.arch = arch;
    return r;
}

bool is_elf(const std::string& bytes) { return bytes.size() > 4 && bytes.compare(0, 4, "\x7f" "ELF") == 0; }

}  // namespace

TEST_CASE("kernel sources come with the headers they include", "[compile]") {
    const Source s = kernel_source("sample.cu");
    CHECK(s.name == "sample.cu");
    CHECK(s.text.find("scale_add") != std::string::npos);
    REQUIRE(s.headers.size() == 1);
    CHECK(s.headers[0].name == "sample_math.cuh");
    CHECK(s.headers[0].text.find("scaled") != std::string::npos);

    const auto names = kernel_source_names();
    CHECK(std::find(names.begin(), names.end(), "sample.cu") != names.end());
    CHECK(std::find(names.begin(), names.end(), "attention_fp32.cu") != names.end());
    CHECK_THROWS_AS(kernel_source("no_such_kernel.cu"), InvalidArgument);
}

TEST_CASE("the sample template compiles to a cubin for sm_80 and sm_90a, with lowered names", "[compile]") {
    for (const char* arch : {"sm_80", "sm_90a"}) {
        INFO("arch " << arch);
        const Compiled c = compile(sample_request(arch));
        CHECK(c.arch == arch);
        CHECK_FALSE(c.is_ptx);
        CHECK(is_elf(c.binary));
        REQUIRE(c.lowered_names.size() == 2);
        // Itanium mangling of fa_jit::sample::scale_add<3>(const float*, float*, float, long long)
        CHECK(c.lowered_name("fa_jit::sample::scale_add<3>") == "_ZN6fa_jit6sample9scale_addILi3EEEvPKfPffx");
        CHECK(c.lowered_name("fa_jit::sample::reverse_in_shared") == "_ZN6fa_jit6sample17reverse_in_sharedEPKfPfi");
        CHECK_THROWS_AS(c.lowered_name("fa_jit::sample::scale_add<4>"), InvalidArgument);
    }
}

TEST_CASE("a compute_ arch gives PTX for the driver to compile", "[compile]") {
    const Compiled c = compile(sample_request("compute_80"));
    CHECK(c.is_ptx);
    CHECK(c.binary.find(".target sm_80") != std::string::npos);
    CHECK(c.binary.find(c.lowered_name("fa_jit::sample::scale_add<3>")) != std::string::npos);
}

TEST_CASE("a syntax error is a CompileError whose log names the file and line", "[compile]") {
    CompileRequest r;
    r.source = {"broken.cu", "__global__ void k(float* x) {\n  x[0] = 1.0f\n}\n", {}};
    r.name_expressions = {"k"};
    r.options = {"-DEXTRA=1"};
    r.arch = "sm_80";
    try {
        compile(r);
        FAIL("compile() accepted a syntax error");
    } catch (const CompileError& e) {
        CHECK(e.log().find("broken.cu(3)") != std::string::npos);  // the missing ';' is reported at the '}'
        CHECK(e.kernel().find("broken.cu") != std::string::npos);
        CHECK(std::find(e.options().begin(), e.options().end(), "-DEXTRA=1") != e.options().end());
        CHECK(std::find(e.options().begin(), e.options().end(), "-arch=sm_80") != e.options().end());
        CHECK(std::string(e.what()).find("broken.cu(3)") != std::string::npos);
    }
}

TEST_CASE("arch names are checked and normalized", "[compile]") {
    CHECK(parse_arch("sm_80") == "sm_80");
    CHECK(parse_arch("sm_90a") == "sm_90a");
    CHECK(parse_arch("compute_90") == "compute_90");
    CHECK(parse_arch("90a") == "sm_90a");
    for (const char* bad : {"", "sm_", "sm_12", "gfx90a", "sm_9x", "compute_"}) {
        INFO("arch '" << bad << "'");
        try {
            parse_arch(bad);
            FAIL("accepted");
        } catch (const InvalidArgument& e) {
            CHECK(e.argument() == "arch");
        }
    }
}

TEST_CASE("the target arch follows the device and what NVRTC supports", "[compile]") {
    const auto archs = nvrtc_supported_archs();
    REQUIRE_FALSE(archs.empty());
    CHECK(std::find(archs.begin(), archs.end(), 80) != archs.end());
    CHECK(target_arch(8, 0) == "sm_80");
    CHECK(target_arch(9, 0) == "sm_90");
    CHECK(target_arch(9, 0, true) == "sm_90a");
    CHECK(target_arch(8, 6, true) == "sm_86");  // arch-specific features exist from 9.0 on
    // A device newer than NVRTC knows: PTX of the newest supported arch, for the driver to JIT.
    const int newest = *std::max_element(archs.begin(), archs.end());
    CHECK(target_arch(99, 9) == "compute_" + std::to_string(newest));
    CHECK(nvrtc_version() >= 12000);
}

TEST_CASE("FA_JIT_KERNEL_DIR replaces the embedded sources", "[compile]") {
    char dir_template[] = "/tmp/fa_jit_kernels_XXXXXX";
    const std::string dir = mkdtemp(dir_template);
    std::ofstream(dir + "/sample.cu") << "#include \"local.cuh\"\n__global__ void from_dir() { local(); }\n";
    std::ofstream(dir + "/local.cuh") << "__device__ void local() {}\n";
    setenv("FA_JIT_KERNEL_DIR", dir.c_str(), 1);
    const Source s = kernel_source("sample.cu");
    unsetenv("FA_JIT_KERNEL_DIR");
    CHECK(s.text.find("from_dir") != std::string::npos);
    REQUIRE(s.headers.size() == 1);
    CHECK(s.headers[0].name == "local.cuh");
    CHECK(kernel_source("sample.cu").text.find("scale_add") != std::string::npos);  // embedded again
    std::system(("rm -rf " + dir).c_str());
}
