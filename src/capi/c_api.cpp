// The C ABI: exceptions become status codes, and their messages the thread's last error.
#include "fa_jit/attention.hpp"
#include "fa_jit/fa_jit.h"

#include <exception>
#include <string>

namespace {

thread_local std::string last_error;

template <typename Fn>
fa_jit_status guarded(Fn&& fn) noexcept {
    try {
        last_error.clear();
        fn();
        return FA_JIT_SUCCESS;
    } catch (const fa_jit::InvalidArgument& e) {
        last_error = e.what();
        return FA_JIT_ERROR_INVALID_ARGUMENT;
    } catch (const fa_jit::CudaError& e) {
        last_error = e.what();
        return FA_JIT_ERROR_CUDA;
    } catch (const fa_jit::CompileError& e) {
        last_error = e.what();
        return FA_JIT_ERROR_COMPILE;
    } catch (const std::exception& e) {
        last_error = e.what();
        return FA_JIT_ERROR_INTERNAL;
    } catch (...) {
        last_error = "unknown error";
        return FA_JIT_ERROR_INTERNAL;
    }
}

fa_jit::Strides strides(const fa_jit_strides& s) { return {s.batch, s.head, s.row}; }
fa_jit_strides c_strides(const fa_jit::Strides& s) { return {s.batch, s.head, s.row}; }

fa_jit::AttentionArgs to_args(const fa_jit_attention_args& c) {
    fa_jit::AttentionArgs a;
    a.q = c.q, a.k = c.k, a.v = c.v, a.o = c.o, a.lse = c.lse;
    switch (c.dtype) {
        case FA_JIT_F32: a.dtype = fa_jit::DType::f32; break;
        case FA_JIT_F16: a.dtype = fa_jit::DType::f16; break;
        case FA_JIT_BF16: a.dtype = fa_jit::DType::bf16; break;
        default: throw fa_jit::InvalidArgument("dtype", "FA_JIT_F32, FA_JIT_F16 or FA_JIT_BF16",
                                               std::to_string(static_cast<int>(c.dtype)));
    }
    a.batch = c.batch, a.heads_q = c.heads_q, a.heads_kv = c.heads_kv;
    a.seqlen_q = c.seqlen_q, a.seqlen_k = c.seqlen_k, a.head_dim = c.head_dim;
    a.q_strides = strides(c.q_strides), a.k_strides = strides(c.k_strides);
    a.v_strides = strides(c.v_strides), a.o_strides = strides(c.o_strides);
    if (c.scale != 0.0f) a.scale = c.scale;
    a.causal = c.causal != 0;
    return a;
}

template <typename Layout>
void set_layout(fa_jit_attention_args* c, Layout layout) {
    if (!c) return;
    fa_jit::AttentionArgs a;
    a.heads_q = c->heads_q, a.heads_kv = c->heads_kv, a.seqlen_q = c->seqlen_q, a.seqlen_k = c->seqlen_k;
    a.head_dim = c->head_dim;
    (a.*layout)();
    c->q_strides = c_strides(a.q_strides), c->k_strides = c_strides(a.k_strides);
    c->v_strides = c_strides(a.v_strides), c->o_strides = c_strides(a.o_strides);
}

}  // namespace

extern "C" {

fa_jit_status fa_jit_attention(const fa_jit_attention_args* args, void* stream) {
    return guarded([&] {
        if (!args) throw fa_jit::InvalidArgument("args", "a pointer to fa_jit_attention_args", "NULL");
        fa_jit::attention(to_args(*args), static_cast<CUstream>(stream));
    });
}

void fa_jit_layout_bshd(fa_jit_attention_args* args) { set_layout(args, &fa_jit::AttentionArgs::layout_bshd); }
void fa_jit_layout_bhsd(fa_jit_attention_args* args) { set_layout(args, &fa_jit::AttentionArgs::layout_bhsd); }

const char* fa_jit_last_error(void) { return last_error.c_str(); }

const char* fa_jit_version(void) { return FA_JIT_VERSION; }

}  // extern "C"
