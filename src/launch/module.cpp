// Loaded code: modules (RAII) and kernels (a function plus what launch() needs to check its arguments).
#include "driver/driver_api.hpp"
#include "fa_jit/jit.hpp"
#include "util/log.hpp"

namespace fa_jit {

std::shared_ptr<const Module> Module::load(const Compiled& compiled) {
    CUmodule m = nullptr;
    // PTX must be NUL-terminated; std::string guarantees it. The driver JITs PTX for the current device.
    FA_JIT_CU(cuModuleLoadData, &m, compiled.binary.c_str());
    return std::shared_ptr<const Module>(new Module(m));
}

Module::~Module() {
    const driver::Api* api = driver::try_api();
    if (api && m_) {
        if (CUresult r = api->cuModuleUnload(m_); r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED)
            log::debug("cuModuleUnload failed with CUresult {}", static_cast<int>(r));
    }
}

namespace {

int function_attribute(CUfunction f, CUfunction_attribute a) {
    int value = 0;
    FA_JIT_CU(cuFuncGetAttribute, &value, a, f);
    return value;
}

}  // namespace

Kernel::Kernel(std::shared_ptr<const Module> module, const std::string& lowered_name)
    : module_(std::move(module)), name_(lowered_name), device_(&current_device()) {
    FA_JIT_CU(cuModuleGetFunction, &f_, module_->get(), lowered_name.c_str());
    attributes_.registers = function_attribute(f_, CU_FUNC_ATTRIBUTE_NUM_REGS);
    attributes_.local_bytes = function_attribute(f_, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
    attributes_.static_shared_bytes = function_attribute(f_, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    attributes_.max_threads_per_block = function_attribute(f_, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);

    // The parameter layout, when the driver can tell (CUDA 12.4+): index by index until it says there are no more.
    if (const auto get_param = driver::api().cuFuncGetParamInfo) {
        for (std::size_t i = 0;; ++i) {
            KernelParam p{};
            const CUresult r = get_param(f_, i, &p.offset, &p.size);
            if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
            if (r != CUDA_SUCCESS) driver::throw_error("cuFuncGetParamInfo", r, __FILE__, __LINE__);
            params_.push_back(p);
        }
        params_known_ = true;
    }

    // Opt in to all the shared memory the device offers, once, so that launches above 48 KB just work.
    const int optin = device_->max_shared_per_block_optin - attributes_.static_shared_bytes;
    if (optin > 48 * 1024) FA_JIT_CU(cuFuncSetAttribute, f_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin);
}

}  // namespace fa_jit
