// Reports what fa_jit does when the CUDA driver cannot be loaded. The test starts it with FA_JIT_CUDA_LIBRARY
// pointing nowhere, so the answer is the same on machines with and without a GPU. Prints one "key=value" per line.
#include "fa_jit/attention.hpp"
#include "fa_jit/fa_jit.h"
#include "fa_jit/jit.hpp"

#include <cstdio>

int main() {
    std::printf("device_count=%d\n", fa_jit::device_count());
    std::printf("driver_version=%d\n", fa_jit::driver_version());
    try {
        fa_jit::current_device();
        std::printf("current_device=ok\n");
    } catch (const fa_jit::CudaError& e) {
        std::printf("current_device.result_name=%s\n", e.result_name().c_str());
        std::printf("current_device.what=%s\n", e.what());
    }
    try {
        fa_jit::DeviceBuffer buffer(64);
        std::printf("alloc=ok\n");
    } catch (const fa_jit::CudaError& e) {
        std::printf("alloc.call=%s\n", e.call().c_str());
    }
    // Compiling needs no driver.
    try {
        fa_jit::CompileRequest r;
        r.source = fa_jit::kernel_source("sample.cu");
        r.name_expressions = {"fa_jit::sample::scale_add<2>"};
        r.arch = "sm_80";
        std::printf("compile_bytes_positive=%d\n", fa_jit::compile(r).binary.size() > 0 ? 1 : 0);
    } catch (const fa_jit::Error& e) {
        std::printf("compile.error=%s\n", e.what());
    }
    // The C ABI on valid arguments: the failure is the driver's, reported as a status and a message.
    float dummy[4];
    fa_jit_attention_args a;
    fa_jit_attention_args_init(&a);
    a.q = a.k = a.v = dummy;
    a.o = dummy + 1;
    a.dtype = FA_JIT_F32;
    a.batch = a.heads_q = a.heads_kv = a.seqlen_q = a.seqlen_k = 1;
    a.head_dim = 1;
    fa_jit_layout_bshd(&a);
    const fa_jit_status status = fa_jit_attention(&a, nullptr);
    std::printf("c_api.status=%d\n", static_cast<int>(status));
    std::printf("c_api.error=%s\n", fa_jit_last_error());
    return 0;
}
