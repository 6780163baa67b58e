// compile() without a worker: NVRTC in this process. What fa-jit-nvrtc runs, and compile()'s fallback where no worker
// is found (compile/worker.hpp).
#pragma once

#include "fa_jit/jit.hpp"

namespace fa_jit {

Compiled compile_in_process(const CompileRequest& request);

}  // namespace fa_jit
