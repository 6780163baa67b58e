// compile() without a worker: NVRTC in this process. What fa-jit-nvrtc runs, and compile()'s fallback where no worker
// is found (compile/worker.hpp).
#pragma once

#include "fa_jit/jit.hpp"

#include <string>

namespace fa_jit {

Compiled compile_in_process(const CompileRequest& request);

// The kernel a request names, for messages: the source's name and its name expressions.
std::string describe(const CompileRequest& request);

}  // namespace fa_jit
