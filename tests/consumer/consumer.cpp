// Compiles a kernel through the installed package's public API; needs no GPU and no CUDA headers.
#include <fa_jit/attention.hpp>
#include <fa_jit/jit.hpp>

#include <cstdio>

int main() {
    fa_jit::CompileRequest request;
    request.source = fa_jit::kernel_source("sample.cu");
    request.name_expressions = {"fa_jit::sample::scale_add<2>"};
    request.arch = "sm_80";
    const fa_jit::Compiled compiled = fa_jit::compile(request);
    std::printf("%s %zu\n", compiled.lowered_name("fa_jit::sample::scale_add<2>").c_str(), compiled.binary.size());
    return compiled.binary.empty() ? 1 : 0;
}
