// Compiles a kernel through the installed package's public API; needs no GPU and no CUDA headers.
#include <cstdio>
#include <fa_jit/attention.hpp>
#include <fa_jit/jit.hpp>

int main() {
    fa_jit::CompileRequest request;
    request.source = fa_jit::kernel_source("sample.cu");
    request.name_expressions = {"fa_jit::sample::scale_add<2>"};
    request.arch = "sm_80";
    const fa_jit::Compiled compiled = fa_jit::compile(request);
    std::printf("%s %zu\n", compiled.lowered_name("fa_jit::sample::scale_add<2>").c_str(), compiled.binary.size());

    // The decode fields, validated before anything reaches a GPU; attention_workspace_size is exported.
    fa_jit::AttentionArgs args;
    args.batch = 2, args.heads_q = 8, args.heads_kv = 2, args.seqlen_q = 1, args.seqlen_k = 4096;
    args.head_dim = 999, args.num_splits = 4;
    bool rejected = false;
    try {
        fa_jit::validate(args);
    } catch (const fa_jit::InvalidArgument& e) {
        rejected = e.argument() == "head_dim";
    }
    std::size_t (*volatile workspace_size)(const fa_jit::AttentionArgs&) = &fa_jit::attention_workspace_size;
    return !compiled.binary.empty() && rejected && workspace_size != nullptr ? 0 : 1;
}
