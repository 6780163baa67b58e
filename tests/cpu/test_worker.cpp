// compile() runs NVRTC in fa-jit-nvrtc, a process of its own per compile (src/compile/worker.hpp): the wire format,
// the worker's results against NVRTC in this process, and a kernel's code independent of what this process compiled
// before.
#include "compile/in_process.hpp"
#include "compile/worker.hpp"
#include "fa_jit/jit.hpp"

#include <catch2/catch.hpp>

#include <elf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

using namespace fa_jit;

namespace {

// The cubin's code: every .text.* section by name. (The rest of a cubin carries ids that differ between compiles.)
std::map<std::string, std::string> code_sections(const std::string& cubin) {
    std::map<std::string, std::string> out;
    REQUIRE(cubin.size() > sizeof(Elf64_Ehdr));
    Elf64_Ehdr eh;
    std::memcpy(&eh, cubin.data(), sizeof eh);
    REQUIRE(std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0);
    REQUIRE(eh.e_shoff + std::size_t{eh.e_shnum} * sizeof(Elf64_Shdr) <= cubin.size());
    auto section = [&](int i) {
        Elf64_Shdr sh;
        std::memcpy(&sh, cubin.data() + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof sh);
        return sh;
    };
    const Elf64_Shdr names = section(eh.e_shstrndx);
    for (int i = 0; i < eh.e_shnum; ++i) {
        const Elf64_Shdr sh = section(i);
        const std::string name = cubin.data() + names.sh_offset + sh.sh_name;
        if (name.rfind(".text.", 0) == 0) out[name] = cubin.substr(sh.sh_offset, sh.sh_size);
    }
    return out;
}

CompileRequest sample_request() {
    CompileRequest r;
    r.source = kernel_source("sample.cu");
    r.name_expressions = {"fa_jit::sample::scale_add<3>", "fa_jit::sample::reverse_in_shared"};
    r.options = {"-DFA_JIT_TEST_OPTION=1"};
    r.arch = "sm_80";
    r.family = "sample";
    return r;
}

// A warp-specialized attention kernel whose code NVRTC changes after another program was compiled with -G.
CompileRequest attention_request() {
    CompileRequest r;
    r.source = kernel_source("attention_f16_ws.cu");
    r.name_expressions = {"fa_jit::attention_fwd_f16_ws<fa_jit::half_t, 192, 128, 64, 2, false>"};
    r.arch = "sm_90a";
    return r;
}

}  // namespace

TEST_CASE("worker: requests, results and errors cross the wire unchanged", "[worker]") {
    const CompileRequest r = sample_request();
    const CompileRequest back = worker::decode_request(worker::encode_request(r));
    CHECK(back.source.name == r.source.name);
    CHECK(back.source.text == r.source.text);
    REQUIRE(back.source.headers.size() == r.source.headers.size());
    CHECK(back.source.headers[0].name == r.source.headers[0].name);
    CHECK(back.source.headers[0].text == r.source.headers[0].text);
    CHECK(back.name_expressions == r.name_expressions);
    CHECK(back.options == r.options);
    CHECK(back.arch == r.arch);
    CHECK(back.family == r.family);

    Compiled c;
    c.arch = "sm_90a";
    c.is_ptx = true;
    c.binary = std::string("\x7f" "ELF\0\x01\xff", 7);  // binary bytes, NUL included
    c.log = "warning: something";
    c.lowered_names = {{"a<1>", "_Z1aILi1EEvv"}, {"b", "_Z1bv"}};
    const Compiled cb = worker::decode_reply(worker::encode_compiled(c), "k");
    CHECK(cb.arch == c.arch);
    CHECK(cb.is_ptx);
    CHECK(cb.binary == c.binary);
    CHECK(cb.log == c.log);
    CHECK(cb.lowered_names == c.lowered_names);

    const CompileError e("k.cu f<1>", {"-DX"}, "k.cu(3): error: bad", "compiling k.cu failed");
    try {
        worker::decode_reply(worker::encode_error(e), "k.cu f<1>");
        FAIL("an error reply must throw");
    } catch (const CompileError& got) {
        CHECK(got.kernel() == e.kernel());
        CHECK(got.options() == e.options());
        CHECK(got.log() == e.log());
        CHECK(std::string(got.what()) == e.what());
    }

    // Malformed messages are errors, never reads past the end.
    const std::string request = worker::encode_request(r);
    CHECK_THROWS_AS(worker::decode_request(request.substr(0, request.size() - 1)), Error);
    CHECK_THROWS_AS(worker::decode_request(request + "x"), Error);
    CHECK_THROWS_AS(worker::decode_request("not a request"), Error);
    const std::string reply = worker::encode_compiled(c);
    CHECK_THROWS_AS(worker::decode_reply(reply.substr(0, reply.size() - 3), "k"), CompileError);
    CHECK_THROWS_AS(worker::decode_reply("garbage", "k"), CompileError);
}

TEST_CASE("worker: compile() runs in fa-jit-nvrtc and matches NVRTC in this process", "[worker]") {
    const auto exe = worker::executable();
    REQUIRE(exe);  // the build puts fa-jit-nvrtc beside the library and names it for programs linking the objects
    const CompileRequest r = sample_request();
    const Compiled here = compile_in_process(r);
    const Compiled there = compile(r);
    CHECK(there.arch == "sm_80");
    CHECK_FALSE(there.is_ptx);
    CHECK(there.lowered_names == here.lowered_names);
    CHECK(code_sections(there.binary) == code_sections(here.binary));
    CHECK(code_sections(there.binary).size() == 2);

    // NVRTC's errors come back whole: the kernel, the options and the log.
    CompileRequest bad = r;
    bad.source.text += "\n__global__ void broken() { undeclared_name(); }\n";
    try {
        compile(bad);
        FAIL("a source with an error must not compile");
    } catch (const CompileError& e) {
        CHECK(e.kernel().find("sample.cu") != std::string::npos);
        CHECK(e.log().find("undeclared_name") != std::string::npos);
        CHECK(std::find(e.options().begin(), e.options().end(), "-DFA_JIT_TEST_OPTION=1") != e.options().end());
    }
    CHECK_THROWS_AS(compile(CompileRequest{r.source, r.name_expressions, {}, "sm_1", ""}), InvalidArgument);

    // A worker that cannot start leaves the compile to this process (nullopt); one that dies is a CompileError
    // naming it, never a hang or a crash here.
    CHECK_FALSE(worker::compile(r, "/nonexistent/fa-jit-nvrtc", "").has_value());
    CHECK_THROWS_WITH(worker::compile(r, "/bin/false", ""), Catch::Contains("exited with status 1"));
}

TEST_CASE("worker: a kernel's code does not depend on what this process compiled before", "[worker]") {
    const CompileRequest r = attention_request();
    const auto clean = code_sections(compile(r).binary);
    REQUIRE_FALSE(clean.empty());

    // Another program compiled with -G in this process's NVRTC (what another library sharing it may do).
    CompileRequest other;
    other.source = {"other.cu", "extern \"C\" __global__ void other(float* x) { x[threadIdx.x] *= 3.0f; }", {}};
    other.options = {"-G"};
    other.arch = "sm_90a";
    compile_in_process(other);

    CHECK(code_sections(compile(r).binary) == clean);  // in fa-jit-nvrtc: the same code
    if (code_sections(compile_in_process(r).binary) == clean)
        WARN("this NVRTC no longer carries -G over to the next program; the worker's isolation is not exercised");
}
